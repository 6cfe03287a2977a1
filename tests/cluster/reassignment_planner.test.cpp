#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "cluster/reassignment_planner.hpp"
#include "cluster/reassignment_request.hpp"

using namespace moonmq::cluster;
using json = nlohmann::json;

namespace {

std::vector<broker_id> brokers(std::initializer_list<const char*> ids) {
  std::vector<broker_id> out;
  for (auto* id : ids)
    out.emplace_back(id);
  return out;
}

std::vector<partition_owner> topic_on(const std::string& topic, std::initializer_list<const char*> owners) {
  std::vector<partition_owner> out;
  int32_t p = 0;
  for (auto* o : owners)
    out.push_back({{topic, p++}, broker_id{o}});
  return out;
}

/// Owner of every partition after applying `plan` to `current`.
std::map<topic_partition, broker_id> apply_plan(const std::vector<partition_owner>& current,
                                           const std::vector<planned_move>& plan) {
  std::map<topic_partition, broker_id> out;
  for (const auto& p : current)
    out[p.tp] = p.owner;
  for (const auto& m : plan) {
    REQUIRE(out.at(m.tp) == m.from);
    REQUIRE(m.from != m.to);
    out[m.tp] = m.to;
  }
  return out;
}

/// Partitions of `topic` per broker after the plan.
std::map<broker_id, int> counts(const std::map<topic_partition, broker_id>& owners, const std::string& topic = {}) {
  std::map<broker_id, int> out;
  for (const auto& [tp, b] : owners) {
    if (topic.empty() || tp.topic == topic)
      ++out[b];
  }
  return out;
}

}  // namespace

TEST_CASE("a balanced topic needs no move", "[cluster][planner]") {
  auto cur = topic_on("orders", {"b1", "b2", "b3", "b1", "b2", "b3"});
  auto plan = generate_plan(cur, brokers({"b1", "b2", "b3"}));
  REQUIRE(plan.ok());
  CHECK(plan->empty());
  CHECK(plan_to_json(*plan) == json{{"version", 1}, {"partitions", json::array()}});
}

TEST_CASE("everything on one broker spreads evenly with the fewest moves", "[cluster][planner]") {
  auto cur = topic_on("orders", {"b1", "b1", "b1", "b1", "b1", "b1"});
  auto plan = generate_plan(cur, brokers({"b1", "b2", "b3"}));
  REQUIRE(plan.ok());
  CHECK(plan->size() == 4);  // b1 keeps its quota of 2
  auto after = counts(apply_plan(cur, *plan));
  CHECK(after == std::map<broker_id, int>{{broker_id{"b1"}, 2}, {broker_id{"b2"}, 2}, {broker_id{"b3"}, 2}});
  // b1 keeps its lowest partitions; the rest go round-robin.
  CHECK(plan->at(0) == planned_move{{"orders", 2}, broker_id{"b1"}, broker_id{"b2"}});
  CHECK(plan->at(1) == planned_move{{"orders", 3}, broker_id{"b1"}, broker_id{"b3"}});
}

TEST_CASE("the larger quotas go to the brokers that already hold the most", "[cluster][planner]") {
  // 7 partitions over 3 brokers: quotas 3,2,2. b1 holds 4, b2 holds 3, b3 holds 0.
  auto cur = topic_on("orders", {"b1", "b1", "b1", "b1", "b2", "b2", "b2"});
  auto plan = generate_plan(cur, brokers({"b1", "b2", "b3"}));
  REQUIRE(plan.ok());
  // Best possible: b1 keeps 3 (moves 1), b2 keeps 2 (moves 1): 2 moves.
  CHECK(plan->size() == 2);
  auto after = counts(apply_plan(cur, *plan));
  CHECK(after.at(broker_id{"b3"}) == 2);
  CHECK(after.at(broker_id{"b1"}) == 3);
  CHECK(after.at(broker_id{"b2"}) == 2);
}

TEST_CASE("partitions on brokers outside the target set always move", "[cluster][planner]") {
  auto cur = topic_on("orders", {"b1", "b4", "b4", "b2"});
  auto plan = generate_plan(cur, brokers({"b1", "b2"}));
  REQUIRE(plan.ok());
  CHECK(plan->size() == 2);
  for (const auto& m : *plan)
    CHECK(m.from == broker_id{"b4"});
  auto after = counts(apply_plan(cur, *plan));
  CHECK(after == std::map<broker_id, int>{{broker_id{"b1"}, 2}, {broker_id{"b2"}, 2}});
}

TEST_CASE("growing the cluster moves only onto the new broker", "[cluster][planner]") {
  std::vector<partition_owner> cur;
  for (int i = 0; i < 12; ++i)
    cur.push_back({{"orders", i}, broker_id{i % 2 ? "b2" : "b1"}});
  auto plan = generate_plan(cur, brokers({"b1", "b2", "b3", "b4"}));
  REQUIRE(plan.ok());
  CHECK(plan->size() == 6);  // 12 over 4 = 3 each: b1 and b2 give 3 each
  auto after = counts(apply_plan(cur, *plan));
  for (const auto& [b, n] : after)
    CHECK(n == 3);
}

TEST_CASE("every topic is balanced on its own and the totals stay even", "[cluster][planner]") {
  auto cur = topic_on("a", {"b1", "b1", "b1", "b1", "b1"});
  auto b = topic_on("b", {"b1", "b1", "b1", "b1", "b1"});
  cur.insert(cur.end(), b.begin(), b.end());
  auto plan = generate_plan(cur, brokers({"b1", "b2", "b3"}));
  REQUIRE(plan.ok());
  auto after = apply_plan(cur, *plan);
  for (const char* t : {"a", "b"}) {
    auto c = counts(after, t);
    int lo = 1 << 30, hi = 0;
    for (const auto& [id, n] : c) {
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    INFO(t);
    CHECK(c.size() == 3);
    CHECK(hi - lo <= 1);
  }
  auto total = counts(after);
  int lo = 1 << 30, hi = 0;
  for (const auto& [id, n] : total) {
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  }
  CHECK(hi - lo <= 1);  // 10 over 3: 4,3,3
}

TEST_CASE("the plan is deterministic and in the version-1 request format", "[cluster][planner]") {
  auto cur = topic_on("orders", {"b1", "b1", "b1"});
  auto p1 = generate_plan(cur, brokers({"b1", "b2", "b3"}));
  auto p2 = generate_plan(cur, brokers({"b1", "b2", "b3"}));
  REQUIRE(p1.ok());
  REQUIRE(p2.ok());
  CHECK(*p1 == *p2);
  auto j = plan_to_json(*p1);
  CHECK(j == json::parse(R"({"version":1,"partitions":[
      {"topic":"orders","partition":1,"replicas":["b2"]},
      {"topic":"orders","partition":2,"replicas":["b3"]}]})"));
  // The request parser reads what the planner writes.
  cluster_view v;
  v.brokers = {{broker_id{"b1"}, true}, {broker_id{"b2"}, true}, {broker_id{"b3"}, true}};
  v.owner_of = [](const topic_partition&) -> std::optional<broker_id> { return broker_id{"b1"}; };
  auto req = parse_reassignment_request(j.dump(), v);
  REQUIRE(req.ok());
  CHECK(req->accepted.size() == 2);
  CHECK(req->rejected.empty());
}

TEST_CASE("bad planner input is refused", "[cluster][planner]") {
  auto cur = topic_on("orders", {"b1"});
  CHECK(generate_plan(cur, {}).err().code == errc::invalid_argument);
  CHECK(generate_plan(cur, brokers({"b1", "b1"})).err().code == errc::invalid_argument);
  CHECK(generate_plan(cur, brokers({"b 1"})).err().code == errc::invalid_argument);
  auto twice = cur;
  twice.push_back(cur[0]);
  CHECK(generate_plan(twice, brokers({"b1"})).err().code == errc::invalid_argument);
  CHECK(generate_plan(topic_on("__x", {"b1"}), brokers({"b1", "b2"})).err().code == errc::invalid_argument);
  CHECK(generate_plan({{{"o", -1}, broker_id{"b1"}}}, brokers({"b1"})).err().code == errc::invalid_argument);
}

// TOPIC_SPREAD (goals/topic_spread_goal.cpp) and the snapshot's per-topic
// counts it reads: docs/balancer.md "Topic spread".

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "goals/builtin_goals.hpp"
#include "goals/detector.hpp"
#include "goals/snapshot.hpp"
#include "tests/goals/model_builder.hpp"

using namespace moonmq::goals;
using moonmq::test::broker;
using moonmq::test::replica;
using moonmq::test::applied;
using moonmq::test::report_of;

namespace {

constexpr double kMiB = 1048576.0;

/// Partitions of `topic` per broker id in `m`.
std::map<std::string, int> spread_of(const cluster_model& m, const std::string& topic) {
  std::map<std::string, int> out;
  for (const auto& b : m.brokers) out[b.id] = 0;
  for (const auto& r : m.replicas)
    if (r.topic == topic) ++out[r.owner];
  return out;
}

/// Four brokers with 8 partitions each: topic "hot" all on b1, topic "cold"
/// 8 on each of b2..b4. Every partition carries `load` on NW_IN, NW_OUT
/// and DISK, so the distribution goals start in band.
cluster_model hot_topic_on_one_broker(double load) {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3"), broker("b4")};
  for (int p = 0; p < 8; ++p) m.replicas.push_back(replica("hot", p, "b1", load, load, load * 64));
  int p = 0;
  for (const char* b : {"b2", "b3", "b4"})
    for (int i = 0; i < 8; ++i) m.replicas.push_back(replica("cold", p++, b, load, load, load * 64));
  m.goals["TOPIC_SPREAD"].enabled = true;
  m.max_actions = 1000;
  return m;
}

/// Checks that `m` planned with the built-in goals spreads both topics into
/// their bands (hot: mean 2, band [1, 3]; cold: mean 6, band [4, 8]),
/// leaves every goal in band, and that replanning the result moves nothing.
void check_spread(const cluster_model& m) {
  auto p = make_plan(m, moonmq::test::builtin_goals());
  REQUIRE(p.ok());
  INFO(p->summary);
  const goal_report* spread = report_of(p.value(), "TOPIC_SPREAD");
  REQUIRE(spread);
  INFO(spread->explanation);
  CHECK(spread->before.violators.size() == 4);
  CHECK(spread->after.violators.empty());
  CHECK(spread->accepted > 0);
  for (const auto& g : p->goals) CHECK(g.after.violators.empty());
  const cluster_model after = applied(m, p.value());
  for (const auto& [id, n] : spread_of(after, "hot")) {
    CHECK(n >= 1);
    CHECK(n <= 3);
  }
  for (const auto& [id, n] : spread_of(after, "cold")) {
    CHECK(n >= 4);
    CHECK(n <= 8);
  }
  auto again = make_plan(after, moonmq::test::builtin_goals());
  REQUIRE(again.ok());
  CHECK(again->actions.empty());
}

}  // namespace

TEST_CASE("snapshot counts each topic's partitions per broker and on eligible brokers through moves", "[topic_spread]") {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3", false)};
  // "big" has as many partitions as brokers (a count row), "small" fewer (a scan).
  for (int p = 0; p < 4; ++p) m.replicas.push_back(replica("big", p, p < 3 ? "b1" : "b3"));
  m.replicas.push_back(replica("small", 0, "b2"));
  m.replicas.push_back(replica("small", 1, "b2"));
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  const std::uint32_t big = s->topic_id(replica_index{0}), small = s->topic_id(replica_index{4});
  REQUIRE(s->topic_count() == 2);
  CHECK(s->topic_name(big) == "big");
  CHECK(s->topic_replicas_end(small) - s->topic_replicas_begin(small) == 2);
  CHECK(s->topic_partitions_on(big, broker_index{0}) == 3);
  CHECK(s->topic_partitions_on(big, broker_index{2}) == 1);
  CHECK(s->topic_partitions_on(small, broker_index{1}) == 2);
  CHECK(s->topic_eligible_partitions(big) == 3);  // b3 is dead
  const action off_dead{action_type::move, replica_index{3}, broker_index{2}, broker_index{1}, {}};
  REQUIRE(s->apply(off_dead));
  CHECK(s->topic_partitions_on(big, broker_index{1}) == 1);
  CHECK(s->topic_partitions_on(big, broker_index{2}) == 0);
  CHECK(s->topic_eligible_partitions(big) == 4);
  const action swap{action_type::swap, replica_index{0}, broker_index{0}, broker_index{1}, replica_index{4}};
  REQUIRE(s->apply(swap));
  CHECK(s->topic_partitions_on(big, broker_index{0}) == 2);
  CHECK(s->topic_partitions_on(small, broker_index{0}) == 1);
  REQUIRE(s->undo(swap));
  REQUIRE(s->undo(off_dead));
  CHECK(s->topic_partitions_on(big, broker_index{0}) == 3);
  CHECK(s->topic_partitions_on(small, broker_index{1}) == 2);
  CHECK(s->topic_eligible_partitions(big) == 3);
}

TEST_CASE("TOPIC_SPREAD refuses a move that takes a topic further out of its band and scores spreading moves positive",
          "[topic_spread]") {
  const auto g = make_topic_spread_goal();
  cluster_model m = hot_topic_on_one_broker(0.0);
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  const goal_config cfg = g->default_config();
  const auto st = g->stats(s.value(), cfg);
  CHECK_FALSE(st.idle);
  CHECK(st.violators.size() == 4);          // b1 above hot's band [1, 3], below cold's [4, 8]; b2..b4 below hot's
  CHECK(st.cost == Approx(5 + 4 + 1 + 1 + 1));
  const replica_index hot0{0}, cold0{8};
  const action spread{action_type::move, hot0, broker_index{0}, broker_index{1}, {}};
  const action back{action_type::move, cold0, broker_index{1}, broker_index{2}, {}};  // cold: b2 8 → 7, b3 8 → 9
  CHECK(g->check(s.value(), cfg, spread).accept);
  CHECK(g->score(s.value(), cfg, spread) > 0.0);
  const verdict v = g->check(s.value(), cfg, back);
  CHECK_FALSE(v.accept);
  CHECK(v.reason.find("cold") != std::string::npos);
  CHECK(g->score(s.value(), cfg, back) < 0.0);
  // A SWAP of two partitions of one topic changes no count.
  const action same{action_type::swap, replica_index{8}, broker_index{1}, broker_index{2}, replica_index{16}};
  CHECK(g->check(s.value(), cfg, same).accept);
  CHECK(g->score(s.value(), cfg, same) == 0.0);
}

TEST_CASE("TOPIC_SPREAD spreads a hot topic held by one broker", "[topic_spread]") {
  SECTION("idle loads: only the topic counts matter") { check_spread(hot_topic_on_one_broker(0.0)); }
  SECTION("every partition at 2 MiB/s: the distribution goals stay in band") {
    check_spread(hot_topic_on_one_broker(2 * kMiB));
  }
}

TEST_CASE("TOPIC_SPREAD moves nothing when every topic is already spread", "[topic_spread]") {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3")};
  for (int p = 0; p < 9; ++p) m.replicas.push_back(replica("t", p, "b" + std::to_string(1 + p % 3), kMiB));
  // Two partitions on one of three brokers: band [0, 1] holds them spread over two.
  m.replicas.push_back(replica("u", 0, "b1"));
  m.replicas.push_back(replica("u", 1, "b2"));
  m.goals["TOPIC_SPREAD"].enabled = true;
  auto p = make_plan(m, moonmq::test::builtin_goals());
  REQUIRE(p.ok());
  CHECK(p->actions.empty());
  const goal_report* spread = report_of(p.value(), "TOPIC_SPREAD");
  REQUIRE(spread);
  CHECK_FALSE(spread->before.idle);
  CHECK(spread->before.violators.empty());
  CHECK(spread->explanation.find("balanced") == 0);
}

TEST_CASE("TOPIC_SPREAD is off by default and ranks below the distribution goals", "[topic_spread]") {
  const auto g = make_topic_spread_goal();
  CHECK(g->name() == "TOPIC_SPREAD");
  CHECK_FALSE(g->hard());
  CHECK_FALSE(g->default_config().enabled);
  for (resource r : {resource::nw_in, resource::nw_out, resource::disk, resource::partition_count})
    CHECK(g->default_config().priority < default_distribution_config(r).priority);
  cluster_model m = hot_topic_on_one_broker(0.0);
  m.goals.erase("TOPIC_SPREAD");
  auto p = make_plan(m, moonmq::test::builtin_goals());
  REQUIRE(p.ok());
  CHECK(p->actions.empty());
  CHECK(report_of(p.value(), "TOPIC_SPREAD") == nullptr);
}

TEST_CASE("TOPIC_SPREAD spreads a topic of two partitions off a broker of twenty and stops at max_actions",
          "[topic_spread]") {
  cluster_model m;
  for (int b = 0; b < 20; ++b) m.brokers.push_back(broker("b" + std::to_string(b)));
  for (int b = 0; b < 20; ++b)
    for (int i = 0; i < 3; ++i) m.replicas.push_back(replica("filler", b * 3 + i, "b" + std::to_string(b)));
  for (int p = 0; p < 2; ++p) m.replicas.push_back(replica("pair", p, "b0"));
  for (int p = 0; p < 40; ++p) m.replicas.push_back(replica("wide", p, "b" + std::to_string(p % 2)));
  m.goals["TOPIC_SPREAD"].enabled = true;
  m.goals["PARTITION_COUNT"].enabled = false;
  m.max_actions = 1000;
  auto p = make_plan(m, moonmq::test::builtin_goals());
  REQUIRE(p.ok());
  const goal_report* spread = report_of(p.value(), "TOPIC_SPREAD");
  REQUIRE(spread);
  INFO(spread->explanation);
  CHECK(spread->after.violators.empty());
  const cluster_model after = applied(m, p.value());
  for (const auto& [id, n] : spread_of(after, "pair")) CHECK(n <= 1);
  for (const auto& [id, n] : spread_of(after, "wide")) {
    CHECK(n >= 1);  // mean 2, band [1, 3]
    CHECK(n <= 3);
  }
  m.max_actions = 3;
  auto capped = make_plan(m, moonmq::test::builtin_goals());
  REQUIRE(capped.ok());
  CHECK(capped->actions.size() == 3);
  CHECK(report_of(capped.value(), "TOPIC_SPREAD")->explanation.find("stopped at max_actions") != std::string::npos);
}

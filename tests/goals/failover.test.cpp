// Failover in shared-storage mode (goals/failover_planner.hpp,
// docs/balancer.md "Failover (shared storage)"): which partitions of a
// fenced broker get a new owner, when, where, and at which expected epoch.

#include <catch2/catch.hpp>

#include <map>

#include "goals/detector.hpp"
#include "goals/failover_planner.hpp"
#include "goals/move_history.hpp"
#include "tests/goals/model_builder.hpp"

using namespace moonmq::goals;
using moonmq::test::broker;
using moonmq::test::builtin_goals;
using moonmq::test::replica;

namespace {

owner_row row(std::string topic, int partition, std::string owner, std::int64_t epoch = 1) {
  owner_row r;
  r.tp.topic = std::move(topic);
  r.tp.partition = partition;
  r.owner = std::move(owner);
  r.epoch = epoch;
  return r;
}

/// b1 and b2 own a partition each, b3 (fenced) owns t-0..t-3 at epochs
/// 1..4 and __groups-0 at epoch 7.
failover_view three_brokers(std::int64_t b3_silent_ms) {
  failover_view v;
  v.owners = {row("t", 4, "b1"), row("t", 5, "b2")};
  for (int p = 0; p < 4; ++p) v.owners.push_back(row("t", p, "b3", p + 1));
  v.owners.push_back(row("__groups", 0, "b3", 7));
  v.fenced = {"b3"};
  v.silent_ms = {{"b1", 0}, {"b2", 100}, {"b3", b3_silent_ms}};
  v.wait_ms = 3500;
  return v;
}

std::map<std::string, std::int64_t> epochs_of(const std::vector<owner_row>& rows) {
  std::map<std::string, std::int64_t> out;
  for (const auto& r : rows) out[r.tp.topic + "-" + std::to_string(r.tp.partition)] = r.epoch;
  return out;
}

std::map<std::string, int> destinations(const failover_plan& p) {
  std::map<std::string, int> out;
  for (const auto& a : p.actions) ++out[a.to];
  return out;
}

}  // namespace

TEST_CASE("failover selects every partition of a fenced broker silent for the wait, internal ones included, with "
          "the epochs read",
          "[goals][failover]") {
  auto sel = select_failover(three_brokers(3500));
  CHECK(sel.brokers == std::vector<std::string>{"b3"});
  CHECK(sel.waiting.empty());
  CHECK(sel.held.empty());
  CHECK(sel.silent_ms.at("b3") == 3500);
  CHECK(epochs_of(sel.partitions) ==
        std::map<std::string, std::int64_t>{{"__groups-0", 7}, {"t-0", 1}, {"t-1", 2}, {"t-2", 3}, {"t-3", 4}});
  for (const auto& r : sel.partitions) CHECK(r.owner == "b3");
}

TEST_CASE("no failover while the fenced broker's silence is below the wait or not known", "[goals][failover]") {
  auto sel = select_failover(three_brokers(3499));
  CHECK(sel.partitions.empty());
  CHECK(sel.brokers.empty());
  CHECK(sel.waiting == std::vector<std::string>{"b3"});

  // A new leader counts silence again from 0; a broker it has no count of
  // (not a Raft peer here) is never failed over.
  auto v = three_brokers(100000);
  v.silent_ms.erase("b3");
  auto unknown = select_failover(v);
  CHECK(unknown.partitions.empty());
  CHECK(unknown.waiting == std::vector<std::string>{"b3"});
}

TEST_CASE("no failover for a broker that is not fenced, however silent", "[goals][failover]") {
  auto v = three_brokers(100000);
  v.fenced.clear();
  v.silent_ms["b2"] = 100000;
  auto sel = select_failover(v);
  CHECK(sel.partitions.empty());
  CHECK(sel.brokers.empty());
  CHECK(sel.waiting.empty());

  // A fenced broker that owns nothing has nothing to fail over.
  v.fenced = {"b4"};
  v.silent_ms["b4"] = 100000;
  CHECK(select_failover(v).brokers.empty());
}

TEST_CASE("a partition with an unfinished move is held for a later pass", "[goals][failover]") {
  auto v = three_brokers(5000);
  v.held = {{"t", 1}};
  auto sel = select_failover(v);
  REQUIRE(sel.held.size() == 1);
  CHECK(sel.held[0].tp == topic_partition{"t", 1});
  CHECK(sel.partitions.size() == 4);
  for (const auto& r : sel.partitions) CHECK(!(r.tp == topic_partition{"t", 1}));
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3", false)};
  auto p = plan_failover(m, builtin_goals(), sel);
  REQUIRE(p.ok());
  CHECK(p.value().actions.size() == 4);
  CHECK(p.value().explanation.find("1 wait for an unfinished move") != std::string::npos);
}

TEST_CASE("failover places partitions only on alive, unfenced, undrained, fast brokers, evenly, each conditional "
          "on its epoch",
          "[goals][failover]") {
  auto v = three_brokers(4200);
  v.fenced = {"b3", "b6"};  // b6 still answers load reports but Raft fenced it
  v.silent_ms["b6"] = 100;  // (and owns nothing)
  auto sel = select_failover(v);
  cluster_model m;
  auto draining = broker("b4");
  draining.draining = true;
  auto slow = broker("b5");
  slow.slow = true;
  m.brokers = {broker("b1"), broker("b2"), broker("b3", false), draining, slow, broker("b6"), broker("b7", false)};
  m.replicas = {replica("t", 4, "b1"), replica("t", 5, "b2")};
  for (int p = 0; p < 4; ++p) m.replicas.push_back(replica("t", p, "b3", 10.0));
  auto p = plan_failover(m, builtin_goals(), sel);
  REQUIRE(p.ok());
  const auto& plan = p.value();
  CHECK(plan.unplaced.empty());
  REQUIRE(plan.actions.size() == 5);
  auto dest = destinations(plan);
  CHECK(dest.size() == 2);
  CHECK(dest["b1"] + dest["b2"] == 5);
  CHECK(std::abs(dest["b1"] - dest["b2"]) <= 1);
  std::map<std::string, std::int64_t> expected = epochs_of(sel.partitions);
  for (const auto& a : plan.actions) {
    CHECK(a.from == "b3");
    CHECK(a.expect_epoch == expected.at(a.tp.topic + "-" + std::to_string(a.tp.partition)));
    CHECK(a.reason == "broker b3 is fenced and silent for 4200 ms (wait 3500 ms)");
  }
  CHECK(plan.explanation.find("5 partition(s) get a new owner") != std::string::npos);
}

TEST_CASE("a controller without samples of the dead broker still fails its partitions over", "[goals][failover]") {
  // Restarted controller: the dead broker answered no load report, so the
  // model has neither it nor its partitions.
  auto sel = select_failover(three_brokers(10000));
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2")};
  m.replicas = {replica("t", 4, "b1"), replica("t", 5, "b2")};
  auto p = plan_failover(m, builtin_goals(), sel);
  REQUIRE(p.ok());
  CHECK(p.value().actions.size() == 5);
  bool internal = false;
  for (const auto& a : p.value().actions) internal = internal || a.tp.topic == "__groups";
  CHECK(internal);

  // No broker left to take them: nothing moves, and the plan says why.
  cluster_model alone;
  alone.brokers = {broker("b1", false), broker("b2", false)};
  auto none = plan_failover(alone, builtin_goals(), sel);
  REQUIRE(none.ok());
  CHECK(none.value().actions.empty());
  CHECK(none.value().unplaced.size() == 5);
  CHECK(none.value().explanation.find("no broker can take them") != std::string::npos);
}

TEST_CASE("hard goals bound where a failed-over partition goes", "[goals][failover]") {
  failover_view v;
  v.owners = {row("t", 0, "b3", 2)};
  v.fenced = {"b3"};
  v.silent_ms = {{"b3", 9000}};
  auto sel = select_failover(v);
  cluster_model m;
  auto small = broker("b1");
  small.capacity[0] = 150.0;  // NW_IN: 50 + 100 would pass 0.8 x 150
  auto big = broker("b2");
  big.capacity[0] = 10000.0;
  m.brokers = {small, big, broker("b3", false)};
  m.replicas = {replica("u", 0, "b1", 50.0), replica("t", 0, "b3", 100.0)};
  auto p = plan_failover(m, builtin_goals(), sel);
  REQUIRE(p.ok());
  REQUIRE(p.value().actions.size() == 1);
  CHECK(p.value().actions[0].to == "b2");  // b1 has fewer partitions but no room

  m.brokers[1].capacity[0] = 150.0;
  m.replicas.push_back(replica("u", 1, "b2", 50.0));
  auto q = plan_failover(m, builtin_goals(), sel);
  REQUIRE(q.ok());
  CHECK(q.value().actions.empty());
  CHECK(q.value().unplaced.size() == 1);
  CHECK(q.value().explanation.find("hard goal") != std::string::npos);
}

TEST_CASE("a broker that answered again before the proposal keeps its partitions", "[goals][failover]") {
  auto sel = select_failover(three_brokers(5000));
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2")};
  auto p = plan_failover(m, builtin_goals(), sel);
  REQUIRE(p.ok());
  CHECK(still_silent(p.value(), {{"b3", 5100}}, 3500).size() == 5);
  CHECK(still_silent(p.value(), {{"b3", 20}}, 3500).empty());  // answered: counted from 0 again
  CHECK(still_silent(p.value(), {}, 3500).empty());            // no longer leader: no count at all
}

TEST_CASE("the goals of the same pass count failed-over partitions at their destination and leave them there",
          "[goals][failover]") {
  auto sel = select_failover(three_brokers(5000));
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3", false)};
  m.replicas = {replica("t", 4, "b1"), replica("t", 5, "b2"), replica("t", 0, "b3", 10.0)};
  auto p = plan_failover(m, builtin_goals(), sel);
  REQUIRE(p.ok());
  REQUIRE(p.value().actions.size() == 5);
  add_failover_moves(m, p.value());
  CHECK(m.in_flight.size() == 5);
  auto plan = make_plan(m, builtin_goals());
  REQUIRE(plan.ok());
  for (const auto& a : plan.value().actions) CHECK(a.topic != "__groups");
  for (const auto& a : plan.value().actions) CHECK(!(a.topic == "t" && a.partition < 4));
  // Every partition counts on a live broker: 7 partitions over b1 and b2.
  double on_live = 0;
  for (std::size_t b = 0; b < plan.value().broker_ids.size(); ++b)
    if (plan.value().broker_ids[b] != "b3") on_live += plan.value().brokers_before[b][3];
  CHECK(on_live == 7);
}

TEST_CASE("failover spreads a dead broker's partitions over survivors with equal counts even when they avoid one",
          "[goals][failover]") {
  // The shared demo: the loop first moved t-0..t-3 from b1 to b3, so each
  // avoids b1 (the broker a recent move took it from); then b3 died. b1
  // and b2 own 4 partitions each (an internal one included) and no load
  // is known of b3's partitions (zero load: no tie-break by NW_IN).
  failover_view v;
  for (int p = 0; p < 4; ++p) v.owners.push_back(row("t", p, "b3", 2));
  v.fenced = {"b3"};
  v.silent_ms = {{"b3", 5000}};
  auto sel = select_failover(v);
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3", false)};
  m.replicas = {replica("__groups", 0, "b1"), replica("u", 0, "b1", 5.0), replica("u", 1, "b1", 5.0),
                replica("u", 2, "b1", 5.0), replica("__groups", 1, "b2"), replica("u", 3, "b2", 5.0),
                replica("u", 4, "b2", 5.0), replica("u", 5, "b2", 5.0)};
  for (int p = 0; p < 4; ++p) {
    m.replicas.push_back(replica("t", p, "b3"));
    m.avoid.push_back(moonmq::test::avoid("t", p, "b1"));
  }
  auto p = plan_failover(m, builtin_goals(), sel);
  REQUIRE(p.ok());
  REQUIRE(p.value().actions.size() == 4);
  auto dest = destinations(p.value());
  CHECK(dest["b1"] == 2);
  CHECK(dest["b2"] == 2);

  // Between survivors with equal counts, one the partition avoids comes last.
  failover_view one;
  one.owners = {row("t", 0, "b3", 2)};
  one.fenced = {"b3"};
  one.silent_ms = {{"b3", 5000}};
  auto q = plan_failover(m, builtin_goals(), select_failover(one));
  REQUIRE(q.ok());
  REQUIRE(q.value().actions.size() == 1);
  CHECK(q.value().actions[0].to == "b2");
}

TEST_CASE("after a failover the loop rebalances the survivors: the dead broker counts in no band and moves onto it "
          "no longer hold the partitions failed over",
          "[goals][failover]") {
  // The shared demo after a failover: b3 is dead (surveyed, no answer). b2
  // owns v-0..v-3, which the loop moved from b1 a minute ago, and t-0..t-3,
  // which the loop moved from b1 to b3 a minute ago and the failover then
  // handed to b2; b1 owns u-0..u-3. 8/4.
  constexpr std::int64_t now = 10'000'000;
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3", false)};
  std::vector<journal_move> journal;
  for (int p = 0; p < 4; ++p) {
    m.replicas.push_back(replica("u", p, "b1", 10.0, 10.0));
    m.replicas.push_back(replica("v", p, "b2", 10.0, 10.0));
    m.replicas.push_back(replica("t", p, "b2", 10.0, 10.0));
    for (const std::string topic : {"v", "t"}) {
      journal_move j;
      j.tp = {topic, p};
      j.from = "b1";
      j.to = topic == "v" ? "b2" : "b3";
      j.state = "done";
      j.origin = "balancer";
      j.updated_ms = now - 60'000;
      journal.push_back(j);
    }
  }
  add_move_history(m, journal, make_stability_windows(60, 3600, 1800), now);
  // v-0..v-3 keep their cooldown and avoid b1; t-0..t-3 are no longer
  // where the move to b3 left them: that move holds them no more.
  CHECK(m.cooldown.size() == 4);
  CHECK(m.avoid.size() == 4);
  for (const auto& tp : m.cooldown) CHECK(tp.topic == "v");
  for (const auto& a : m.avoid) CHECK(a.tp.topic == "v");

  auto plan = make_plan(m, builtin_goals());
  REQUIRE(plan.ok());
  const auto* count = moonmq::test::report_of(plan.value(), "PARTITION_COUNT");
  REQUIRE(count);
  CHECK(count->before.mean == Approx(6.0));  // 12 partitions over the 2 live brokers, not 3
  REQUIRE(plan.value().actions.size() == 2);
  for (const auto& a : plan.value().actions) {
    CHECK(a.topic == "t");
    CHECK(a.from == "b2");
    CHECK(a.to == "b1");
  }
  CHECK(plan.value().balancedness_after == Approx(100.0));
}

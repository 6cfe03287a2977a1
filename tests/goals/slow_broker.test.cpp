// Slow brokers (docs/balancer.md "Slow brokers"): the balance loop's rule
// (goals/slow_brokers.hpp), the snapshot's view of a slow broker, and the
// SLOW_BROKER goal that moves partitions off it.

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "goals/builtin_goals.hpp"
#include "goals/detector.hpp"
#include "goals/model_json.hpp"
#include "goals/slow_brokers.hpp"
#include "goals/snapshot.hpp"
#include "tests/goals/model_builder.hpp"

using namespace moonmq::goals;
using moonmq::test::broker;
using moonmq::test::replica;
using moonmq::test::applied;
using moonmq::test::report_of;

namespace {

constexpr double kMiB = 1048576.0;

/// b1..b3, six partitions of topic "t" each; partition p carries
/// (p + 1) × 0.5 MiB/s in and out and (p + 1) × 64 MiB on disk, so every
/// goal is in band; `slow` is marked slow.
cluster_model three_brokers(const std::string& slow) {
  cluster_model m;
  for (const char* id : {"b1", "b2", "b3"}) {
    auto b = broker(id);
    b.slow = slow == id;
    m.brokers.push_back(b);
  }
  int p = 0;
  for (const char* id : {"b1", "b2", "b3"})
    for (int i = 0; i < 6; ++i, ++p)
      m.replicas.push_back(replica("t", p, id, (i + 1) * 0.5 * kMiB, (i + 1) * 0.5 * kMiB, (i + 1) * 64 * kMiB));
  m.max_actions = 100;
  return m;
}

int owned_by(const cluster_model& m, const std::string& b) {
  int n = 0;
  for (const auto& r : m.replicas) n += r.owner == b;
  return n;
}

broker_latency latency(double sync_p90) {
  broker_latency l;
  l.sync_count = 30;
  l.sync_p90_ms = sync_p90;
  return l;
}

bool slow_in(const std::vector<slow_verdict>& v, const std::string& id) {
  for (const auto& x : v)
    if (x.broker == id) return x.slow;
  return false;
}

}  // namespace

TEST_CASE("a slow broker is neither eligible nor a drain target, and model JSON keeps the flag", "[goals][slow]") {
  auto m = three_brokers("b3");
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  const auto b3 = *s.value().find_broker("b3");
  CHECK(s.value().slow(b3));
  CHECK_FALSE(s.value().eligible(b3));
  CHECK_FALSE(s.value().drain_target(b3));
  CHECK(s.value().eligible_count() == 2);
  CHECK(s.value().slow(*s.value().find_broker("b1")) == false);
  // A slow broker that is also draining is the drain's, not the goal's.
  m.brokers[2].draining = true;
  CHECK_FALSE(snapshot::freeze(m).value().slow(b3));

  auto j = model_to_json(three_brokers("b2"));
  CHECK(j["brokers"][1]["slow"] == true);
  CHECK_FALSE(j["brokers"][0].contains("slow"));
  auto back = model_from_json(j);
  REQUIRE(back.ok());
  CHECK(back.value().brokers[1].slow);
  CHECK_FALSE(back.value().brokers[0].slow);
  j["brokers"][1]["slow"] = "yes";
  CHECK_FALSE(model_from_json(j).ok());
}

TEST_CASE("SLOW_BROKER moves every partition off a slow broker, busiest first, and nothing moves onto it",
          "[goals][slow]") {
  auto m = three_brokers("b3");
  auto p = make_plan(m, moonmq::test::builtin_goals());
  REQUIRE(p.ok());
  const auto* g = report_of(p.value(), "SLOW_BROKER");
  REQUIRE(g != nullptr);
  CHECK(g->priority == 60);
  CHECK(g->before.violators.size() == 1);
  CHECK(g->before.cost == 6.0);
  CHECK(g->after.violators.empty());
  CHECK(g->after.cost == 0.0);
  int from_b3 = 0;
  for (const auto& a : p.value().actions) {
    INFO(a.topic << "-" << a.partition << " " << a.from << "->" << a.to << " by " << a.goal);
    CHECK(a.to != "b3");
    if (a.from == "b3") {
      ++from_b3;
      CHECK(a.goal == "SLOW_BROKER");
      CHECK(a.reason == "broker b3 is slow");
    }
  }
  CHECK(from_b3 == 6);
  // The busiest partition of b3 (partition 17, 3 MiB/s) goes first.
  REQUIRE_FALSE(p.value().actions.empty());
  CHECK(p.value().actions.front().partition == 17);
  auto after = applied(m, p.value());
  CHECK(owned_by(after, "b3") == 0);
  // The eligible brokers share the load the distribution goals now balance.
  CHECK(owned_by(after, "b1") >= 7);
  CHECK(owned_by(after, "b2") >= 7);
  // Replanning while b3 is still slow moves nothing: it stays empty.
  auto again = make_plan(after, moonmq::test::builtin_goals());
  REQUIRE(again.ok());
  CHECK(again.value().actions.empty());
}

TEST_CASE("a slow broker's partitions stay when SLOW_BROKER is off, and still nothing moves onto it",
          "[goals][slow]") {
  // b3 slow and empty-ish: without the goal the distribution goals would
  // fill it; with b3 slow they may not.
  auto m = three_brokers("b3");
  for (auto& r : m.replicas)
    if (r.owner == "b3" && r.partition > 12) r.owner = "b1";
  m.goals["SLOW_BROKER"].enabled = false;
  auto p = make_plan(m, moonmq::test::builtin_goals());
  REQUIRE(p.ok());
  CHECK(report_of(p.value(), "SLOW_BROKER") == nullptr);
  REQUIRE_FALSE(p.value().actions.empty());  // PARTITION_COUNT still balances b1 and b2
  for (const auto& a : p.value().actions) {
    CHECK(a.from != "b3");
    CHECK(a.to != "b3");
  }
}

TEST_CASE("hard goals and avoided destinations still bound where a slow broker's partitions go", "[goals][slow]") {
  auto m = three_brokers("b3");
  // b1 declares a disk capacity it is already near: DISK_CAPACITY (hard)
  // refuses anything more on it.
  m.brokers[0].capacity[2] = 21 * 64 * kMiB / 0.8 + 1.0;
  // Partition 17 must not go back to b2 (it came from there recently).
  m.avoid.push_back(moonmq::test::avoid("t", 17, "b2"));
  auto p = make_plan(m, moonmq::test::builtin_goals());
  REQUIRE(p.ok());
  for (const auto& a : p.value().actions) {
    INFO(a.topic << "-" << a.partition << " " << a.from << "->" << a.to << " by " << a.goal);
    CHECK(a.to != "b1");
    CHECK_FALSE((a.partition == 17 && a.to == "b2"));
  }
  const auto* g = report_of(p.value(), "SLOW_BROKER");
  REQUIRE(g != nullptr);
  // Five of b3's six partitions fit on b2; partition 17 has nowhere to go.
  CHECK(g->accepted == 5);
  CHECK(g->after.cost == 1.0);
  CHECK(g->explanation.find("1 refused") != std::string::npos);
}

TEST_CASE("a broker is slow after SlowBrokerPasses suspect passes and clears below half the bar", "[goals][slow]") {
  slow_detector d({5.0, 100.0, 3, 10});
  std::map<std::string, broker_latency> r{{"b1", latency(4.0)}, {"b2", latency(6.0)}, {"b3", latency(500.0)}};
  auto v = d.update(r, 3);
  REQUIRE(v.size() == 3);
  CHECK(v[2].suspect);
  CHECK(v[2].bar_ms == 100.0);  // max(100, 5 × median(4, 6) = 25)
  CHECK(v[2].streak == 1);
  CHECK_FALSE(v[2].slow);
  CHECK_FALSE(v[0].suspect);
  d.update(r, 3);
  CHECK_FALSE(d.slow("b3"));
  v = d.update(r, 3);
  CHECK(d.slow("b3"));
  CHECK(slow_in(v, "b3"));
  CHECK_FALSE(d.slow("b1"));
  // 60 ms is below the bar but above half of it: stays slow (no flapping).
  r["b3"] = latency(60.0);
  for (int i = 0; i < 5; ++i) d.update(r, 3);
  CHECK(d.slow("b3"));
  // 20 ms for three passes clears it; a suspect pass in between restarts the count.
  r["b3"] = latency(20.0);
  d.update(r, 3);
  d.update(r, 3);
  auto back = r;
  back["b3"] = latency(500.0);
  d.update(back, 3);
  d.update(r, 3);
  d.update(r, 3);
  CHECK(d.slow("b3"));
  d.update(r, 3);
  CHECK_FALSE(d.slow("b3"));
}

TEST_CASE("the slow rule needs the floor, enough samples, peers to compare with, and a minority", "[goals][slow]") {
  SECTION("below SlowBrokerMinLatencyMs nothing is slow, however large the ratio") {
    slow_detector d({5.0, 100.0, 1, 10});
    auto v = d.update({{"b1", latency(1.0)}, {"b2", latency(1.0)}, {"b3", latency(90.0)}}, 3);
    CHECK_FALSE(v[2].suspect);
    CHECK_FALSE(d.slow("b3"));
  }
  SECTION("a window of too few samples gives no figure, and a broker without one keeps its state") {
    slow_detector d({5.0, 100.0, 1, 10});
    auto v = d.update({{"b1", latency(2.0)}, {"b2", latency(2.0)}, {"b3", latency(400.0)}}, 3);
    CHECK(d.slow("b3"));
    CHECK(v[2].latency_ms == 400.0);
    broker_latency few = latency(900.0);
    few.sync_count = 3;
    v = d.update({{"b1", latency(2.0)}, {"b2", latency(2.0)}, {"b4", few}}, 4);
    CHECK_FALSE(v[2].latency_ms.has_value());
    CHECK_FALSE(d.slow("b4"));
    // b3 did not report: it keeps its state.
    CHECK(d.slow("b3"));
  }
  SECTION("two brokers cannot outvote each other, and only a minority is ever slow") {
    slow_detector d({5.0, 100.0, 1, 10});
    d.update({{"b1", latency(1.0)}, {"b2", latency(800.0)}}, 2);
    CHECK_FALSE(d.slow("b2"));
    // Of three, two slow ones raise each other's median: the cluster is slow.
    d.update({{"b1", latency(1.0)}, {"b2", latency(800.0)}, {"b3", latency(900.0)}}, 3);
    CHECK_FALSE(d.slow("b2"));
    CHECK_FALSE(d.slow("b3"));
    // Four: both b3 and b4 are suspects (each against median 1 ms), but
    // only one of four may be slow: the slowest.
    slow_detector four({5.0, 100.0, 1, 10});
    auto v = four.update({{"b1", latency(1.0)}, {"b2", latency(1.0)}, {"b3", latency(300.0)}, {"b4", latency(400.0)}}, 4);
    CHECK(v[2].suspect);
    CHECK(v[3].suspect);
    CHECK_FALSE(four.slow("b3"));
    CHECK(four.slow("b4"));
    // Five: two may be slow at once.
    slow_detector five({5.0, 100.0, 1, 10});
    five.update({{"b1", latency(1.0)},
                 {"b2", latency(1.0)},
                 {"b3", latency(1.0)},
                 {"b4", latency(300.0)},
                 {"b5", latency(400.0)}},
                5);
    CHECK(five.slow("b4"));
    CHECK(five.slow("b5"));
  }
  SECTION("the cap only chooses whom to hold: a peer that misses a pass changes no broker's state") {
    slow_detector d({5.0, 100.0, 2, 10});
    std::map<std::string, broker_latency> all{{"b1", latency(1.0)}, {"b2", latency(1.0)}, {"b3", latency(500.0)}};
    d.update(all, 3);
    d.update(all, 3);
    REQUIRE(d.slow("b3"));
    // b2 times out this pass: b3 is still compared with b1, and held.
    auto v = d.update({{"b1", latency(1.0)}, {"b3", latency(500.0)}}, 3);
    CHECK(d.slow("b3"));
    CHECK(v[1].slow);
    // A pass in a cluster of two (a broker removed) holds nobody, yet b3
    // stays slow: back at three it is held again at once.
    d.update({{"b1", latency(1.0)}, {"b3", latency(500.0)}}, 2);
    CHECK_FALSE(d.slow("b3"));
    d.update(all, 3);
    CHECK(d.slow("b3"));
    d.forget("b3");
    CHECK_FALSE(d.slow("b3"));
  }
}

// The balance loop on real moonmq-node processes, about the brokers it
// plans for: racks and weights reported and planned by (docs/balancer.md
// "Racks and weights"), an operator's move left alone for
// ManualMoveCooldownSeconds, and a broker with a slow fsync marked slow and
// emptied (docs/balancer.md "Slow brokers"). Helpers: balancer_passes.hpp.

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "tests/node/balancer_passes.hpp"
#include "tests/node/placement_checks.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::balancer_passes;
using namespace moonmq::test::placement_checks;
using namespace std::chrono_literals;

TEST_CASE("brokers report their rack and weight and the loop plans partition counts by weight",
          "[node][balancer][scenario]") {
  // docs/balancer.md "Racks and weights": b3 weighs 2, b1 and b2 weigh 1,
  // so 8 partitions created on b1 are planned as 2, 2 and 4.
  move_cluster c{{"b1", "b2", "b3"}};
  c.start(1, {"Cluster.Rack=rb"});
  c.start(2, {"Cluster.Rack=ra", "Cluster.Weight=2"});
  auto settings = autobalance(true);
  settings.push_back("Cluster.Rack=ra");
  c.start(0, settings);
  create_topic(c.client(0), "weighed", 8);
  auto loads = cluster_call(c.cluster_port(2), "GET", "/cluster/loads");
  INFO("b3 loads " << loads.raw);
  REQUIRE(loads.status == 200);
  CHECK(loads.body["rack"] == "ra");
  CHECK(loads.body["weight"] == 2.0);
  pass_watcher w{[&] { return c.admin(0); }};
  if (!w.wait(any_planned, 20s))
    FAIL("no pass planned a move within 20 s; status " << w.status().dump() << "\n" << log_tails(c));
  auto passes = w.passes();
  json pass;
  for (const auto& [n, p] : passes)
    if (!actions_of(p).empty())
      pass = p;
  INFO("pass " << pass.dump());
  std::map<std::string, int> after{{"b1", 8}, {"b2", 0}, {"b3", 0}};
  for (const auto& a : actions_of(pass)) {
    CHECK(a["goal"] == "PARTITION_COUNT");
    --after[a["from"].get<std::string>()];
    ++after[a["to"].get<std::string>()];
  }
  CHECK(after == std::map<std::string, int>{{"b1", 2}, {"b2", 2}, {"b3", 4}});
  CHECK(broker_entry(pass, "b3")["weight"] == 2.0);
  CHECK(broker_entry(pass, "b3")["rack"] == "ra");
  CHECK(broker_entry(pass, "b2")["rack"] == "rb");
  CHECK(broker_entry(pass, "b1")["weight"] == 1.0);
  bool counted = false;
  for (const auto& g : pass["plan"]["goals"])
    if (g["name"] == "PARTITION_COUNT") {
      counted = true;
      CHECK(g["basis"] == "load_per_weight");
    }
  CHECK(counted);
}

TEST_CASE("the balance loop leaves a partition an operator moved where it is for ManualMoveCooldownSeconds",
          "[node][balancer][scenario]") {
  // b1 holds `pinned` (an excluded topic: never moves), b2 holds t/0: one
  // partition each, balanced. The operator moves t/0 to b1, so the
  // partition-count goal wants it back on b2 and t/0 is its only candidate.
  // The loop's own cooldown (three intervals, 3 s here) would let it move
  // after 3 s; an operator's move stays put for ManualMoveCooldownSeconds.
  auto common = autobalance(false, 1);
  common.push_back("Autobalance.ExcludedTopics=[\"pinned\"]");
  common.push_back("Autobalance.ManualMoveCooldownSeconds=600");
  move_cluster c{{"b1", "b2"}, common};
  c.start(0);
  c.start(1);
  create_topic(c.client(0), "pinned", 1);
  create_topic(c.client(1), "t", 1);
  auto sub = submit_move(c.admin(1), "t", 0, "b1", "ticket OPS-17: keep t next to pinned");
  INFO(sub.dump());
  REQUIRE(sub["accepted"].size() == 1);
  auto done = wait_move(c.admin(1), "t", 0, "b2", {"done"}, 30s);
  REQUIRE(done.value("state", "") == "done");
  CHECK(done.value("origin", "") == "operator");
  CHECK(done.value("reason", "") == "ticket OPS-17: keep t next to pinned");

  // Eight passes later t/0 is still on b1, and the loop planned it in cooldown.
  std::this_thread::sleep_for(8s);
  CHECK(owner_of(c.admin(0), "t", 0) == "b1");
  for (const auto& row : reassignments(c.admin(0)))
    if (row.value("topic", "") == "t") {
      INFO(row.dump());
      CHECK(row.value("origin", "") == "operator");
    }
  // Passes ran meanwhile on the controller (one of the two loops).
  auto passes = std::max(balancer_status(c.admin(0)).value("passes", 0), balancer_status(c.admin(1)).value("passes", 0));
  CHECK(passes >= 4);
}

TEST_CASE("a broker whose fsync is slow is marked slow, its partitions move off, and none moves onto it",
          "[node][balancer][scenario]") {
  // docs/balancer.md "Slow brokers": b2 starts with the test hook that
  // delays every sync of its I/O workers and its disk probe by 150 ms; b1
  // and b3 sync at the disk's speed. Two suspect passes mark it slow.
  auto settings = autobalance(true);
  settings.push_back("Autobalance.Enabled=false");
  settings.push_back("Autobalance.SlowBrokerPasses=2");
  settings.push_back("Autobalance.SlowBrokerMinLatencyMs=50");  // after autobalance()'s: the last one counts
  move_cluster c{{"b1", "b2", "b3"}, settings};
  c.start(0);
  ::setenv("MOONMQ_TEST_SYNC_DELAY_MS", "150", 1);
  c.start(1);
  ::unsetenv("MOONMQ_TEST_SYNC_DELAY_MS");
  c.start(2);
  // A create places every partition on the broker that takes it: "wide"
  // (6 partitions) on b1, which PARTITION_COUNT wants to spread, and
  // "held" (1 partition) on b2, which SLOW_BROKER must move off.
  create_topic(c.client(0), "wide", 6);
  create_topic(c.client(1), "held", 1);
  std::map<int, std::map<int64_t, sent_record>> wide, held;
  for (int p = 0; p < 6; ++p)
    wide[p] = fill(c.client(0), "wide", p, 200, 100, 100, "w" + std::to_string(p));
  held[0] = fill(c.client(1), "held", 0, 200, 20, 100, "h");
  REQUIRE(owner_counts(c.admin(0), "wide")["b1"] == 6);
  REQUIRE(owner_of(c.admin(0), "held", 0) == "b2");
  // b2's produce latency carries the delay too (its ten acks each waited a sync).
  auto loads = cluster_call(c.cluster_port(1), "GET", "/cluster/loads");
  INFO("b2 loads " << loads.raw);
  REQUIRE(loads.status == 200);
  CHECK(loads.body["latency"]["produce"]["count"].get<uint64_t>() >= 10);
  CHECK(loads.body["latency"]["produce"]["p90_ms"].get<double>() >= 150.0);

  // The loop runs dry until b2 is held slow, then for real: PARTITION_COUNT
  // spreads wide's partitions and SLOW_BROKER moves held's off b2, and no
  // move may go to b2.
  auto dry = call(c.admin(0), "PATCH", "/admin/balancer", R"({"Enabled":true,"DryRun":true})");
  REQUIRE(dry.status == 200);
  pass_watcher w{[&] { return c.admin(0); }};
  auto b2_slow = [&] {
    auto status = w.status();
    if (!status.is_object() || !status.contains("slow_brokers"))
      return false;  // not polled yet
    for (const auto& v : status["slow_brokers"])
      if (v["broker"] == "b2")
        return v["slow"] == true;
    return false;
  };
  if (!wait_until(b2_slow, 60s))
    FAIL("b2 not held slow within 60 s; status " << w.status().dump() << "\n" << log_tails(c));
  // Every broker's loop runs its passes while DryRun is on, the controller's
  // only once it is off: b2's own loop must hold b2 slow before then, for
  // the topic placement through b2 below (its loop may be a pass behind).
  auto b2_holds_itself_slow = [&] {
    return placement_checks::topic_placement_state(c.admin(1))["brokers"]["b2"].value("slow", false);
  };
  if (!wait_until(b2_holds_itself_slow, 30s))
    FAIL("b2's own loop does not hold b2 slow within 30 s; b2's placement state "
         << placement_checks::topic_placement_state(c.admin(1)).dump() << "\n" << log_tails(c));
  turn_on_balancer(c.admin(0));
  auto settled = [&] {
    auto counts = owner_counts(c.admin(0), "wide");
    return counts["b2"] == 0 && counts["b1"] <= 4 && owner_of(c.admin(0), "held", 0) == "b3";
  };
  if (!wait_until(settled, 60s))
    FAIL("not settled within 60 s: wide " << json(owner_counts(c.admin(0), "wide")).dump() << ", held on "
                                          << owner_of(c.admin(0), "held", 0) << "\nstatus " << w.status().dump()
                                          << "\n" << log_tails(c));
  REQUIRE(wait_until(
    [&] {
      for (const auto& r : reassignments(c.admin(0)))
        if (!is_terminal(r.value("state", "")))
          return false;
      return true;
    },
    20s));
  REQUIRE(w.wait_pass(w.count() + 2, 10s));
  auto status = w.status();
  INFO("status " << status.dump());
  for (const auto& v : status["slow_brokers"]) {
    CHECK(v["slow"] == (v["broker"] == "b2"));
    if (v["broker"] == "b2")
      CHECK(v["latency_p90_ms"].get<double>() >= 150.0);
  }
  CHECK(broker_entry(status["last_pass"], "b2")["slow"] == true);
  // No pass planned a move onto b2 (check_every_pass), and the moves made
  // were PARTITION_COUNT's off b1 and SLOW_BROKER's off b2, all done.
  auto passes = w.passes();
  check_every_pass(passes);
  std::set<std::string> by_goal;
  for (const auto& [n, pass] : passes)
    for (const auto& e : pass["executed"]) {
      INFO("pass " << n << " executed " << e.dump());
      CHECK(e["to"] != "b2");
      by_goal.insert(e.value("goal", "") + " " + e.value("from", ""));
    }
  CHECK(by_goal == std::set<std::string>{"PARTITION_COUNT b1", "SLOW_BROKER b2"});
  for (const auto& r : reassignments(c.admin(0)))
    CHECK(r["state"] == "done");
  auto text = metrics_text(c.admin(0));
  CHECK(metric(text, "moonmq_autobalancer_broker_slow", {{"broker", "b2"}}) == 1.0);
  CHECK(metric(text, "moonmq_autobalancer_broker_slow", {{"broker", "b1"}}) == 0.0);
  check_readable(c, "wide", wide);
  check_readable(c, "held", held);

  // A topic created through the slow b2 itself while TopicPlacement is
  // proposer (this harness's setting) goes to the first broker that is not
  // slow, once b2's own loop holds it slow too.
  REQUIRE(b2_holds_itself_slow());
  create_topic(c.client(1), "proposed", 2);
  CHECK(placement_checks::image_owner_counts(c.admin(0), "proposed", 2) == std::map<std::string, int>{{"b1", 2}});

  // A new topic spread over the brokers (TopicPlacement spread) leaves the
  // slow b2 out: its six partitions go three to b1 and three to b3.
  REQUIRE(call(c.admin(0), "PATCH", "/admin/balancer", R"({"TopicPlacement":"spread"})").status == 200);
  json placement;
  REQUIRE(wait_until(
    [&] {
      placement = placement_checks::topic_placement_state(c.admin(0));
      return placement.value("spreads", false) && placement["candidates"] == json::array({"b1", "b3"});
    },
    10s));
  INFO("placement " << placement.dump());
  CHECK(placement["brokers"]["b2"]["slow"] == true);
  CHECK(placement["brokers"]["b1"]["slow"] == false);
  create_topic(c.client(0), "fresh", 6);
  CHECK(placement_checks::image_owner_counts(c.admin(0), "fresh", 6)
        == std::map<std::string, int>{{"b1", 3}, {"b3", 3}});
}

TEST_CASE("TopicPlacement spread: a new topic starts over racks by rack weight once every broker reads it",
          "[node][balancer][scenario]") {
  // docs/metadata.md "Placing a new topic's partitions": b1 and b2 in rack
  // ra (weight 1 each), b3 alone in rb with weight 2, so the racks weigh 2
  // each. Placement is "proposer" as configured until the log's
  // TopicPlacement says spread, and even then only once every broker has
  // answered a load report announcing it reads placed topic entries.
  move_cluster c{{"b1", "b2", "b3"}, {"Placement.HeartbeatMs=300"}};
  c.start(0, {"Cluster.Rack=ra"});
  c.start(1, {"Cluster.Rack=ra"});
  create_topic(c.client(1), "before", 2);
  CHECK(image_owner_counts(c.admin(0), "before", 2) == std::map<std::string, int>{{"b2", 2}});
  auto patch = call(c.admin(0), "PATCH", "/admin/balancer", R"({"TopicPlacement":"spread"})");
  INFO(patch.raw);
  REQUIRE(patch.status == 200);
  auto bad = call(c.admin(0), "PATCH", "/admin/balancer", R"({"TopicPlacement":"random"})");
  CHECK(bad.status == 400);
  CHECK(bad.raw.find("TopicPlacement") != std::string::npos);

  // b3 has never answered: b2 keeps creating on itself and says why.
  json state;
  for (int i = 0; i < 100 && (state = topic_placement_state(c.admin(1))).value("mode", "") != "spread"; ++i)
    std::this_thread::sleep_for(100ms);
  INFO(state.dump());
  REQUIRE(state["mode"] == "spread");
  CHECK(state["spreads"] == false);
  CHECK(state["reason"].get<std::string>().find("b3") != std::string::npos);
  create_topic(c.client(1), "waiting", 2);
  CHECK(image_owner_counts(c.admin(0), "waiting", 2) == std::map<std::string, int>{{"b2", 2}});

  c.start(2, {"Cluster.Rack=rb", "Cluster.Weight=2"});
  wait_spreading(c, 3, {"b1", "b2", "b3"});
  state = topic_placement_state(c.admin(1));
  INFO(state.dump());
  CHECK(state["brokers"]["b3"]["rack"] == "rb");
  CHECK(state["brokers"]["b3"]["weight"] == 2.0);
  CHECK(state["brokers"]["b1"]["topic_placement"] == 1);

  // Two partitions: one per rack. Eight: half per rack, even within ra.
  create_topic(c.client(1), "pair", 2);
  auto pair = image_owner_counts(c.admin(0), "pair", 2);
  CHECK(pair["b3"] == 1);
  CHECK(pair["b1"] + pair["b2"] == 1);
  create_topic(c.client(1), "wide", 8);
  CHECK(image_owner_counts(c.admin(0), "wide", 8) == std::map<std::string, int>{{"b1", 2}, {"b2", 2}, {"b3", 4}});
  // Every broker's image agrees, partition by partition.
  auto wide = image_owners(c.admin(1), "wide", 8);
  CHECK(image_owners(c.admin(0), "wide", 8) == wide);
  CHECK(image_owners(c.admin(2), "wide", 8) == wide);
  // A growth through b1 places what it adds: "pair" ends 2 per rack, one per ra broker.
  auto grown = call(c.client(0), "POST", "/v1/topics/pair/partitions", R"({"count":4})");
  INFO(grown.raw);
  REQUIRE(grown.status == 200);
  CHECK(image_owner_counts(c.admin(2), "pair", 4) == std::map<std::string, int>{{"b1", 1}, {"b2", 1}, {"b3", 2}});

  // The log's ExcludedBrokers keeps b3 out of placement (as it keeps it out
  // of the balance loop's destinations); rack rb is then empty, so all six
  // go to ra, three each.
  auto excluded = call(c.admin(2), "PATCH", "/admin/balancer", R"({"ExcludedBrokers":["b3"]})");
  INFO(excluded.raw);
  REQUIRE(excluded.status == 200);
  REQUIRE(wait_until([&] {
    auto st = topic_placement_state(c.admin(1));
    return st["spreads"] == true && st["candidates"] == json::array({"b1", "b2"});
  }, 10s));
  create_topic(c.client(1), "kept_off_b3", 6);
  CHECK(image_owner_counts(c.admin(0), "kept_off_b3", 6) == std::map<std::string, int>{{"b1", 3}, {"b2", 3}});
  // With TopicPlacement proposer, a topic created through the excluded b3
  // goes to the first broker that is not excluded, b1.
  REQUIRE(call(c.admin(2), "PATCH", "/admin/balancer", R"({"TopicPlacement":"proposer"})").status == 200);
  REQUIRE(wait_until([&] { return topic_placement_state(c.admin(2))["spreads"] == false; }, 10s));
  create_topic(c.client(2), "proposed_off_b3", 2);
  CHECK(image_owner_counts(c.admin(0), "proposed_off_b3", 2) == std::map<std::string, int>{{"b1", 2}});
  REQUIRE(call(c.admin(2), "PATCH", "/admin/balancer", R"({"TopicPlacement":"spread","ExcludedBrokers":[]})").status ==
          200);

  // Records produced through b1 to every partition of "wide" (forwarded to
  // its owner) read back from the owner.
  for (int p = 0; p < 8; ++p) {
    auto sent = fill(c.client(0), "wide", p, 20, 10, 100, "w" + std::to_string(p));
    auto owner = owner_of(c.admin(0), "wide", p);
    size_t i = owner == "b1" ? 0 : owner == "b2" ? 1 : 2;
    auto read = read_partition(c.client(i), "wide", p);
    REQUIRE(read.records.size() == sent.size());
    for (const auto& [offset, r] : sent)
      CHECK(read.records.at(offset).value("key", "") == r.key);
  }
}

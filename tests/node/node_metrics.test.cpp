// GET /metrics on three real moonmq-node processes with the metadata log:
//  - moonmq_brokers{state} and moonmq_fenced_brokers follow the image on
//    every broker (a killed broker is fenced, restarted it is not);
//  - partition and lag series are exported by the partition's owner only,
//    so their sum over brokers is the cluster's, before and after a drain
//    moved the partitions and their committed offsets;
//  - the drained broker's journal shows its moves done
//    (moonmq_reassignments{state});
//  - once the broker is removed, no broker keeps a
//    moonmq_autobalancer_broker_load or moonmq_peer_up series for it.

#include <catch2/catch.hpp>

#include "tests/node/metadata_cluster.hpp"
#include "tests/support/metrics_text.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;

namespace {

std::string scrape(move_cluster& c, size_t i) {
  auto a = call(c.admin(i), "GET", "/metrics");
  return a.status == 200 ? a.raw : std::string{};
}

/// The sum over brokers `live` of one sample (absent = 0).
double summed(move_cluster& c, const std::vector<size_t>& live, const std::string& name,
              const std::map<std::string, std::string>& labels) {
  double total = 0;
  for (auto i : live)
    total += metric(scrape(c, i), name, labels).value_or(0);
  return total;
}

/// Waits until `name{labels}` is `want` on broker `i`.
bool shows(move_cluster& c, size_t i, const std::string& name, const std::map<std::string, std::string>& labels,
           double want, std::chrono::milliseconds timeout = 10s) {
  return wait_until([&] { return metric(scrape(c, i), name, labels) == want; }, timeout);
}

}  // namespace

TEST_CASE("broker, partition, lag, move and balancer series follow fencing, a drain and a removal",
          "[node][metadata][raft][metrics][scenario]") {
  constexpr int session_timeout_ms = 2000;
  auto config = raft_config({"Cluster.Raft.SessionTimeoutMs=" + std::to_string(session_timeout_ms)});
  for (auto& a : autobalance(true, 1))  // DryRun: the goals plan, only the drain moves
    config.push_back(a);
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  auto roles = elect_roles(c);
  const size_t leader = roles.leader, fenced = roles.src, drained = roles.dst;
  const std::vector<size_t> all{0, 1, 2};
  for (auto i : all) {
    INFO(c.id(i));
    CHECK(shows(c, i, "moonmq_brokers", {{"state", "active"}}, 3));
    auto text = scrape(c, i);
    CHECK(metric(text, "moonmq_fenced_brokers") == 0.0);
    CHECK(metric(text, "moonmq_brokers", {{"state", "draining"}}) == 0.0);
    CHECK(metric(text, "moonmq_reassignments_in_progress") == 0.0);
    auto [rc, out] = promtool_check(text);
    INFO(out);
    CHECK(rc == 0);
  }

  // A killed broker is fenced in every live broker's image; restarted, not.
  c.kill(fenced);
  for (auto i : {leader, drained}) {
    INFO(c.id(i) << " sees " << c.id(fenced) << " fenced");
    CHECK(shows(c, i, "moonmq_fenced_brokers", {}, 1, std::chrono::milliseconds(session_timeout_ms + 5000)));
    CHECK(metric(scrape(c, i), "moonmq_brokers", {{"state", "active"}}) == 3.0);  // fenced, still a member
  }
  c.restart(fenced);
  for (auto i : all) {
    INFO(c.id(i));
    CHECK(shows(c, i, "moonmq_fenced_brokers", {}, 0));
  }

  // Two partitions owned by the broker to drain, with records and a
  // committed offset: only their owner exports them.
  create_topic(c.client(drained), "leaving", 2);
  REQUIRE(wait_until([&] { return owned_by(c, leader, "leaving") == std::map<std::string, int>{{c.id(drained), 2}}; },
                     5s));
  for (int p = 0; p < 2; ++p) {
    json records = json::array();
    for (int i = 0; i < 10 + p; ++i)
      records.push_back(json{{"partition", p}, {"value", "r" + std::to_string(i)}});
    auto a = call(c.client(leader), "POST", "/v1/topics/leaving/records", json{{"records", records}}.dump());
    INFO(a.raw);
    REQUIRE(a.status == 200);
  }
  auto commit = call(c.client(fenced), "POST", "/v1/groups/audit/offsets",
                     json{{"offsets", {{{"topic", "leaving"}, {"partition", 0}, {"offset", 4}},
                                       {{"topic", "leaving"}, {"partition", 1}, {"offset", 1}}}}}
                       .dump());
  INFO(commit.raw);
  REQUIRE(commit.status == 200);
  const std::map<std::string, std::string> p0{{"topic", "leaving"}, {"partition", "0"}};
  const std::map<std::string, std::string> p1{{"topic", "leaving"}, {"partition", "1"}};
  {
    auto text = scrape(c, drained);
    INFO(text);
    CHECK(metric(text, "moonmq_partition_log_end_offset", p0) == 10.0);
    CHECK(metric(text, "moonmq_partition_log_end_offset", p1) == 11.0);
    CHECK(metric(text, "moonmq_group_lag", {{"group", "audit"}, {"topic", "leaving"}, {"partition", "0"}}) == 6.0);
    CHECK(metric(text, "moonmq_group_total_lag", {{"group", "audit"}}) == 16.0);
    for (auto i : {leader, fenced}) {
      INFO(c.id(i) << " does not own leaving");
      CHECK_FALSE(metric(scrape(c, i), "moonmq_partition_log_end_offset", p0));
    }
  }
  CHECK(summed(c, all, "moonmq_group_total_lag", {{"group", "audit"}}) == 16.0);
  // The balancer has a load series for every live broker.
  CHECK(wait_until(
    [&] {
      return metric(scrape(c, leader), "moonmq_autobalancer_broker_load",
                    {{"broker", c.id(drained)}, {"resource", "partitions"}})
        == 2.0;
    },
    15s));

  // Drained: the partitions and their offsets move; the sums stay.
  auto drain = call(c.admin(leader), "POST", "/admin/brokers/" + c.id(drained) + "/drain");
  INFO(drain.raw);
  REQUIRE(drain.status == 202);
  for (auto i : all) {
    INFO(c.id(i));
    CHECK(shows(c, i, "moonmq_brokers", {{"state", "draining"}}, 1));
  }
  bool empty = wait_until(
    [&] {
      auto row = call(c.admin(leader), "GET", "/admin/brokers/" + c.id(drained)).body;
      return row.value("partitions", -1) == 0 && row.value("moves_in_flight", -1) == 0;
    },
    90s);
  INFO(lines_with(c, "balancer.", 20));
  REQUIRE(empty);
  // The leader's image says the drain is over; each broker applies the
  // cutovers from its own image, a moment later for some.
  std::string text;
  CHECK(wait_until(
    [&] {
      text = scrape(c, drained);
      return metric(text, "moonmq_reassignments", {{"state", "done"}}) == 2.0
             && metric(text, "moonmq_reassignments_in_progress") == 0.0
             && !metric(text, "moonmq_partition_log_end_offset", p0)
             && !metric(text, "moonmq_group_lag", {{"group", "audit"}});
    },
    10s));
  INFO(text);
  CHECK(wait_until(
    [&] {
      return summed(c, all, "moonmq_partition_log_end_offset", p0) == 10.0
             && summed(c, all, "moonmq_partition_log_end_offset", p1) == 11.0
             && summed(c, all, "moonmq_group_total_lag", {{"group", "audit"}}) == 16.0;
    },
    10s));

  // Removed: counted as removed everywhere, and no balancer keeps its load.
  auto [rc, out] = moonmqctl(c.admin(leader), "broker remove " + c.id(drained));
  INFO(out);
  REQUIRE(rc == 0);
  for (auto i : all) {
    INFO(c.id(i));
    CHECK(shows(c, i, "moonmq_brokers", {{"state", "removed"}}, 1));
    CHECK(metric(scrape(c, i), "moonmq_brokers", {{"state", "active"}}) == 2.0);
  }
  c.stop(drained);
  for (auto i : {leader, fenced}) {
    INFO(c.id(i) << " forgets the load and the liveness of " << c.id(drained));
    // Its peer actor keeps probing (a configured peer) but reports nothing.
    CHECK(wait_until([&] { return !metric(scrape(c, i), "moonmq_peer_up", {{"peer", c.id(drained)}}); }, 10s));
    CHECK(metric(scrape(c, i), "moonmq_peer_up", {{"peer", c.id(i == leader ? fenced : leader)}}) == 1.0);
    CHECK(wait_until([&] { return !metric(scrape(c, i), "moonmq_autobalancer_broker_load", {{"broker", c.id(drained)}}); },
                     10s));
    CHECK(metric(scrape(c, i), "moonmq_autobalancer_broker_load", {{"broker", c.id(leader)}, {"resource", "partitions"}})
            .has_value());
  }
  // Stopped after its removal, it is not counted fenced.
  std::this_thread::sleep_for(std::chrono::milliseconds(session_timeout_ms + 1000));
  CHECK(metric(scrape(c, leader), "moonmq_fenced_brokers") == 0.0);
  CHECK_FALSE(metric(scrape(c, leader), "moonmq_autobalancer_broker_load", {{"broker", c.id(drained)}}));
  CHECK_FALSE(metric(scrape(c, leader), "moonmq_peer_up", {{"peer", c.id(drained)}}));  // later probes report nothing
}

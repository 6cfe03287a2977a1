// A broker joining a running cluster (docs/metadata.md "Joining"), on four
// real moonmq-node processes with the metadata log: three voters run; a
// fourth, listed by nobody and not a voter, starts later with the voters as
// its peers. Without restarting any of the three it registers, receives the
// log as a learner, is known to every broker (admin, Kafka Metadata),
// receives partitions under produce load with nothing lost, is fenced when
// killed (its partitions offline) and unfenced when back, and is drained and
// removed again; a registration naming a voter's id is refused.

#include <catch2/catch.hpp>

#include "tests/kafka_node/kafka_client.hpp"
#include "tests/node/metadata_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;

namespace {

constexpr int session_timeout_ms = 3000;

json broker_row(move_cluster& c, size_t via, const std::string& id) {
  return call(c.admin(via), "GET", "/admin/brokers/" + id).body;
}

/// Owners of every partition of `topic` as broker `i` routes them (421 names
/// the owner; 200 = itself), by partition.
std::map<int, std::string> owners_seen(move_cluster& c, size_t i, const std::string& topic, int partitions) {
  std::map<int, std::string> out;
  for (int p = 0; p < partitions; ++p) {
    auto [status, owner] = who_serves(c.client(i), topic, p);
    out[p] = status == 200 ? c.id(i) : status == 421 ? owner : "?";
  }
  return out;
}

}  // namespace

TEST_CASE("a fourth broker joins at runtime, receives partitions, is fenced and unfenced, then drained and removed",
          "[node][metadata][raft][join][scenario]") {
  move_cluster c{{"b1", "b2", "b3", "b4"},
                 raft_config({"Cluster.Raft.SessionTimeoutMs=" + std::to_string(session_timeout_ms),
                              "Kafka.Enabled=true"})};
  c.joins_at_runtime(3);
  start_all(c, 3);
  auto leader = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!leader)
    FAIL("no leader elected\n" << log_tails(c));
  // A registration never takes over a voter's id, nor names an address
  // nobody can reach.
  auto as_voter = cluster_call(c.cluster_port(leader->first), "POST", "/cluster/raft/propose",
                               R"({"type":"broker","id":"b2","change":"register","cluster":"127.0.0.1:1"})");
  INFO(as_voter.raw);
  CHECK(as_voter.status == 409);
  CHECK(as_voter.body.value("error", "") == "broker_is_voter");
  auto wildcard = cluster_call(c.cluster_port(leader->first), "POST", "/cluster/raft/propose",
                               R"({"type":"broker","id":"b9","change":"register","cluster":"0.0.0.0:7000"})");
  INFO(wildcard.raw);
  CHECK(wildcard.status == 400);
  constexpr int partitions = 4;
  create_topic(c.client(0), "joined", partitions);  // all four on b1, the proposer
  REQUIRE(wait_until([&] { return owned_by(c, 2, "joined") == std::map<std::string, int>{{"b1", partitions}}; }, 5s));
  std::vector<std::unique_ptr<producer>> producers;
  for (int p = 0; p < partitions; ++p)
    producers.push_back(std::make_unique<producer>(c.client(1), "joined", p, 5, "j" + std::to_string(p)));

  // b4 starts; nobody else is restarted or reconfigured.
  c.start(3);
  for (size_t i = 0; i < 4; ++i) {
    INFO(c.id(i) << "\n" << lines_with(c, "raft.regist", 10));
    CHECK(wait_until([&] { return broker_row(c, i, "b4").value("state", "") == "active"; }, 10s));
  }
  // It applied the log: it knows the topic and that b1 owns every partition,
  // and serves none of them (the log gave it nothing yet).
  CHECK(wait_until([&] { return owners_seen(c, 3, "joined", partitions) == owners_seen(c, 0, "joined", partitions); },
                   5s));
  CHECK(owners_seen(c, 3, "joined", partitions).at(0) == "b1");
  // Every broker lists it: /admin/cluster and Kafka Metadata.
  auto cluster = call(c.admin(1), "GET", "/admin/cluster");
  INFO(cluster.raw);
  bool listed = false;
  for (const auto& b : cluster.body["brokers"])
    listed = listed || (b.value("id", "") == "b4" && b.value("alive", false));
  CHECK(listed);
  // Each voter has a peer actor for it, as for a configured peer: a row in
  // /admin/actors and a moonmq_peer_up series that reads 1 once probed.
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] {
      auto actors = call(c.admin(i), "GET", "/admin/actors");
      return actors.raw.find("\"peer-b4\"") != std::string::npos
             && call(c.admin(i), "GET", "/metrics").raw.find("moonmq_peer_up{peer=\"b4\"} 1") != std::string::npos;
    }, 15s));
  }
  auto [lrc, meta] = sh("timeout 30 kcat -b 127.0.0.1:" + std::to_string(c.kafka(0)) + " -L -t joined 2>&1");
  INFO(meta);
  CHECK(lrc == 0);
  CHECK(meta.find("4 brokers") != std::string::npos);
  // The voters keep 1..3; the joined broker has the node id its
  // registration was given (1001), on every broker, itself included.
  CHECK(meta.find("broker 1001 at 127.0.0.1:" + std::to_string(c.kafka(3))) != std::string::npos);
  CHECK(meta.find("broker 1 at 127.0.0.1:" + std::to_string(c.kafka(0))) != std::string::npos);
  auto [orc, own] = sh("timeout 30 kcat -b 127.0.0.1:" + std::to_string(c.kafka(3)) + " -L -t joined 2>&1");
  INFO(own);
  CHECK(orc == 0);
  CHECK(own.find("broker 1001 at 127.0.0.1:" + std::to_string(c.kafka(3))) != std::string::npos);
  CHECK(own.find("broker 3 at 127.0.0.1:" + std::to_string(c.kafka(2))) != std::string::npos);

  // Two partitions move onto b4 by hand, under produce load through b2.
  auto moves = call(c.admin(2), "POST", "/admin/reassignments",
                    json{{"version", 1},
                         {"partitions",
                          {{{"topic", "joined"}, {"partition", 0}, {"replicas", {"b4"}}},
                           {{"topic", "joined"}, {"partition", 1}, {"replicas", {1001}}}}}}  // Kafka's tool writes node ids
                      .dump());
  INFO(moves.raw);
  REQUIRE(moves.status == 202);
  CHECK(moves.body["rejected"].empty());
  for (size_t i = 0; i < 4; ++i) {
    INFO(c.id(i) << "\n" << lines_with(c, "move.", 20));
    CHECK(wait_until([&] { return owned_by(c, i, "joined") == std::map<std::string, int>{{"b1", 2}, {"b4", 2}}; },
                     60s));
  }
  std::this_thread::sleep_for(1s);
  auto total = stop_and_count_loss(producers, "joined", [&](int p) { return c.client(p < 2 ? 3 : 0); });
  INFO(total.text());
  CHECK(total.lost() == 0);
  // Produce through a voter reaches b4, the owner.
  std::map<int64_t, sent_record> more;
  auto forwarded = produce_one(c.client(0), "joined", 0, "via-b1", more, 10s);
  INFO(forwarded.raw);
  CHECK(forwarded.status == 200);

  // Killed, b4 is fenced within SessionTimeoutMs plus a heartbeat (and the
  // slack of a loaded machine); back, it is unfenced and serves again.
  c.kill(3);
  auto killed = std::chrono::steady_clock::now();
  REQUIRE(wait_until([&] { return broker_row(c, 0, "b4").value("fenced", false); }, 15s));
  auto fenced_after = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
  INFO("fenced after " << fenced_after.count() << " ms");
  CHECK(fenced_after.count() >= session_timeout_ms - 500);
  // Its two partitions show offline (from the image: it answers no survey).
  auto down = call(c.admin(2), "GET", "/admin/cluster");
  INFO(down.raw);
  std::set<int> offline;
  for (const auto& o : down.body["offline_partitions"])
    if (o.value("topic", "") == "joined" && o.value("owner", "") == "b4")
      offline.insert(o.value("partition", -1));
  CHECK(offline == std::set<int>{0, 1});
  c.restart(3);
  REQUIRE(wait_until([&] { return !broker_row(c, 0, "b4").value("fenced", true); }, 15s));
  CHECK(wait_until([&] { return produce_one(c.client(3), "joined", 1, "back", more, 1s).status == 200; }, 10s));

  // Drained, b4 is emptied by the controller's loop and removed.
  REQUIRE(call(c.admin(1), "POST", "/admin/brokers/b4/drain").status == 202);
  bool empty = wait_until(
    [&] {
      auto row = broker_row(c, 0, "b4");
      return row.value("partitions", -1) == 0 && row.value("moves_in_flight", -1) == 0;
    },
    90s);
  INFO(json(owned_by(c, 0, "joined")).dump() << "\n" << lines_with(c, "balancer.", 20));
  REQUIRE(empty);
  auto removed = call(c.admin(2), "DELETE", "/admin/brokers/b4");
  INFO(removed.raw);
  CHECK(removed.status == 200);
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return broker_row(c, i, "b4").value("state", "") == "removed"; }, 5s));
  }
}

TEST_CASE("the live balance loop moves load onto a broker that joined at runtime", "[node][metadata][raft][join][scenario]") {
  auto config = raft_config();
  for (auto& a : autobalance(false, 1))
    config.push_back(a);
  move_cluster c{{"b1", "b2", "b3", "b4"}, config};
  c.joins_at_runtime(3);
  start_all(c, 3);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  constexpr int partitions = 8;
  create_topic(c.client(0), "spread", partitions);
  std::map<int, std::map<int64_t, sent_record>> filled;
  for (int p = 0; p < partitions; ++p)
    filled[p] = fill(c.client(0), "spread", p, 200, 100, 100, "s" + std::to_string(p));
  c.start(3);
  // The loop sees the new, empty broker in its next survey and fills it.
  std::map<std::string, int> counts;
  bool loaded = wait_until(
    [&] {
      counts = owned_by(c, 0, "spread");
      return counts["b4"] >= 1;
    },
    90s);
  INFO(json(counts).dump() << "\n" << lines_with(c, "balancer.plan", 20));
  REQUIRE(loaded);
  // The loop stops moving (DryRun, cluster-wide through the log) and the
  // moves under way end; then every record written before is at its offset
  // on the partition's owner, whichever broker that is now.
  auto dry = call(c.admin(1), "PATCH", "/admin/balancer", R"({"DryRun":true})");
  INFO(dry.raw);
  REQUIRE(dry.status == 200);
  auto all_ended = [&] {
    auto rows = call(c.admin(0), "GET", "/admin/reassignments").body;
    if (!rows.contains("reassignments"))
      return false;
    for (const auto& r : rows["reassignments"])
      if (!is_terminal(r.value("state", "")))
        return false;
    return true;
  };
  REQUIRE(wait_until(all_ended, 60s));
  std::this_thread::sleep_for(2s);  // a pass that began before DryRun applied may still submit
  REQUIRE(wait_until(all_ended, 60s));
  std::map<std::string, size_t> index{{"b1", 0}, {"b2", 1}, {"b3", 2}, {"b4", 3}};
  for (int p = 0; p < partitions; ++p) {
    auto [status, owner] = who_serves(c.client(0), "spread", p);
    INFO("spread/" << p << " " << status << " " << owner);
    REQUIRE((status == 200 || (status == 421 && index.count(owner))));
    auto now = read_partition(c.client(status == 200 ? 0 : index[owner]), "spread", p);
    CHECK(now.log_end == 200);
    CHECK(count_loss(filled[p], now).ok());
  }
}

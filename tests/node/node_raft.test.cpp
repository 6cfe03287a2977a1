// Raft controller consensus on real moonmq-node processes over HTTP (issue
// 7's "Done when", actors/raft_node.hpp, docs/raft.md "Wiring"):
//  - three brokers elect one controller within 3 x ElectionTimeoutMs; when
//    it is killed another takes over within the same bound; the killed one,
//    restarted, rejoins without deposing the new leader;
//  - a partition move commits its ownership change through the Raft log and
//    every broker applies it; only the controller runs balance passes; a
//    frozen controller, resumed after another was elected, is refused with
//    409 by the others, steps down and runs no more passes;
//  - a controller cut off from the majority (both followers frozen) steps
//    down within one election timeout and runs no balance pass;
//  - the /cluster/raft/* routes: 401 without the token, 400 on a bad body,
//    503 when Raft is off.

#include <catch2/catch.hpp>

#include <csignal>
#include <future>
#include <optional>

#include "tests/node/move_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int election_timeout_ms = 1000;

std::vector<std::string> raft_config() {
  return {"Cluster.Raft.Enabled=true", "Cluster.Raft.ElectionTimeoutMs=" + std::to_string(election_timeout_ms),
          "Cluster.Raft.HeartbeatMs=100"};
}

/// 3 x ElectionTimeoutMs: the issue's bound on electing a controller.
constexpr std::chrono::milliseconds bound{3 * election_timeout_ms};

/// Starts every broker of `c` at once, then waits for each to be ready.
void start_all(move_cluster& c) {
  for (size_t i = 0; i < 3; ++i)
    c.launch(i);
  for (size_t i = 0; i < 3; ++i)
    c.wait_ready(i);
}

std::string log_tails(const move_cluster& c, size_t n = 8000) {
  auto all = c.all_logs();
  return all.size() <= n ? all : "...\n" + all.substr(all.size() - n);
}

/// GET /admin/cluster of broker `i` (null body when it does not answer).
json admin_cluster(move_cluster& c, size_t i) { return call(c.admin(i), "GET", "/admin/cluster").body; }


double metric(uint16_t admin, const std::string& name) {
  auto text = call(admin, "GET", "/metrics").raw;
  auto at = text.find("\n" + name + " ");
  if (at == std::string::npos)
    return -1;
  return std::stod(text.substr(at + name.size() + 2));
}

/// Polls `name` on `admin` until it reads `value` (true) or `within` passes (false).
bool metric_becomes(uint16_t admin, const std::string& name, double value, std::chrono::milliseconds within) {
  auto until = clock_type::now() + within;
  while (clock_type::now() < until) {
    if (metric(admin, name) == value)
      return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

}  // namespace

TEST_CASE("three brokers with Raft elect one controller within three election timeouts and another when it is killed",
          "[node][raft][scenario]") {
  move_cluster c{{"b1", "b2", "b3"}, raft_config()};
  start_all(c);
  auto t0 = clock_type::now();
  auto first = agreed_leader(c, {0, 1, 2}, 0, 4 * bound);
  auto elected_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
  INFO(log_tails(c));
  REQUIRE(first);
  INFO("first controller " << c.id(first->first) << " at term " << first->second << " after " << elected_ms << " ms");
  CHECK(elected_ms < bound.count());
  auto leader = first->first;
  CHECK(metric(c.admin(leader), "moonmq_raft_is_controller") == 1);
  CHECK(metric(c.admin(leader), "moonmq_raft_term") == first->second);
  for (size_t i = 0; i < 3; ++i)
    if (i != leader)
      CHECK(metric(c.admin(i), "moonmq_raft_is_controller") == 0);
  // Every broker holds the lease (docs/shared-storage.md "The lease"): the
  // followers from the leader's appends, the leader from their answers.
  for (size_t i = 0; i < 3; ++i)
    CHECK(metric_becomes(c.admin(i), "moonmq_broker_lease_valid", 1, 2000ms));
  auto shown = admin_cluster(c, leader);
  CHECK(shown["raft"].value("lease_valid", false));
  CHECK(shown["raft"].value("lease_remaining_ms", int64_t{-1}) > 0);
  CHECK(shown["raft"].value("lease_remaining_ms", int64_t{-1}) <= 3000);  // LeaseMs by default

  // Kill the controller: the other two elect one of themselves at a higher term.
  c.kill(leader);
  std::vector<size_t> rest;
  for (size_t i = 0; i < 3; ++i)
    if (i != leader)
      rest.push_back(i);
  auto t1 = clock_type::now();
  auto second = agreed_leader(c, rest, first->second, 4 * bound);
  auto failover_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t1).count();
  REQUIRE(second);
  INFO("second controller " << c.id(second->first) << " at term " << second->second << " after " << failover_ms
                            << " ms");
  CHECK(failover_ms < bound.count());
  CHECK(metric(c.admin(second->first), "moonmq_raft_elections_total") >= 1);

  // The old controller restarts as a follower of the new term and does not
  // depose the healthy leader (pre-vote, leader stickiness).
  c.restart(leader);
  auto rejoined = agreed_leader(c, {0, 1, 2}, second->second - 1, 4 * bound);
  REQUIRE(rejoined);
  CHECK(rejoined->first == second->first);
  CHECK(rejoined->second == second->second);
}

/// GET /admin/balancer of broker `i`.
json balancer(move_cluster& c, size_t i) { return call(c.admin(i), "GET", "/admin/balancer").body; }

TEST_CASE("with Raft a move commits its owner change on every broker and a resumed old controller is refused",
          "[node][raft][scenario]") {
  // The balance loop runs on every broker (live, a pass a second) with the
  // test's topic excluded, so that it plans nothing the test does not do.
  auto config = raft_config();
  for (auto& a : autobalance(false, 1))
    config.push_back(a);
  config.push_back("Autobalance.ExcludedTopics=[\"orders\"]");
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  INFO(log_tails(c));
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * bound);
  REQUIRE(elected);

  // Only the controller runs passes, under its term.
  std::this_thread::sleep_for(2500ms);
  for (size_t i = 0; i < 3; ++i) {
    auto b = balancer(c, i);
    INFO(c.id(i) << " " << b.dump());
    if (i == elected->first) {
      CHECK(b.value("passes", 0) >= 1);
      CHECK(b["controller"].value("epoch", int64_t{0}) == elected->second);
    } else {
      CHECK(b.value("passes", -1) == 0);
      CHECK(b["controller"].contains("not_controller"));
    }
  }

  create_topic(c.client(0), "orders", 2);
  auto sent = fill(c.client(0), "orders", 0, 500, 50, 64);
  submit_move(c.admin(1), "orders", 0, "b2");  // asked of a broker that is not the source
  auto row = wait_move(c.admin(0), "orders", 0, "b1", {"done"}, 30s);
  REQUIRE(row.is_object());
  REQUIRE(row["state"] == "done");

  // Every broker applied the committed entry: same owner, same commit index.
  auto deadline = clock_type::now() + 5s;
  bool applied = false;
  while (!applied && clock_type::now() < deadline) {
    applied = true;
    std::optional<int64_t> commit;
    for (size_t i = 0; i < 3; ++i) {
      auto owners = cluster_call(c.cluster_port(i), "GET", "/cluster/owners").body;
      bool named = false;
      for (const auto& o : owners.value("owners", json::array()))
        named = named || (o["topic"] == "orders" && o["partition"] == 0 && o["owner"] == "b2");
      auto j = admin_cluster(c, i);
      auto ci = j.is_object() ? j.value("commit_index", int64_t{-1}) : int64_t{-1};
      applied = applied && named && (!commit || *commit == ci);
      commit = ci;
    }
    if (!applied)
      std::this_thread::sleep_for(50ms);
  }
  REQUIRE(applied);
  auto read = read_partition(c.client(1), "orders", 0);
  REQUIRE(read.records.size() == sent.size());
  for (const auto& [offset, rec] : sent)
    CHECK(read.records[offset]["key"] == rec.key);

  // Freeze the controller; the others elect a new one; thawed, the old one
  // is refused at its stale term and steps down.
  auto old = elected->first;
  c.signal(old, SIGSTOP);
  std::vector<size_t> rest;
  for (size_t i = 0; i < 3; ++i)
    if (i != old)
      rest.push_back(i);
  auto next = agreed_leader(c, rest, elected->second, 4 * bound);
  c.signal(old, SIGCONT);
  REQUIRE(next);
  auto stale = cluster_call(c.cluster_port(next->first), "POST", "/cluster/controller", "{}",
                            {{"X-Controller-Epoch", std::to_string(elected->second)}, {"X-Controller-Id", c.id(old)}});
  CHECK(stale.status == 409);
  CHECK(stale.body.value("error", "") == "stale_epoch");
  CHECK(stale.body.value("epoch", int64_t{0}) == next->second);
  auto current = cluster_call(c.cluster_port(rest[0] == next->first ? rest[1] : rest[0]), "POST",
                              "/cluster/controller", "{}",
                              {{"X-Controller-Epoch", std::to_string(next->second)},
                               {"X-Controller-Id", c.id(next->first)}});
  CHECK(current.status == 200);
  auto stepped_down = agreed_leader(c, {0, 1, 2}, elected->second, 4 * bound);
  REQUIRE(stepped_down);
  CHECK(stepped_down->first == next->first);
  CHECK(metric(c.admin(old), "moonmq_raft_is_controller") == 0);
  // The old controller's loop acts no more; the new one's runs.
  std::this_thread::sleep_for(1500ms);
  auto old_passes = balancer(c, old).value("passes", -1);
  auto new_passes = balancer(c, next->first).value("passes", -1);
  std::this_thread::sleep_for(2500ms);
  CHECK(balancer(c, old).value("passes", -2) == old_passes);
  CHECK(balancer(c, next->first).value("passes", -1) > new_passes);
}

TEST_CASE("a controller cut off from the majority steps down within one election timeout and acts no more",
          "[node][raft][scenario]") {
  auto config = raft_config();
  for (auto& a : autobalance(false, 1))
    config.push_back(a);
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  INFO(log_tails(c));
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * bound);
  REQUIRE(elected);
  auto leader = elected->first;
  // Freeze both followers: the leader hears from nobody.
  for (size_t i = 0; i < 3; ++i)
    if (i != leader)
      c.signal(i, SIGSTOP);
  auto t0 = clock_type::now();
  std::optional<int64_t> stepped_ms;
  while (!stepped_ms && clock_type::now() - t0 < 4 * bound) {
    // /metrics, not /admin/cluster: the latter waits for the frozen peers' survey.
    if (metric(c.admin(leader), "moonmq_raft_is_controller") == 0)
      stepped_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
    else
      std::this_thread::sleep_for(10ms);
  }
  REQUIRE(stepped_ms);
  INFO("stepped down " << *stepped_ms << " ms after the cut (election timeout " << election_timeout_ms << " ms)");
  // One election timeout from the last answer, plus timer and scheduling slack.
  CHECK(*stepped_ms < election_timeout_ms * 3 / 2);
  // Stepping down ended its lease at once, well before LeaseMs (3000 ms).
  CHECK(metric(c.admin(leader), "moonmq_broker_lease_valid") == 0);
  // Its balance loop runs no pass while it is not the controller (a pass
  // started before the cut ends within the 2 s survey deadline first).
  std::this_thread::sleep_for(3000ms);
  auto passes = balancer(c, leader).value("passes", -1);
  std::this_thread::sleep_for(2000ms);
  CHECK(balancer(c, leader).value("passes", -2) == passes);
  for (size_t i = 0; i < 3; ++i)
    if (i != leader)
      c.signal(i, SIGCONT);
  // Healed, the cluster has one controller again.
  REQUIRE(agreed_leader(c, {0, 1, 2}, elected->second - 1, 4 * bound));
}

TEST_CASE("the Raft routes need the token and a valid message, and one broker is a one-voter quorum",
          "[node][raft][scenario]") {
  // A Cluster section without peers: Raft runs all the same (one code path);
  // the broker elects itself and a topic is created through the log.
  move_cluster one{{"b1"}};
  one.start(0);
  REQUIRE(agreed_leader(one, {0}, 0, 10s));
  create_topic(one.client(0), "solo", 2);
  auto solo = call(one.admin(0), "GET", "/admin/cluster");
  INFO(solo.raw);
  REQUIRE(solo.status == 200);
  CHECK(solo.body["controller"]["id"] == "b1");
  CHECK(solo.body["partitions"].size() == 2);
  // A one-voter leader's lease holds while it leads, without an end.
  CHECK(solo.body["raft"]["lease_valid"] == true);
  CHECK(solo.body["raft"]["lease_remaining_ms"].is_null());
  auto malformed = cluster_call(one.cluster_port(0), "POST", "/cluster/raft/append", "{}");
  CHECK(malformed.status == 400);

  move_cluster on{{"b1", "b2"}, raft_config()};
  on.start(0);
  auto port = on.cluster_port(0);
  CHECK(call(port, "POST", "/cluster/raft/vote", "{}").status == 401);
  auto bad = cluster_call(port, "POST", "/cluster/raft/vote", R"({"type":"vote_request","from":"b2"})");
  CHECK(bad.status == 400);
  CHECK(bad.body.value("error", "") == "invalid_request");
  auto misplaced = cluster_call(port, "POST", "/cluster/raft/append",
                                R"({"type":"vote_request","from":"b2","to":"b1","term":1,"last_log_index":0,)"
                                R"("last_log_term":0,"pre_vote":true})");
  CHECK(misplaced.status == 400);
  auto elsewhere = cluster_call(port, "POST", "/cluster/raft/vote",
                                R"({"type":"vote_request","from":"b2","to":"b9","term":1,"last_log_index":0,)"
                                R"("last_log_term":0,"pre_vote":true})");
  CHECK(elsewhere.status == 400);
  auto fine = cluster_call(port, "POST", "/cluster/raft/vote",
                           R"({"type":"vote_request","from":"b2","to":"b1","term":1,"last_log_index":0,)"
                           R"("last_log_term":0,"pre_vote":true})");
  CHECK(fine.status == 202);
  // A pre-vote changes no term.
  auto j = call(on.admin(0), "GET", "/admin/cluster").body;
  CHECK(j.value("term", int64_t{-1}) == 0);
}

TEST_CASE("a proposal made while no leader is known waits for one: 503 no_controller after the wait, "
          "applied once a leader is elected within it",
          "[node][raft][scenario]") {
  // Two voters, b2 not started: b1 can elect nobody. Its wait for a leader
  // is max(PeerTimeout 2 s, 3 x ElectionTimeoutMs 600 ms) = 2 s.
  move_cluster c{{"b1", "b2"}};
  c.start(0);
  auto t0 = clock_type::now();
  auto lonely = call(c.client(0), "POST", "/v1/topics", R"({"name":"early","partitions":1})");
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0);
  INFO(lonely.raw << " after " << waited.count() << " ms");
  CHECK(lonely.status == 503);
  CHECK(lonely.body.value("error", "") == "no_controller");
  CHECK(waited >= 1900ms);
  CHECK(waited < 6000ms);  // the wait, one proposal deadline at most, and slack
  // Parked again, and b2 starts meanwhile: the proposal goes to the leader
  // they elect and is answered once, created.
  auto parked = std::async(std::launch::async,
                           [&] { return call(c.client(0), "POST", "/v1/topics", R"({"name":"later","partitions":2})"); });
  std::this_thread::sleep_for(200ms);
  c.start(1);
  auto created = parked.get();
  INFO(created.raw);
  CHECK(created.status == 201);
  REQUIRE(agreed_leader(c, {0, 1}, 0, 10s));
  auto topics = call(c.client(1), "GET", "/v1/topics");
  INFO(topics.raw);
  CHECK(topics.body["topics"] == json::parse(R"([{"name":"later","partitions":2}])"));
  WARN("no leader: 503 after " << waited.count() << " ms");
}

// A move whose source dies for good, on three real moonmq-node processes
// with the metadata log (docs/cluster.md "Moves in the log"). The move's
// steps are entries of the log, so the Raft leader knows the state the
// source reached; once the source is fenced (Cluster.Raft.SessionTimeoutMs
// of silence) the leader drives the move on from that state:
//  - before cutover the move fails and the partition stays the source's
//    (offline until it returns, like any partition of a dead broker); the
//    source restarted serves every record;
//  - during the drain (the log says `cutover`) the partition goes back to
//    the source by an entry conditional on the cutover's owner epoch; the
//    source restarted serves every record, the drained tail included;
//  - after the drain (`offsets`, with the sealed end in the log) the
//    destination confirms at the leader's request and the move ends done:
//    the partition serves again on the destination with every record,
//    without the source ever coming back.

#include <catch2/catch.hpp>

#include <csignal>

#include "tests/node/metadata_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;

namespace {

constexpr int session_timeout_ms = 2000;

/// How long after the source's kill the leader may take to end its move:
/// the session timeout, a heartbeat round, the reassigner's 500 ms
/// reconcile and a commit or two, with slack for a loaded machine.
constexpr std::chrono::milliseconds orphan_bound{session_timeout_ms + 6000};

/// The row of `move_id` in GET /admin/reassignments of `admin` (null when absent).
json row_of(uint16_t admin, const std::string& move_id) {
  auto rows = reassignments(admin);
  for (auto& r : rows)
    if (r.value("move_id", "") == move_id)
      return r;
  return nullptr;
}

/// Polls `admin` until move `move_id` is finished in the metadata log.
json wait_logged_end(uint16_t admin, const std::string& move_id, std::chrono::milliseconds timeout) {
  json last;
  wait_until([&] {
    last = row_of(admin, move_id);
    return last.is_object() && is_terminal(last.value("log_state", ""));
  }, timeout);
  return last;
}

}  // namespace

TEST_CASE("a source gone for good while its move copies: the Raft leader ends the move failed",
          "[node][metadata][raft][scenario]") {
  move_cluster c{{"b1", "b2", "b3"},
                 raft_config({"Cluster.Raft.SessionTimeoutMs=" + std::to_string(session_timeout_ms),
                              "Cluster.MoveThrottleBytesPerSec=1000000", "Cluster.BatchBytes=65536"})};
  start_all(c);
  const auto roles = elect_roles(c);
  const size_t leader = roles.leader, src = roles.src, dst = roles.dst;
  const std::string from = c.id(src), to = c.id(dst);
  create_topic(c.client(src), "og", 1);
  auto acked = fill(c.client(src), "og", 0, 6000, 500, 450, "og");  // ~3 MB: ~3 s of copying
  auto sub = submit_move(c.admin(src), "og", 0, to);
  INFO(sub.dump());
  REQUIRE(sub["accepted"].size() == 1);
  auto move_id = sub["accepted"][0].value("move_id", "");
  wait_copied(c, src, "og", 0, from, 128 * 1024, 20s);
  c.kill(src);  // never restarted until the move has ended
  auto killed = clock_type::now();

  auto row = wait_logged_end(c.admin(leader), move_id, orphan_bound + 5s);
  double ended_s = seconds_since(killed);
  WARN("the move ended in the log " << ended_s << " s after its source was killed: " << row.dump());
  INFO(row.dump() << "\n" << lines_with(c, "move.orphan"));
  REQUIRE(row.value("log_state", "") == "failed");
  CHECK(row.value("source", "") == "metadata_log");  // the source's journal is unreachable
  CHECK(row.value("error", "").find("fenced") != std::string::npos);
  CHECK(ended_s < std::chrono::duration<double>(orphan_bound).count());
  // Nothing unfinished is left to cancel.
  CHECK(call(c.admin(leader), "DELETE", "/admin/reassignments/og/0").status == 404);
  // The destination never took the partition over.
  CHECK(who_serves(c.client(dst), "og", 0).first != 200);

  // The source comes back: it owns the partition, serves every record and
  // its journal ends the move too.
  c.restart(src);
  auto own = wait_move(c.admin(src), "og", 0, from, {}, recovery_bound);
  INFO(own.dump());
  CHECK(own.value("state", "") == "failed");
  REQUIRE(wait_until([&] { return who_serves(c.client(src), "og", 0).first == 200; }, recovery_bound));
  CHECK(serving_count(c, "og", 0) == 1);
  CHECK(count_loss(acked, read_partition(c.client(src), "og", 0)).ok());
  auto a = produce_one(c.client(dst), "og", 0, "og-after", acked);
  INFO(a.raw);
  CHECK(a.status == 200);
}

TEST_CASE("a source gone during its drain: the Raft leader gives the partition back to it, conditionally",
          "[node][metadata][raft][scenario]") {
  move_cluster c{{"b1", "b2", "b3"},
                 raft_config({"Cluster.Raft.SessionTimeoutMs=" + std::to_string(session_timeout_ms)})};
  start_all(c);
  const auto roles = elect_roles(c);
  const size_t leader = roles.leader, src = roles.src, dst = roles.dst;
  const std::string from = c.id(src), to = c.id(dst);
  bool caught = false;
  for (int attempt = 0; attempt < 5 && !caught; ++attempt) {
    auto topic = "ob" + std::to_string(attempt);
    INFO("attempt " << attempt << ": " << topic << " " << from << " -> " << to << ", leader " << c.id(leader));
    create_topic(c.client(src), topic, 1);
    auto acked = fill(c.client(src), topic, 0, 4000, 500, 1000, topic);
    // Writes during the move leave a tail for the drain to send.
    producer prod(c.client(src), topic, 0, 5, topic + "-live");
    auto sub = submit_move(c.admin(src), topic, 0, to);
    INFO(sub.dump());
    REQUIRE(sub["accepted"].size() == 1);
    auto move_id = sub["accepted"][0].value("move_id", "");
    // The destination frozen at the cutover: the drain's first append
    // waits on its socket, and the source dies in `draining`, the log
    // naming the destination owner of a copy without the tail.
    std::string seen;
    bool frozen = false;
    auto deadline = clock_type::now() + 30s;
    while (clock_type::now() < deadline) {
      auto r = local_row(c, src, topic, 0);
      seen = r.is_object() ? r.value("state", "") : "";
      if (!frozen && (seen == "cutover" || seen == "draining")) {
        c.signal(dst, SIGSTOP);
        frozen = true;
      }
      if (seen == "draining" || seen == "offsets" || is_terminal(seen))
        break;
      std::this_thread::sleep_for(1ms);
    }
    if (seen != "draining") {
      if (frozen)
        c.signal(dst, SIGCONT);
      prod.stop();
      auto r = wait_move(c.admin(src), topic, 0, from, {}, 40s);
      WARN("attempt " << attempt << ": source journal at " << seen << "; the move ended " << r.dump());
      continue;
    }
    caught = true;
    c.kill(src);
    auto killed = clock_type::now();
    c.signal(dst, SIGCONT);
    prod.stop();
    merge_acked(acked, prod.acked());

    auto row = wait_logged_end(c.admin(leader), move_id, orphan_bound + 5s);
    double ended_s = seconds_since(killed);
    WARN("the move ended in the log " << ended_s << " s after its source was killed: " << row.dump());
    INFO(row.dump() << "\n" << lines_with(c, "move.orphan"));
    REQUIRE(row.value("log_state", "") == "failed");
    CHECK(ended_s < std::chrono::duration<double>(orphan_bound).count());
    // Nobody serves it while its owner, the source, is down.
    CHECK(serving_count(c, topic, 0) == 0);
    // The source restarted follows the log: it unseals and serves every
    // acknowledged record, the tail included, and takes writes again.
    c.restart(src);
    auto own = wait_move(c.admin(src), topic, 0, from, {}, recovery_bound);
    INFO(own.dump() << "\n" << lines_with(c, "move.adopted"));
    CHECK(own.value("state", "") == "failed");
    REQUIRE(wait_until([&] { return who_serves(c.client(src), topic, 0).first == 200; }, recovery_bound));
    CHECK(serving_count(c, topic, 0) == 1);
    CHECK(count_loss(acked, read_partition(c.client(src), topic, 0)).ok());
    auto a = produce_one(c.client(dst), topic, 0, topic + "-after", acked);
    INFO(a.raw);
    CHECK(a.status == 200);
  }
  if (!caught)
    FAIL("the source was never killed in draining in 5 attempts");
}

namespace {

/// The move of a fresh topic from a follower to the other follower (or,
/// with `to_leader`, to the Raft leader itself), its source killed for good
/// once the log has the move in `offsets`. Records the source deleted
/// during the copy (DeleteRecords below what it had already sent) stay
/// deleted on the destination: the `offsets` entry records the sealed log
/// start, and the controller's confirm carries it.
void source_gone_after_drain(bool to_leader) {
  // Throttled, so that the copy lasts long enough for a DeleteRecords
  // after the first megabyte went.
  move_cluster c{{"b1", "b2", "b3"},
                 raft_config({"Cluster.Raft.SessionTimeoutMs=" + std::to_string(session_timeout_ms),
                              "Cluster.MoveThrottleBytesPerSec=2000000"})};
  start_all(c);
  const auto roles = elect_roles(c);
  const size_t leader = roles.leader, src = roles.src, dst = to_leader ? roles.leader : roles.dst;
  const std::string from = c.id(src), to = c.id(dst);
  bool caught = false;
  for (int attempt = 0; attempt < 5 && !caught; ++attempt) {
    auto topic = "od" + std::to_string(attempt);
    INFO("attempt " << attempt << ": " << topic << " " << from << " -> " << to << ", leader " << c.id(leader));
    create_topic(c.client(src), topic, 1);
    // ~4 MB and nothing written during the move: it passes draining at once.
    auto acked = fill(c.client(src), topic, 0, 4000, 500, 1000, topic);
    auto sub = submit_move(c.admin(src), topic, 0, to);
    INFO(sub.dump());
    REQUIRE(sub["accepted"].size() == 1);
    auto move_id = sub["accepted"][0].value("move_id", "");
    // Once the copy passed offset 1000, the source deletes below 500.
    bool deleted = wait_until(
      [&] {
        auto r = local_row(c, src, topic, 0);
        return r.is_object() && r.value("state", "") == "copying" && r.value("copy_position", int64_t{0}) >= 1000;
      },
      20s);
    if (deleted) {
      auto d = call(c.client(src), "POST", "/v1/topics/" + topic + "/partitions/0/delete-records",
                    json{{"before_offset", 500}}.dump());
      INFO(d.raw);
      deleted = d.status == 200;
    }
    if (!deleted) {
      wait_move(c.admin(src), topic, 0, from, {}, 40s);
      WARN("attempt " << attempt << ": the copy was not caught past offset 1000");
      continue;
    }
    acked.erase(acked.begin(), acked.lower_bound(500));
    // Freeze the destination at the cutover: the source drains nothing,
    // journals `offsets` and its offsets push waits on the frozen socket.
    std::string seen;
    bool frozen = false;
    auto deadline = clock_type::now() + 30s;
    while (clock_type::now() < deadline) {
      auto r = local_row(c, src, topic, 0);
      seen = r.is_object() ? r.value("state", "") : "";
      if (!frozen && (seen == "cutover" || seen == "draining")) {
        c.signal(dst, SIGSTOP);
        frozen = true;
      }
      if (seen == "offsets" || is_terminal(seen))
        break;
      std::this_thread::sleep_for(1ms);
    }
    // The third broker, never frozen nor killed, is asked what the log says.
    const size_t watcher = to_leader ? roles.dst : leader;
    auto log_state = [&] { return row_of(c.admin(watcher), move_id).value("log_state", ""); };
    bool logged = false;
    bool src_killed = false;
    auto killed = clock_type::now();
    if (!to_leader) {
      logged = frozen && seen == "offsets" && wait_until([&] { return log_state() == "offsets"; }, 5s);
      if (logged) {
        c.kill(src);  // gone: its offsets push and confirm never happen
        src_killed = true;
        killed = clock_type::now();
      }
      if (frozen)
        c.signal(dst, SIGCONT);
    } else if (frozen) {
      // The destination is the Raft leader: frozen, it commits nothing, and
      // frozen longer than an election timeout it would be replaced. The
      // source's `offsets` entry waits in the frozen leader's socket; the
      // source dies, then the leader thaws and commits it with the third
      // broker.
      if (seen == "offsets") {
        std::this_thread::sleep_for(150ms);
        c.kill(src);
        src_killed = true;
        killed = clock_type::now();
      }
      c.signal(dst, SIGCONT);
      logged = seen == "offsets" && wait_until([&] { return log_state() == "offsets" || is_terminal(log_state()); }, 5s)
               && log_state() == "offsets";
    }
    if (!logged) {
      if (src_killed)
        c.restart(src);
      auto r = wait_move(c.admin(src), topic, 0, from, {}, 40s);
      WARN("attempt " << attempt << ": source journal at " << seen << " (destination frozen: " << frozen
                      << "); the move ended " << r.dump());
      continue;
    }
    caught = true;

    auto row = wait_logged_end(c.admin(leader), move_id, orphan_bound + 5s);
    double ended_s = seconds_since(killed);
    WARN("the move ended in the log " << ended_s << " s after its source was killed: " << row.dump());
    INFO(row.dump() << "\n" << lines_with(c, "move.orphan"));
    REQUIRE(row.value("log_state", "") == "done");
    CHECK(ended_s < std::chrono::duration<double>(orphan_bound).count());
    // The destination serves every acknowledged record and takes writes,
    // through itself and through the leader, with the source still down.
    REQUIRE(wait_until([&] { return who_serves(c.client(dst), topic, 0).first == 200; }, 5s));
    CHECK(who_serves(c.client(roles.dst == dst ? leader : roles.dst), topic, 0) == std::make_pair(421, to));
    auto served = read_partition(c.client(dst), topic, 0);
    CHECK(served.log_start == 500);  // the source's deletion holds on the destination
    CHECK(count_loss(acked, served).ok());
    for (auto i : {roles.leader, roles.dst}) {
      auto a = produce_one(c.client(i), topic, 0, topic + "-after-" + c.id(i), acked);
      INFO("produce through " << c.id(i) << ": " << a.raw);
      CHECK(a.status == 200);
    }
    // The source restarted agrees: its journal ends the move done and it
    // serves nothing of the partition.
    c.restart(src);
    auto own = wait_move(c.admin(src), topic, 0, from, {}, recovery_bound);
    INFO(own.dump());
    CHECK(own.value("state", "") == "done");
    CHECK(serving_count(c, topic, 0) == 1);
    CHECK(count_loss(acked, read_partition(c.client(dst), topic, 0)).ok());
  }
  if (!caught)
    FAIL("the source never reached offsets with its entry in the log in 5 attempts");
}

}  // namespace

TEST_CASE("a source gone for good after its drain: the Raft leader has the destination confirm and the move ends done",
          "[node][metadata][raft][scenario]") {
  source_gone_after_drain(false);
}

TEST_CASE("a source gone for good after its drain into the Raft leader: the leader confirms itself and the move ends done",
          "[node][metadata][raft][scenario]") {
  source_gone_after_drain(true);
}

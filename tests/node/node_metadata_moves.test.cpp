// Partition moves on three real moonmq-node processes with the metadata log
// (Cluster.Raft.Enabled, ElectionTimeoutMs 1000, HeartbeatMs 100;
// docs/metadata.md, docs/cluster.md "The MOVE protocol"):
//  - a topic's first move to a broker that does not hold it: while the
//    destination learns the topic, produce sent through it for any partition
//    still reaches the owner named by the Raft table, so no acknowledged
//    record is lost and the move ends done;
//  - the Raft leader killed while a move between two other brokers copies:
//    the move still ends (done or failed) and the partition takes writes;
//  - the source killed in each step of a move (copying, cutover/draining,
//    offsets) and restarted: its recovery rule ends the move, later moves
//    run, the partition takes writes and keeps every acknowledged record;
//  - a copying move cancelled through a broker that is neither its source
//    nor its destination.
// Every acknowledged record must be found at its acknowledged offset (same
// key and value) on the broker that owns the partition afterwards.

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <optional>
#include <sstream>

#include "tests/node/metadata_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;


// --- a topic's first move to a broker that does not hold it -------------------

/// How many topics are created and moved, one after the other.
constexpr int race_trials = 20;
constexpr int race_partitions = 6;

TEST_CASE("a topic's first move to a broker that does not hold it loses no acknowledged record",
          "[node][metadata][raft][scenario]") {
  // Each trial is a fresh topic, so every move is the topic's first to b3.
  // The Raft table names b1 the owner of every partition of race<n>, and b3
  // the owner of partition 0 only from the move's cutover on: a produce that
  // b3 takes for a partition it does not own (any other partition, or
  // partition 0 before the cutover) must reach b1; acknowledged into a copy
  // of b3's own it would be lost, and the move, finding b3 serving its own
  // copy, would be refused (409 destination_owns_partition).
  move_cluster c{{"b1", "b2", "b3"}, raft_config()};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  const std::vector<int> through_b3{0, 1, 2};

  size_t total_acked = 0;
  int total_lost = 0, total_duplicated = 0, total_double = 0, moves_not_done = 0, split = 0,
      unroutable = 0;
  std::vector<std::string> move_errors;
  auto t_all = clock_type::now();
  for (int trial = 1; trial <= race_trials; ++trial) {
    auto topic = "race" + std::to_string(trial);
    create_topic(c.client(0), topic, race_partitions);
    // Partition 0 through its owner b1 and through b3; partitions 1 and 2 through b3.
    std::vector<std::pair<int, std::unique_ptr<producer>>> prods;
    prods.emplace_back(0, std::make_unique<producer>(c.client(0), topic, 0, 5, topic + "-b1-p0"));
    for (int p : through_b3)
      prods.emplace_back(p, std::make_unique<producer>(c.client(2), topic, p, 5, topic + "-b3-p" + std::to_string(p)));
    auto attempts = [&](const producer& p) { return p.ok_requests() + p.failed_requests(); };
    REQUIRE(wait_until([&] {
      for (auto& [p, pr] : prods)
        if (attempts(*pr) < 2)
          return false;
      return true;
    }, 10s));

    auto t_move = clock_type::now();
    auto sub = submit_move(c.admin(0), topic, 0, "b3");
    std::string state, error;
    if (sub["accepted"].size() == 1 && sub["accepted"][0].value("state", "") != "done") {
      auto row = wait_move(c.admin(0), topic, 0, "b1", {}, 30s);
      state = row.is_null() ? "not finished within 30 s" : row.value("state", "");
      error = row.is_null() ? latest_row(c.admin(0), topic, 0, "b1").dump() : row.value("error", "");
    } else if (sub["accepted"].size() == 1) {
      state = "no-op";  // b1's survey already named b3 the owner: it never was
      error = sub.dump();
    } else {
      state = "rejected";
      error = sub.dump();
    }
    double move_s = seconds_since(t_move);
    // Every producer gets a few more answers after the move ended.
    std::vector<int> at_end;
    for (auto& [p, pr] : prods)
      at_end.push_back(attempts(*pr));
    wait_until([&] {
      for (size_t k = 0; k < prods.size(); ++k)
        if (attempts(*prods[k].second) < at_end[k] + 3)
          return false;
      return true;
    }, 10s);
    for (auto& [p, pr] : prods)
      pr->stop();

    std::ostringstream line;
    line << "trial " << trial << ": move " << state << " in " << move_s << " s" << (error.empty() ? "" : " (" + error + ")");
    if (state != "done") {
      ++moves_not_done;
      if (move_errors.size() < 5)
        move_errors.push_back(topic + "/0: " + state + " " + error);
    }
    for (int p : through_b3) {
      // Each producer's acknowledgements are checked on their own: two
      // producers told the same offset for different records is a double
      // ack, and at most one of the two records can be there.
      std::map<int64_t, sent_record> acked;
      std::vector<std::map<int64_t, sent_record>> per_producer;
      int doubles = 0, ok = 0, failed = 0;
      std::string first_error;
      for (auto& [pp, pr] : prods)
        if (pp == p) {
          per_producer.push_back(pr->acked());
          doubles += merge_acked(acked, per_producer.back()) + static_cast<int>(pr->double_acks().size());
          ok += pr->ok_requests();
          failed += pr->failed_requests();
          if (first_error.empty() && !pr->errors().empty())
            first_error = pr->errors().back().substr(0, 160);
        }
      auto owner = owner_seen_by(c, 0, topic, p);
      if (!owner) {
        line << "; p" << p << ": b1 names no owner";
        ++unroutable;
        continue;
      }
      auto read = read_partition(c.client(*owner), topic, p);
      loss l;
      for (const auto& a : per_producer)
        l += count_loss(a, read);
      int serving = serving_count(c, topic, p);
      if (serving > 1)
        ++split;
      total_acked += l.acked;
      total_lost += l.lost();
      total_duplicated += l.duplicated;
      total_double += doubles;
      line << "; p" << p << " (owner " << c.id(*owner) << ", " << serving << " serving, requests ok " << ok
           << " failed " << failed << "): " << l.text() << ", double acks " << doubles;
      if (!l.ok() && !first_error.empty())
        line << ", last producer error " << first_error;
    }
    WARN(line.str());
  }
  WARN(race_trials << " trials in " << seconds_since(t_all) << " s: moves not done " << moves_not_done
                   << ", acknowledged " << total_acked << ", lost " << total_lost
                   << ", duplicated " << total_duplicated << ", double acks " << total_double
                   << ", partitions served by two brokers " << split << ", partitions b1 routes nowhere "
                   << unroutable);
  std::string errors;
  for (const auto& e : move_errors)
    errors += e + "\n";
  INFO("first moves not done:\n" << errors);
  CHECK(moves_not_done == 0);
  CHECK(total_lost == 0);
  CHECK(total_duplicated == 0);
  CHECK(total_double == 0);
  CHECK(split == 0);
  CHECK(unroutable == 0);
}

// --- the Raft leader killed mid-copy --------------------------------------------

TEST_CASE("moves end after the Raft leader is killed mid-copy", "[node][metadata][raft][scenario]") {
  // The move runs between two followers under the leader's term. The leader
  // dies while the partition copies; a new leader is elected at a higher
  // term and the old one comes back as a follower. The move's later owner
  // changes are proposals to whoever leads then, so the move must still end
  // (done, or failed and rolled back), and the partition must take writes
  // with every acknowledged record in place.
  move_cluster c{{"b1", "b2", "b3"}, raft_config(throttled())};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  auto leader = elected->first;
  auto [src, dst] = followers(leader);
  INFO("leader " << c.id(leader) << " at term " << elected->second << ", move " << c.id(src) << " -> " << c.id(dst));

  create_topic(c.client(src), "lk", 1);
  auto acked = fill(c.client(src), "lk", 0, 8000, 500, 450, "lk");  // ~3.6 MB: ~3.5 s of copying
  std::optional<producer> prod;
  prod.emplace(c.client(src), "lk", 0, 5, "lk-live");
  auto sub = submit_move(c.admin(src), "lk", 0, c.id(dst));
  INFO(sub.dump());
  REQUIRE(sub["accepted"].size() == 1);
  wait_copied(c, src, "lk", 0, c.id(src), 128 * 1024, 20s);

  c.kill(leader);
  auto t_kill = clock_type::now();
  auto next = agreed_leader(c, {src, dst}, elected->second, 4 * election_bound);
  if (next)
    WARN("new leader " << c.id(next->first) << " at term " << next->second << " " << seconds_since(t_kill)
                       << " s after the kill");
  else
    WARN("no new leader among the other two within " << (4 * election_bound).count() << " ms");
  c.restart(leader);

  auto row = wait_move(c.admin(src), "lk", 0, c.id(src), {}, 45s);
  double end_s = seconds_since(t_kill);
  prod->stop();
  int doubles = merge_acked(acked, prod->acked()) + static_cast<int>(prod->double_acks().size());
  if (row.is_null()) {
    std::map<int64_t, sent_record> ignored;
    std::ostringstream produce;
    for (size_t i = 0; i < 3; ++i) {
      auto a = produce_one(c.client(i), "lk", 0, "lk-stuck-" + c.id(i), ignored, 1s);
      produce << c.id(i) << ": " << a.status << " " << a.raw.substr(0, 200) << "\n";
    }
    FAIL("the move did not end within 45 s of the leader's kill; last row "
         << latest_row(c.admin(src), "lk", 0, c.id(src)).dump() << "\nproduce now:\n" << produce.str() << "\n"
         << log_tails(c));
  }
  WARN("move ended " << row.value("state", "") << " " << end_s << " s after the leader was killed: " << row.dump());
  CHECK((row["state"] == "done" || row["state"] == "failed"));

  // Writes: through the source and the destination (both hold the topic)
  // and through the restarted leader.
  for (auto i : {src, dst, leader}) {
    auto a = produce_one(c.client(i), "lk", 0, "lk-after-" + c.id(i), acked);
    INFO("produce through " << c.id(i) << ": " << a.status << " " << a.raw);
    CHECK(a.status == 200);
  }
  auto owner = owner_seen_by(c, src, "lk", 0);
  REQUIRE(owner);
  CHECK(*owner == (row["state"] == "done" ? dst : src));
  auto l = count_loss(acked, read_partition(c.client(*owner), "lk", 0));
  WARN("owner " << c.id(*owner) << ": " << l.text() << ", producer requests ok " << prod->ok_requests() << " failed "
                << prod->failed_requests() << ", double acks " << doubles);
  CHECK(l.ok());
  CHECK(doubles == 0);
  INFO(lines_with(c, "move.journal_failed"));
  CHECK_FALSE(has_journal_failure(c));
}

// --- the source killed in each step of a move ------------------------------------

namespace {

enum class step { copying, cutover_or_draining, offsets };

const char* name_of(step s) {
  return s == step::copying ? "copying" : s == step::cutover_or_draining ? "cutover/draining" : "offsets";
}

bool in_step(step s, const std::string& state) {
  switch (s) {
  case step::copying: return state == "copying";
  case step::cutover_or_draining: return state == "cutover" || state == "draining";
  case step::offsets: return state == "offsets";
  }
  return false;
}

/// Moves partition 0 of a fresh topic from one follower to the other and
/// SIGKILLs the source as soon as its journal shows step `s` (the state in
/// the source's journal file after the kill decides whether it was caught;
/// up to `attempts` topics), restarts it, and checks what must hold after
/// any kill: the move ends done or failed, no journal write is refused,
/// another move of the same source runs to done, the partition takes writes
/// through the source and the destination, and no acknowledged record is
/// lost.
void source_killed_in(step s, int attempts) {
  bool copying = s == step::copying;
  move_cluster c{{"b1", "b2", "b3"}, raft_config(copying ? throttled() : std::vector<std::string>{})};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  auto [src, dst] = followers(elected->first);
  const std::string from = c.id(src), to = c.id(dst);
  bool caught = false;
  for (int attempt = 0; attempt < attempts && !caught; ++attempt) {
    auto topic = std::string("sk-") + (copying ? "c" : s == step::offsets ? "o" : "d") + std::to_string(attempt);
    INFO("attempt " << attempt << ": " << topic << " " << from << " -> " << to << ", leader " << c.id(elected->first));
    create_topic(c.client(src), topic, 2);
    // Copying: ~3 MB at ~1 MB/s. Later steps: ~10 MB unthrottled, so that
    // the confirm's fsync on the destination takes a while.
    auto acked = copying ? fill(c.client(src), topic, 0, 6000, 500, 450, topic)
                         : fill(c.client(src), topic, 0, 10000, 1000, 1000, topic);
    auto other = fill(c.client(src), topic, 1, 50, 50, 100, topic + "-p1");
    std::optional<producer> prod;
    prod.emplace(c.client(src), topic, 0, 5, topic + "-live");
    if (s == step::offsets) {
      // No tail to drain: the producer stops before the move, so the move
      // passes cutover and draining at once and stays in offsets for the
      // destination's fsync of the copy and the confirm's owner change.
      REQUIRE(wait_until([&] { return prod->ok_requests() >= 20; }, 10s));
      prod->stop();
    }
    // A committed group offset of the partition travels with it, even when
    // the source dies while pushing it (recovery pushes it again).
    const std::string group = topic + "-g";
    auto committed = call(c.client(src), "POST", "/v1/groups/" + group + "/offsets",
                          json{{"offsets", {{{"topic", topic}, {"partition", 0}, {"offset", 17}}}}}.dump());
    INFO(committed.raw);
    REQUIRE(committed.status == 200);
    auto sub = submit_move(c.admin(src), topic, 0, to);
    INFO(sub.dump());
    REQUIRE(sub["accepted"].size() == 1);

    std::string seen;
    bool killed = false;  // already, with the destination frozen (step::offsets)
    if (copying) {
      wait_copied(c, src, topic, 0, from, 128 * 1024, 20s);
      seen = "copying";
    } else {
      // The source's own journal, polled every millisecond; anything past
      // the wanted step means it was missed.
      auto deadline = clock_type::now() + 30s;
      bool frozen = false;
      while (clock_type::now() < deadline) {
        auto row = local_row(c, src, topic, 0);
        seen = row.is_object() ? row.value("state", "") : "";
        if (s == step::offsets && !frozen && (seen == "cutover" || seen == "draining")) {
          // Freeze the destination before the offsets step (see below).
          c.signal(dst, SIGSTOP);
          frozen = true;
          continue;
        }
        if (in_step(s, seen) || is_terminal(seen) || (s == step::cutover_or_draining && seen == "offsets"))
          break;
        std::this_thread::sleep_for(1ms);
      }
      if (frozen && in_step(s, seen)) {
        // The push is sent and waits in the frozen destination's socket
        // buffer. Both die: the source with the push unanswered, the
        // destination before reading it, so only a push the restarted
        // source sends again can bring the offsets over.
        std::this_thread::sleep_for(200ms);
        c.kill(src);
        c.kill(dst);
        c.restart(dst);
        killed = true;
      } else if (frozen) {
        c.signal(dst, SIGCONT);
      }
      WARN("destination frozen before the offsets step: " << (frozen ? "yes" : "no"));
    }
    if (!in_step(s, seen)) {
      // Missed: let the move end undisturbed and try a fresh topic.
      auto row = wait_move(c.admin(src), topic, 0, from, {}, 30s);
      prod->stop();
      WARN("attempt " << attempt << ": polled " << (seen.empty() ? "nothing" : seen) << ", not " << name_of(s)
                      << "; the move ended " << row.dump());
      // Nothing was killed: with every broker up the move must end done.
      INFO("undisturbed move of " << topic << "/0: " << row.dump());
      CHECK(row.value("state", "") == "done");
      continue;
    }
    if (!killed)
      c.kill(src);
    prod->stop();
    int doubles = merge_acked(acked, prod->acked()) + static_cast<int>(prod->double_acks().size());
    // The journal file as the killed source left it: the step it died in.
    auto at_kill = journal_on_disk(c, src, topic, 0);
    auto killed_in = at_kill.is_object() ? at_kill.value("state", "") : "";
    // In the offsets step only a kill with the destination frozen counts:
    // it is the one that cuts off the offsets push.
    caught = in_step(s, killed_in) && (s != step::offsets || killed);
    WARN("attempt " << attempt << ": polled " << seen << ", " << from << " killed with its journal at "
                    << (killed_in.empty() ? "no row" : killed_in) << (caught ? "" : " (not the wanted step)"));

    c.restart(src);
    auto t_restart = clock_type::now();
    auto row = wait_move(c.admin(src), topic, 0, from, {}, recovery_bound);
    if (row.is_null()) {
      std::map<int64_t, sent_record> ignored;
      std::ostringstream produce;
      for (size_t i = 0; i < 3; ++i) {
        auto a = produce_one(c.client(i), topic, 0, topic + "-stuck-" + c.id(i), ignored, 1s);
        produce << c.id(i) << ": " << a.status << " " << a.raw.substr(0, 200) << "\n";
      }
      FAIL("killed in " << killed_in << ": the move did not end within " << recovery_bound.count()
                        << " s of the restart; last row "
                        << latest_row(c.admin(src), topic, 0, from).dump() << "\njournal_failed lines:\n"
                        << lines_with(c, "move.journal_failed") << "produce now:\n" << produce.str() << log_tails(c));
    }
    WARN("killed in " << killed_in << ": the move ended " << row.value("state", "") << " "
                      << seconds_since(t_restart) << " s after the restart: " << row.dump());
    CHECK((row["state"] == "done" || row["state"] == "failed"));
    {
      INFO(lines_with(c, "move.journal_failed"));
      CHECK_FALSE(has_journal_failure(c));
    }

    // Writes through the source and the destination.
    for (auto i : {src, dst}) {
      auto a = produce_one(c.client(i), topic, 0, topic + "-after-" + c.id(i), acked);
      INFO("produce through " << c.id(i) << ": " << a.status << " " << a.raw);
      CHECK(a.status == 200);
    }
    auto owner = owner_seen_by(c, src, topic, 0);
    REQUIRE(owner);
    CHECK(*owner == (row["state"] == "done" ? dst : src));
    CHECK(serving_count(c, topic, 0) == 1);
    auto l = count_loss(acked, read_partition(c.client(*owner), topic, 0));
    WARN("killed in " << killed_in << ": owner " << c.id(*owner) << ": " << l.text() << ", double acks " << doubles);
    CHECK(l.ok());
    CHECK(doubles == 0);
    auto offsets = call(c.client(dst), "GET", "/v1/groups/" + group + "/offsets?topic=" + topic);
    INFO("committed offsets after the move: " << offsets.raw);
    CHECK(offsets.status == 200);
    CHECK(offsets.raw.find("\"offset\":17") != std::string::npos);

    // A later move of the same source is not held back by the first one.
    auto later = submit_move(c.admin(src), topic, 1, to);
    INFO(later.dump());
    CHECK(later["accepted"].size() == 1);
    if (later["accepted"].size() == 1) {
      auto t_later = clock_type::now();
      auto done = wait_move(c.admin(src), topic, 1, from, {}, 30s);
      auto last = done.is_null() ? latest_row(c.admin(src), topic, 1, from) : done;
      WARN("killed in " << killed_in << ": the later move of " << topic << "/1 "
                        << (done.is_null() ? "did not end within 30 s" : "ended") << " after "
                        << seconds_since(t_later) << " s: " << last.dump());
      CHECK(done.value("state", "") == "done");
      if (done.value("state", "") == "done")
        CHECK(count_loss(other, read_partition(c.client(dst), topic, 1)).ok());
    }
  }
  if (!caught)
    FAIL("the source was never killed in " << name_of(s) << " in " << attempts << " attempts");
}

}  // namespace

TEST_CASE("the source killed while a move copies and restarted ends the move and keeps every record",
          "[node][metadata][raft][scenario]") {
  source_killed_in(step::copying, 1);
}

TEST_CASE("the source killed in a move's cutover or drain and restarted ends the move and keeps every record",
          "[node][metadata][raft][scenario]") {
  source_killed_in(step::cutover_or_draining, 6);
}

TEST_CASE("the source killed while a move pushes offsets and confirms and restarted ends the move and keeps every record",
          "[node][metadata][raft][scenario]") {
  source_killed_in(step::offsets, 6);
}

// --- cancel from any broker ---------------------------------------------------------

TEST_CASE("a copying move cancelled through a broker that is neither its source nor its destination ends cancelled",
          "[node][metadata][raft][scenario]") {
  // DELETE /admin/reassignments/{t}/{p} finds the unfinished move wherever
  // it runs (docs/admin-api.md), so the broker asked need not be involved.
  move_cluster c{{"b1", "b2", "b3"}, raft_config(throttled())};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "cx", 1);
  auto acked = fill(c.client(0), "cx", 0, 6000, 500, 450, "cx");  // ~3 MB: ~3 s of copying
  auto sub = submit_move(c.admin(0), "cx", 0, "b2");
  INFO(sub.dump());
  REQUIRE(sub["accepted"].size() == 1);
  auto copying = wait_copied(c, 0, "cx", 0, "b1", 128 * 1024, 20s);
  REQUIRE(copying["bytes_copied"].get<int64_t>() < copying["bytes_total"].get<int64_t>());

  auto cancel = call(c.admin(2), "DELETE", "/admin/reassignments/cx/0");
  WARN("DELETE through b3: " << cancel.status << " " << cancel.raw);
  INFO(log_tails(c));
  CHECK(cancel.status >= 200);
  CHECK(cancel.status < 300);
  auto row = wait_terminal(c, 0, "cx", 0, "b1", 30s);
  WARN("the move ended " << row.dump());
  CHECK(row["state"] == "cancelled");

  // Cancelled before cutover: b1 still owns and serves every record.
  auto owner = owner_seen_by(c, 0, "cx", 0);
  REQUIRE(owner);
  CHECK(*owner == (row["state"] == "done" ? 1u : 0u));
  CHECK(count_loss(acked, read_partition(c.client(*owner), "cx", 0)).ok());
}

// --- moves started during an election ---------------------------------------------

TEST_CASE("moves submitted while the Raft leader is being replaced end done", "[node][metadata][raft][scenario]") {
  // Right after the leader dies the source may still name the old term
  // while the destination already follows the new one: its first request
  // (ensure) is refused as stale until the source catches up. That refusal
  // is retried, so the move goes on instead of failing.
  move_cluster c{{"b1", "b2", "b3"}, raft_config()};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  auto [src, dst] = followers(elected->first);
  constexpr int partitions = 6;
  create_topic(c.client(src), "el", partitions);
  std::map<int, std::map<int64_t, sent_record>> acked;
  for (int p = 0; p < partitions; ++p)
    acked[p] = fill(c.client(src), "el", p, 40, 20, 100, "el" + std::to_string(p));
  c.kill(elected->first);
  // One move every 300 ms across the election: some start while the two
  // survivors disagree on the term.
  for (int p = 0; p < partitions; ++p) {
    json body{{"version", 1}, {"partitions", {{{"topic", "el"}, {"partition", p}, {"replicas", {c.id(dst)}}}}}};
    answer a;
    bool accepted = wait_until([&] {
      a = call(c.admin(src), "POST", "/admin/reassignments", body.dump());
      return a.status == 202 && a.body["accepted"].size() == 1;
    }, 4 * election_bound);
    INFO("move of el/" << p << ": " << a.raw);
    CHECK(accepted);
    std::this_thread::sleep_for(300ms);
  }
  for (int p = 0; p < partitions; ++p) {
    auto row = wait_move(c.admin(src), "el", p, c.id(src), {}, 30s);
    INFO("el/" << p << ": " << row.dump() << "\n" << lines_with(c, "move.ensure_retry"));
    CHECK(row.value("state", "") == "done");
    if (row.value("state", "") == "done")
      CHECK(count_loss(acked[p], read_partition(c.client(dst), "el", p)).ok());
  }
  WARN("ensure retries: " << lines_with(c, "move.ensure_retry", 20));
}

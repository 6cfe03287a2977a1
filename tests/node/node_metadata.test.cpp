// Cluster metadata and moves on three real moonmq-node processes with the
// Raft controller (Cluster.Raft.Enabled, ElectionTimeoutMs 1000, HeartbeatMs
// 100; docs/raft.md, docs/cluster.md "The MOVE protocol"):
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
//    nor its destination;
//  - a topic created on one broker is known to every broker: listed,
//    produced to and fetched through another.
// Every acknowledged record must be found at its acknowledged offset (same
// key and value) on the broker that owns the partition afterwards.

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <optional>
#include <sstream>

#include "tests/node/move_checks.hpp"
#include "tests/node/move_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

constexpr int election_timeout_ms = 1000;

/// 3 x ElectionTimeoutMs: how long electing a controller may take.
constexpr std::chrono::milliseconds election_bound{3 * election_timeout_ms};

/// How long a move may take to end after its source restarted: its recovery
/// re-applies an owner change (answered at once while no leader is known,
/// then retried) and talks to the destination, each bounded by
/// Cluster.PeerTimeout (2 s here); the rest is slack for a loaded machine.
/// A proposal answer lost inside the broker shows up as a 30 s stall (the
/// reassigner's local timeout), which this bound catches.
constexpr std::chrono::seconds recovery_bound{15};

std::vector<std::string> raft_config(std::vector<std::string> extra = {}) {
  std::vector<std::string> out{"Cluster.Raft.Enabled=true",
                               "Cluster.Raft.ElectionTimeoutMs=" + std::to_string(election_timeout_ms),
                               "Cluster.Raft.HeartbeatMs=100"};
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

/// A copy rate of ~1 MB/s in 64 KiB batches: a few MB copy for a few seconds.
std::vector<std::string> throttled() {
  return {"Cluster.MoveThrottleBytesPerSec=1000000", "Cluster.BatchBytes=65536"};
}

/// Starts every broker of `c` at once, then waits for each to be ready.
void start_all(move_cluster& c, size_t n = 3) {
  for (size_t i = 0; i < n; ++i)
    c.launch(i);
  for (size_t i = 0; i < n; ++i)
    c.wait_ready(i);
}


/// The index of broker `id` in a 3-broker cluster (nullopt when unknown).
std::optional<size_t> index_of(const move_cluster& c, const std::string& id) {
  for (size_t i = 0; i < 3; ++i)
    if (c.id(i) == id)
      return i;
  return std::nullopt;
}

/// The owner of topic/partition as broker `asked` routes it: itself when it
/// serves a fetch (200), the broker its 421 names otherwise.
std::optional<size_t> owner_seen_by(const move_cluster& c, size_t asked, const std::string& topic, int partition) {
  auto [status, owner] = who_serves(c.client(asked), topic, partition);
  if (status == 200)
    return asked;
  if (status == 421)
    return index_of(c, owner);
  return std::nullopt;
}

/// How many of the three brokers serve a fetch of topic/partition themselves (200).
int serving_count(const move_cluster& c, const std::string& topic, int partition) {
  int n = 0;
  for (size_t i = 0; i < 3; ++i)
    n += who_serves(c.client(i), topic, partition).first == 200 ? 1 : 0;
  return n;
}

/// The row of topic/partition in broker `i`'s journal file as it is on disk
/// (the last one; null when none or unreadable). Read while `i` is down, it
/// is the state the move was in when the broker died.
json journal_on_disk(const move_cluster& c, size_t i, const std::string& topic, int partition) {
  auto doc = json::parse(read_text(c.data_dir(i) + "/reassign-journal.json"), nullptr, false);
  json row;
  if (doc.is_object() && doc["moves"].is_array())
    for (auto& m : doc["moves"])
      if (m.value("topic", "") == topic && m.value("partition", -1) == partition)
        row = m;
  return row;
}

/// The newest row of topic/partition in broker `i`'s own journal
/// (GET /cluster/moves on its cluster port: local, no survey of the peers).
json local_row(const move_cluster& c, size_t i, const std::string& topic, int partition) {
  auto a = cluster_call(c.cluster_port(i), "GET", "/cluster/moves");
  json row;
  if (a.body.is_object() && a.body["moves"].is_array())
    for (auto& m : a.body["moves"])
      if (m.value("topic", "") == topic && m.value("partition", -1) == partition)
        row = m;
  return row;
}

/// Adds `from` to `into`; returns how many offsets `into` already held for
/// another record (one offset acknowledged for two records: a double ack).
int merge_acked(std::map<int64_t, sent_record>& into, const std::map<int64_t, sent_record>& from) {
  int clashes = 0;
  for (const auto& [off, rec] : from) {
    auto [it, fresh] = into.emplace(off, rec);
    if (!fresh && (it->second.key != rec.key || it->second.value != rec.value))
      ++clashes;
  }
  return clashes;
}

/// Acknowledged records against a partition as read. A record is lost when
/// it is not at its acknowledged offset: the offset is missing, or another
/// record sits there. An acknowledged key at two offsets is a duplicate.
struct loss {
  size_t acked = 0;
  int missing = 0;
  int replaced = 0;
  int duplicated = 0;
  int64_t first_bad = -1;
  int64_t log_end = -1;
  int lost() const { return missing + replaced; }
  bool ok() const { return lost() == 0 && duplicated == 0; }
  loss& operator+=(const loss& o) {
    acked += o.acked;
    missing += o.missing;
    replaced += o.replaced;
    duplicated += o.duplicated;
    if (first_bad < 0)
      first_bad = o.first_bad;
    log_end = std::max(log_end, o.log_end);
    return *this;
  }
  std::string text() const {
    std::ostringstream o;
    o << "acked " << acked << ", lost " << lost() << " (" << missing << " missing, " << replaced
      << " with another record at the offset), duplicated " << duplicated << ", log end " << log_end
      << (first_bad >= 0 ? ", first bad offset " + std::to_string(first_bad) : "");
    return o.str();
  }
};

loss count_loss(const std::map<int64_t, sent_record>& acked, const partition_read& now) {
  loss l;
  l.acked = acked.size();
  l.log_end = now.log_end;
  std::set<std::string> keys;
  for (const auto& [off, rec] : acked) {
    keys.insert(rec.key);
    auto it = now.records.find(off);
    bool bad = false;
    if (it == now.records.end()) {
      ++l.missing;
      bad = true;
    } else if (as_sent(it->second).key != rec.key || as_sent(it->second).value != rec.value) {
      ++l.replaced;
      bad = true;
    }
    if (bad && l.first_bad < 0)
      l.first_bad = off;
  }
  std::map<std::string, int> seen;
  for (const auto& [off, r] : now.records) {
    auto key = as_sent(r).key;
    if (keys.count(key) && ++seen[key] == 2)
      ++l.duplicated;
  }
  return l;
}

/// Produces one record to topic/partition through `client` (acks=leader),
/// retrying every 50 ms until it is acknowledged or `timeout` passes (a
/// partition may stall briefly around a move's end). Adds it to `acked` and
/// returns the last answer.
answer produce_one(uint16_t client, const std::string& topic, int partition, const std::string& key,
                   std::map<int64_t, sent_record>& acked, std::chrono::milliseconds timeout = 10s) {
  sent_record rec{key, key + "-value"};
  json body{{"records", {{{"key", rec.key}, {"value", rec.value}, {"partition", partition}}}}};
  auto deadline = clock_type::now() + timeout;
  answer a;
  for (;;) {
    a = call(client, "POST", "/v1/topics/" + topic + "/records?acks=leader", body.dump());
    if (a.status == 200 && a.body.is_object() && a.body["offsets"].is_array() && a.body["offsets"].size() == 1) {
      acked[a.body["offsets"][0]["offset"].get<int64_t>()] = rec;
      return a;
    }
    if (clock_type::now() >= deadline)
      return a;
    std::this_thread::sleep_for(50ms);
  }
}

/// The brokers other than the leader `leader`, in index order.
std::pair<size_t, size_t> followers(size_t leader) {
  std::vector<size_t> out;
  for (size_t i = 0; i < 3; ++i)
    if (i != leader)
      out.push_back(i);
  return {out[0], out[1]};
}

bool has_journal_failure(const move_cluster& c) { return c.all_logs().find("move.journal_failed") != std::string::npos; }

/// The log lines of every broker that contain `needle` (at most `max`).
std::string lines_with(const move_cluster& c, const std::string& needle, size_t max = 6) {
  std::istringstream in(c.all_logs());
  std::string line, out;
  size_t n = 0;
  while (n < max && std::getline(in, line))
    if (line.find(needle) != std::string::npos) {
      out += line + "\n";
      ++n;
    }
  return out;
}

}  // namespace

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
    auto sub = submit_move(c.admin(src), topic, 0, to);
    INFO(sub.dump());
    REQUIRE(sub["accepted"].size() == 1);

    std::string seen;
    if (copying) {
      wait_copied(c, src, topic, 0, from, 128 * 1024, 20s);
      seen = "copying";
    } else {
      // The source's own journal, polled every millisecond; anything past
      // the wanted step means it was missed.
      auto deadline = clock_type::now() + 30s;
      while (clock_type::now() < deadline) {
        auto row = local_row(c, src, topic, 0);
        seen = row.is_object() ? row.value("state", "") : "";
        if (in_step(s, seen) || is_terminal(seen) || (s == step::cutover_or_draining && seen == "offsets"))
          break;
        std::this_thread::sleep_for(1ms);
      }
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
    c.kill(src);
    prod->stop();
    int doubles = merge_acked(acked, prod->acked()) + static_cast<int>(prod->double_acks().size());
    // The journal file as the killed source left it: the step it died in.
    auto at_kill = journal_on_disk(c, src, topic, 0);
    auto killed_in = at_kill.is_object() ? at_kill.value("state", "") : "";
    caught = in_step(s, killed_in);
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

// --- a topic created on one broker is visible on the others ----------------------------

TEST_CASE("a topic created on b1 is visible on b2", "[node][metadata][raft][scenario]") {
  // A topic is cluster metadata: once b1 answered its creation, every broker
  // lists it, takes produce for each of its partitions (forwarding it to the
  // owner) and sends fetches to the owner.
  constexpr int partitions = 3;
  move_cluster c{{"b1", "b2", "b3"}, raft_config()};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "seen", partitions);

  for (size_t via : {size_t{1}, size_t{2}}) {
    INFO("through " << c.id(via));
    json listed;
    bool visible = wait_until([&] {
      auto a = call(c.client(via), "GET", "/v1/topics");
      listed = a.body;
      if (a.status != 200 || !a.body.is_object() || !a.body["topics"].is_array())
        return false;
      for (auto& t : a.body["topics"])
        if (t.value("name", "") == "seen")
          return t.value("partitions", -1) == partitions;
      return false;
    }, 5s);
    INFO("GET /v1/topics: " << listed.dump());
    CHECK(visible);

    for (int p = 0; p < partitions; ++p) {
      std::map<int64_t, sent_record> acked;
      auto a = produce_one(c.client(via), "seen", p, "seen-" + c.id(via) + "-p" + std::to_string(p), acked, 2s);
      INFO("produce to seen/" << p << ": " << a.status << " " << a.raw);
      CHECK(a.status == 200);
      if (a.status != 200)
        continue;
      // Fetch through the same broker, following a 421 to the owner it names.
      auto target = "/v1/topics/seen/partitions/" + std::to_string(p) + "/records?offset="
                    + std::to_string(acked.begin()->first) + "&max_records=1";
      auto f = call(c.client(via), "GET", target);
      if (f.status == 421 && f.body.is_object() && f.body["owner"].is_string()) {
        auto owner = index_of(c, f.body["owner"].get<std::string>());
        INFO("421 names " << f.raw);
        REQUIRE(owner);
        f = call(c.client(*owner), "GET", target);
      }
      INFO("fetch of seen/" << p << " at " << acked.begin()->first << ": " << f.status << " " << f.raw);
      CHECK(f.status == 200);
      if (f.status == 200) {
        REQUIRE(f.body["records"].is_array());
        REQUIRE(f.body["records"].size() == 1);
        CHECK(f.body["records"][0]["offset"] == acked.begin()->first);
        CHECK(as_sent(f.body["records"][0]).key == acked.begin()->second.key);
        CHECK(as_sent(f.body["records"][0]).value == acked.begin()->second.value);
      }
    }
  }
}

// --- balancer settings at runtime, cluster-wide ------------------------------------------

namespace {

/// How many partitions of `topic` each broker owns, as broker `i` sees it.
std::map<std::string, int> owned_by(move_cluster& c, size_t i, const std::string& topic) {
  std::map<std::string, int> out;
  auto owners = cluster_call(c.cluster_port(i), "GET", "/cluster/owners").body;
  for (const auto& o : owners.value("owners", json::array()))
    if (o.value("topic", "") == topic)
      ++out[o.value("owner", "")];
  return out;
}

json balancer_settings(move_cluster& c, size_t i) {
  auto a = call(c.admin(i), "GET", "/admin/balancer");
  return a.body.is_object() ? a.body.value("settings", json::object()) : json::object();
}

}  // namespace

TEST_CASE("a DryRun balance loop goes live at runtime on every broker through the metadata log, and stays live "
          "across a restart",
          "[node][metadata][raft][balancer][scenario]") {
  // Every broker runs the loop in DryRun (configured); only the Raft leader
  // plans. PATCH /admin/balancer at a follower commits the change; every
  // broker shows it, the leader's next passes move, a restarted broker reads
  // it back from the log.
  auto config = raft_config();
  for (auto& a : autobalance(true, 1))
    config.push_back(a);
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "skew", 6);  // all six on b1
  std::this_thread::sleep_for(3s);       // passes run, in DryRun: nothing moves
  CHECK(owned_by(c, 0, "skew") == std::map<std::string, int>{{"b1", 6}});
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(balancer_settings(c, i).value("DryRun", false) == true);
  }

  // Bad patches change nothing.
  size_t follower = (elected->first + 1) % 3;
  for (const char* bad : {R"({"DryRun":"no"})", R"({"Bogus":1})", R"({})", R"([1])", R"({"IntervalSeconds":0})",
                          "not json"}) {
    auto a = call(c.admin(follower), "PATCH", "/admin/balancer", bad);
    INFO(bad << " -> " << a.raw);
    CHECK(a.status == 400);
  }

  auto live = call(c.admin(follower), "PATCH", "/admin/balancer", R"({"DryRun":false,"MoveThrottleBytesPerSec":0})");
  INFO(live.raw << "\n" << log_tails(c));
  REQUIRE(live.status == 200);
  CHECK(live.body["settings"]["DryRun"] == false);
  // Every broker applies it from the log, none restarted.
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return balancer_settings(c, i).value("DryRun", true) == false; }, 5s));
  }
  // The leader's loop now moves partitions off b1.
  bool moved = wait_until(
    [&] {
      auto counts = owned_by(c, 0, "skew");
      return counts["b1"] <= 3;
    },
    30s);
  INFO("owners " << json(owned_by(c, 0, "skew")).dump());
  CHECK(moved);

  // A broker restarted reads the settings back from the log.
  auto other = (elected->first + 2) % 3;
  c.stop(other);
  c.restart(other);
  CHECK(wait_until([&] { return balancer_settings(c, other).value("DryRun", true) == false; }, 10s));
  auto s = balancer_settings(c, other);
  INFO(s.dump());
  CHECK(s.value("Enabled", false) == true);
  CHECK(s.value("MoveThrottleBytesPerSec", int64_t{-1}) == 0);

  // Back to DryRun and a throttle, cluster-wide, through the restarted
  // broker once it knows the leader again (until then a proposal there is
  // 503 no_controller); a null removes a setting (the configured value
  // applies again).
  REQUIRE(agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound));
  // Through moonmqctl, as an operator would.
  auto ctl = [&](const std::string& args) {
    std::string out;
    auto cmd = program("moonmqctl") + " --admin-url 127.0.0.1:" + std::to_string(c.admin(other)) + " " + args + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;)
      out.append(buf, n);
    int rc = ::pclose(p);
    return std::make_pair(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out);
  };
  auto [bad_rc, bad_out] = ctl("balancer set Bogus=1");
  INFO(bad_out);
  CHECK(bad_rc == 1);
  auto [set_rc, set_out] = ctl("balancer set DryRun=true MoveThrottleBytesPerSec=4096");
  INFO(set_out);
  REQUIRE(set_rc == 0);
  CHECK(json::parse(set_out, nullptr, false).value("MoveThrottleBytesPerSec", 0) == 4096);
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until(
      [&] {
        auto st = balancer_settings(c, i);
        return st.value("DryRun", false) == true && st.value("MoveThrottleBytesPerSec", 0) == 4096;
      },
      5s));
  }
  auto reset = call(c.admin(follower), "PATCH", "/admin/balancer", R"({"MoveThrottleBytesPerSec":null})");
  REQUIRE(reset.status == 200);
  CHECK_FALSE(reset.body["settings"].contains("MoveThrottleBytesPerSec"));
  CHECK(wait_until([&] { return balancer_settings(c, follower).value("MoveThrottleBytesPerSec", -1) == 0; }, 5s));
  auto [show_rc, show_out] = ctl("balancer show");
  INFO(show_out);
  CHECK(show_rc == 0);
  auto shown = json::parse(show_out, nullptr, false);
  CHECK(shown["settings"].value("DryRun", false) == true);
  CHECK(shown["settings"].value("MoveThrottleBytesPerSec", -1) == 0);
}

// --- liveness: a silent broker is fenced, its partitions offline; back, unfenced ---

namespace {

json admin_cluster(move_cluster& c, size_t i) { return call(c.admin(i), "GET", "/admin/cluster").body; }

}  // namespace

TEST_CASE("a killed broker is fenced within SessionTimeoutMs plus a heartbeat, its partitions show offline, and "
          "restarted it is unfenced",
          "[node][metadata][raft][scenario]") {
  constexpr int session_timeout_ms = 2000;
  move_cluster c{{"b1", "b2", "b3"}, raft_config({"Cluster.Raft.SessionTimeoutMs=" + std::to_string(session_timeout_ms)})};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  auto victim = (elected->first + 1) % 3;
  auto watcher = (elected->first + 2) % 3;
  create_topic(c.client(victim), "lv", 3);  // every partition owned by the victim
  std::this_thread::sleep_for(std::chrono::milliseconds(session_timeout_ms + 500));
  auto view = admin_cluster(c, watcher);
  INFO(view.dump());
  CHECK(view["offline_partitions"].empty());  // a live broker is never fenced

  c.kill(victim);
  auto t0 = clock_type::now();
  json seen;
  bool fenced = wait_until(
    [&] {
      seen = admin_cluster(c, watcher);
      return seen.is_object() && seen["offline_partitions"].size() == 3;
    },
    std::chrono::milliseconds(session_timeout_ms + 100 + 3000));
  auto took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
  INFO(seen.dump() << "\n" << log_tails(c));
  REQUIRE(fenced);
  WARN(c.id(victim) << " fenced and its 3 partitions offline " << took_ms << " ms after the kill (SessionTimeoutMs "
                    << session_timeout_ms << ", heartbeat 100 ms)");
  CHECK(took_ms <= session_timeout_ms + 100 + 1500);  // + one heartbeat, + slack for a loaded machine
  CHECK(seen["fenced_brokers"] == json::array({c.id(victim)}));
  for (const auto& b : seen["brokers"])
    if (b["id"] == c.id(victim))
      CHECK(b["fenced"] == true);
  auto text = call(c.admin(elected->first), "GET", "/metrics").raw;
  CHECK(text.find("\nmoonmq_cluster_offline_partitions 3") != std::string::npos);
  // Produce for a fenced owner's partition fails; nothing is acknowledged.
  auto p = call(c.client(watcher), "POST", "/v1/topics/lv/records?acks=leader",
                R"({"records":[{"value":"x","partition":0}]})");
  INFO(p.raw);
  CHECK(p.status >= 500);

  c.restart(victim);
  bool back = wait_until(
    [&] {
      auto j = admin_cluster(c, watcher);
      return j.is_object() && j["offline_partitions"].empty() && j["fenced_brokers"].empty();
    },
    10s);
  CHECK(back);
  auto after = call(c.client(watcher), "POST", "/v1/topics/lv/records?acks=leader",
                    R"({"records":[{"value":"y","partition":0}]})");
  INFO(after.raw);
  CHECK(after.status == 200);
}

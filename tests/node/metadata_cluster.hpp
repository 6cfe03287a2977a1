#pragma once
// Shared by the metadata-log scenarios on three Raft brokers
// (node_metadata.test.cpp, node_metadata_moves.test.cpp, node_ctl.test.cpp): the cluster's Raft
// settings, where a partition is owned and served, the source's journal, and
// the acknowledged-record checks.

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>

#include "tests/node/move_checks.hpp"
#include "tests/node/move_cluster.hpp"

namespace moonmq::test::meta {

using namespace moonmq::test::move;
using namespace std::chrono_literals;


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

inline std::vector<std::string> raft_config(std::vector<std::string> extra = {}) {
  std::vector<std::string> out{"Cluster.Raft.Enabled=true",
                               "Cluster.Raft.ElectionTimeoutMs=" + std::to_string(election_timeout_ms),
                               "Cluster.Raft.HeartbeatMs=100"};
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

/// A copy rate of ~1 MB/s in 64 KiB batches: a few MB copy for a few seconds.
inline std::vector<std::string> throttled() {
  return {"Cluster.MoveThrottleBytesPerSec=1000000", "Cluster.BatchBytes=65536"};
}

/// Starts every broker of `c` at once, then waits for each to be ready.
inline void start_all(move_cluster& c, size_t n = 3) {
  for (size_t i = 0; i < n; ++i)
    c.launch(i);
  for (size_t i = 0; i < n; ++i)
    c.wait_ready(i);
}


/// The index of broker `id` in a 3-broker cluster (nullopt when unknown).
inline std::optional<size_t> index_of(const move_cluster& c, const std::string& id) {
  for (size_t i = 0; i < 3; ++i)
    if (c.id(i) == id)
      return i;
  return std::nullopt;
}

/// The owner of topic/partition as broker `asked` routes it: itself when it
/// serves a fetch (200), the broker its 421 names otherwise.
inline std::optional<size_t> owner_seen_by(const move_cluster& c, size_t asked, const std::string& topic, int partition) {
  auto [status, owner] = who_serves(c.client(asked), topic, partition);
  if (status == 200)
    return asked;
  if (status == 421)
    return index_of(c, owner);
  return std::nullopt;
}

/// How many of the three brokers serve a fetch of topic/partition themselves (200).
inline int serving_count(const move_cluster& c, const std::string& topic, int partition) {
  int n = 0;
  for (size_t i = 0; i < 3; ++i)
    n += who_serves(c.client(i), topic, partition).first == 200 ? 1 : 0;
  return n;
}

/// The row of topic/partition in broker `i`'s journal file as it is on disk
/// (the last one; null when none or unreadable). Read while `i` is down, it
/// is the state the move was in when the broker died.
inline json journal_on_disk(const move_cluster& c, size_t i, const std::string& topic, int partition) {
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
inline json local_row(const move_cluster& c, size_t i, const std::string& topic, int partition) {
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
inline int merge_acked(std::map<int64_t, sent_record>& into, const std::map<int64_t, sent_record>& from) {
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

inline loss count_loss(const std::map<int64_t, sent_record>& acked, const partition_read& now) {
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

/// Stops `producers` (the one at index p writes partition p of `topic`) and
/// checks what each had acknowledged against the partition as the client
/// port `client_of(p)` reads it: no offset acknowledged twice, something
/// acknowledged, nothing lost. Returns the total over all partitions.
inline loss stop_and_count_loss(std::vector<std::unique_ptr<producer>>& producers, const std::string& topic,
                                const std::function<uint16_t(int)>& client_of) {
  std::map<int, std::map<int64_t, sent_record>> acked;
  for (size_t p = 0; p < producers.size(); ++p) {
    producers[p]->stop();
    CHECK(producers[p]->double_acks().empty());
    acked[static_cast<int>(p)] = producers[p]->acked();
  }
  loss total;
  for (int p = 0; p < static_cast<int>(producers.size()); ++p) {
    auto l = count_loss(acked[p], read_partition(client_of(p), topic, p));
    INFO(topic << "/" << p << ": " << l.text());
    CHECK(l.ok());
    CHECK(l.acked > 0);
    total += l;
  }
  return total;
}

/// Produces one record to topic/partition through `client` (acks=leader),
/// retrying every 50 ms until it is acknowledged or `timeout` passes (a
/// partition may stall briefly around a move's end). Adds it to `acked` and
/// returns the last answer.
inline answer produce_one(uint16_t client, const std::string& topic, int partition, const std::string& key,
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

/// How many partitions of `topic` each broker owns, as broker `i` sees it.
inline std::map<std::string, int> owned_by(move_cluster& c, size_t i, const std::string& topic) {
  std::map<std::string, int> out;
  auto owners = cluster_call(c.cluster_port(i), "GET", "/cluster/owners").body;
  for (const auto& o : owners.value("owners", json::array()))
    if (o.value("topic", "") == topic)
      ++out[o.value("owner", "")];
  return out;
}

/// Runs `moonmqctl --admin-url 127.0.0.1:<admin> <args>`, as an operator
/// would: (exit code, stdout and stderr).
inline std::pair<int, std::string> moonmqctl(uint16_t admin, const std::string& args) {
  std::string out;
  auto cmd = program("moonmqctl") + " --admin-url 127.0.0.1:" + std::to_string(admin) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;)
    out.append(buf, n);
  int rc = ::pclose(p);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

/// The brokers other than the leader `leader`, in index order.
inline std::pair<size_t, size_t> followers(size_t leader) {
  std::vector<size_t> out;
  for (size_t i = 0; i < 3; ++i)
    if (i != leader)
      out.push_back(i);
  return {out[0], out[1]};
}

/// The roles in a started 3-broker cluster once a leader is agreed: the
/// leader, and its two followers as a move's source and destination.
struct move_roles {
  size_t leader = 0, src = 0, dst = 0;
};
inline move_roles elect_roles(move_cluster& c) {
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  auto [src, dst] = followers(elected->first);
  return {elected->first, src, dst};
}

inline bool has_journal_failure(const move_cluster& c) { return c.all_logs().find("move.journal_failed") != std::string::npos; }

/// The log lines of every broker that contain `needle` (at most `max`).
inline std::string lines_with(const move_cluster& c, const std::string& needle, size_t max = 6) {
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

}  // namespace moonmq::test::meta

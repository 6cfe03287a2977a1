// Durability under SIGKILL: producers record every acknowledged
// (partition, offset, value) of acks=leader produces; the node is killed at
// a random moment, restarted on the same data dir, and every partition is
// read back in full. Every acknowledged record must be there under its
// offset, offsets must be contiguous, no value may appear twice or at an
// offset other than the one acknowledged, and what a restart recovered must
// still be there after the next crash.
//
// MOONMQ_CRASH_SEED=<n> replays a run (the seed is printed);
// MOONMQ_CRASH_ROUNDS=<n> changes the number of kills (default 20).

#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tests/broker/broker_client.hpp"
#include "storage/partition_log.hpp"
#include "storage/record_batch.hpp"
#include "storage/recovery_point.hpp"
#include "storage/wal.hpp"
#include "util/atomic_file.hpp"

using namespace moonmq::test;
using namespace moonmq::test::broker;
using namespace std::chrono_literals;

namespace {

constexpr int partitions = 3;
constexpr int producers = 3;

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

struct ledger {
  std::mutex mu;
  std::map<std::pair<int, int64_t>, std::string> acked;  ///< (partition, offset) -> value
  std::set<std::string> attempted;                        ///< every value ever sent
  std::map<std::string, std::pair<int, int64_t>> placed;  ///< value -> where it was read
  uint64_t requests_ok = 0, requests_failed = 0;
  std::vector<std::string> errors;  ///< found by producer threads (Catch2 asserts on the main thread only)
};

/// Produces batches of 1-20 records with random partitions on one keep-alive
/// connection until `stop`; records each acknowledged record. Values are
/// padded with 0 to `max_pad` - 1 bytes.
void produce_loop(uint16_t port, int round, int id, uint64_t seed, std::atomic<bool>& stop, ledger& book,
                  size_t max_pad) {
  std::mt19937_64 rng{seed};
  moonmq::transport::http_connection conn{"127.0.0.1", port};
  uint64_t seq = 0;
  while (!stop) {
    auto n = 1 + static_cast<int>(rng() % 20);
    json records = json::array();
    std::vector<std::pair<int, std::string>> sent;
    for (int i = 0; i < n; ++i) {
      int p = static_cast<int>(rng() % partitions);
      auto value = "r" + std::to_string(round) + "-w" + std::to_string(id) + "-" + std::to_string(seq++) + "-"
                   + std::string(rng() % max_pad, 'x');
      records.push_back(json{{"partition", p}, {"value", value}});
      sent.emplace_back(p, value);
    }
    {
      std::lock_guard<std::mutex> lock{book.mu};
      for (const auto& s : sent)
        book.attempted.insert(s.second);
    }
    auto res = conn.call("POST", "/v1/topics/crash/records?acks=leader", json{{"records", records}}.dump(), 5s);
    if (res.status != 200) {
      std::lock_guard<std::mutex> lock{book.mu};
      ++book.requests_failed;
      if (res.status != 0)
        book.errors.push_back("produce answered " + std::to_string(res.status) + " " + res.body);
      std::this_thread::sleep_for(5ms);  // the node is gone: wait for the test to stop us
      continue;
    }
    auto offsets = json::parse(res.body, nullptr, false);
    std::lock_guard<std::mutex> lock{book.mu};
    if (!offsets.is_object() || offsets["offsets"].size() != sent.size()) {
      book.errors.push_back("malformed produce answer " + res.body);
      continue;
    }
    ++book.requests_ok;
    for (size_t i = 0; i < sent.size(); ++i) {
      const auto& o = offsets["offsets"][i];
      if (o["partition"] != sent[i].first)
        book.errors.push_back("record placed in partition " + o["partition"].dump() + " instead of "
                              + std::to_string(sent[i].first));
      auto off = o["offset"].get<int64_t>();
      if (!book.acked.emplace(std::make_pair(sent[i].first, off), sent[i].second).second)
        book.errors.push_back("offset " + std::to_string(off) + " of partition " + std::to_string(sent[i].first)
                              + " acknowledged twice (or over a record recovered earlier)");
    }
  }
}

/// Reads every partition from `from[p]` (0 on a full check) and checks it
/// against the ledger; then records all that is there as acknowledged (a
/// later crash must not lose it either) and moves `from` to the log ends.
void verify(uint16_t port, ledger& book, int round, std::vector<int64_t>& from) {
  std::lock_guard<std::mutex> lock{book.mu};
  size_t recovered_unacked = 0;
  for (int p = 0; p < partitions; ++p) {
    int64_t log_start = -1;
    auto start = from[static_cast<size_t>(p)];
    auto got = fetch_all(port, "crash", p, 10000, nullptr, &log_start, start);  // checks contiguity
    REQUIRE(log_start == 0);
    std::map<int64_t, std::string> log;
    for (const auto& r : got)
      log[r["offset"].get<int64_t>()] = r["value"].get<std::string>();
    for (auto it = book.acked.lower_bound({p, start}); it != book.acked.end() && it->first.first == p; ++it) {
      auto at = log.find(it->first.second);
      if (at == log.end())
        FAIL("round " << round << ": acknowledged offset " << it->first.second << " of partition " << p
                      << " is missing (log end " << start + static_cast<int64_t>(got.size()) << ")");
      if (at->second != it->second)
        FAIL("round " << round << ": partition " << p << " offset " << it->first.second << " holds '"
                      << at->second.substr(0, 40) << "' instead of '" << it->second.substr(0, 40) << "'");
    }
    for (const auto& [off, v] : log) {
      if (!book.attempted.count(v))
        FAIL("round " << round << ": partition " << p << " offset " << off << " holds a value never sent");
      auto [where, fresh] = book.placed.emplace(v, std::make_pair(p, off));
      if (!fresh && where->second != std::make_pair(p, off))
        FAIL("round " << round << ": value " << v.substr(0, 40) << " at partition " << p << " offset " << off
                      << " was at partition " << where->second.first << " offset " << where->second.second);
      if (book.acked.emplace(std::make_pair(p, off), v).second)
        ++recovered_unacked;
    }
    from[static_cast<size_t>(p)] = start + static_cast<int64_t>(got.size());
  }
  UNSCOPED_INFO("round " << round << ": " << book.acked.size() << " records known, " << recovered_unacked
                         << " unacknowledged ones recovered");
}

/// Base offsets of the batches of `topic`-`partition` in the WAL files of
/// `data_dir` (committed entries: what a crash leaves of them).
std::set<int64_t> wal_bases(const std::string& data_dir, const std::string& topic, int32_t partition) {
  std::set<int64_t> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(moonmq::storage::wal_dir(data_dir), ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_regular_file())
      continue;
    std::string bytes;
    if (moonmq::util::read_file(it->path().string(), bytes))
      continue;  // deleted by a checkpoint meanwhile
    for (const auto& e : moonmq::storage::decode_wal(bytes).entries)
      if (e.topic == topic && e.partition == partition)
        out.insert(moonmq::storage::peek_batch_header(e.batch).value().base.value);
  }
  return out;
}

/// What a power loss may leave of a partition killed mid-write: every byte
/// past what was fdatasynced may be gone. The active segment of `dir` is
/// cut at a random position at or past the first batch not below the
/// recovery point (storage::partition_log::open treats everything below
/// it, and below the active segment's base, as synced), and past every
/// batch the WAL does not hold (`in_wal`: their base offsets) that was
/// acknowledged (`acked`: offsets) or that an entry of the WAL follows (in
/// the WAL, not necessarily in the file: its bytes may have been held in
/// memory, write-behind, when the process died).
/// Such a batch was made durable by a sync of its segment (a WAL
/// checkpoint, or its own round when it skipped the WAL) that the recovery
/// point, written at most once a second, may not show yet; or, when
/// neither, it may be one whose sync never ran (an entry the last WAL
/// commit had not written yet, a skipped batch), which the cut may take.
/// The model never loses a skipped batch that a WAL entry follows, so it
/// does not check the rule that no WAL entry follows an unsynced one
/// (tests/actors/partition.test.cpp does). Returns the bytes cut.
uint64_t lose_unsynced_tail(const std::string& dir, std::mt19937_64& rng, const std::set<int64_t>& in_wal,
                            const std::set<int64_t>& acked) {
  namespace fs = std::filesystem;
  std::string active;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().extension() == ".log")
      active = std::max(active, f.path().string());
  if (active.empty())
    return 0;
  auto cp = moonmq::storage::read_recovery_checkpoint(dir);
  REQUIRE(cp.ok());
  const int64_t point = cp->state == moonmq::storage::loaded_checkpoint::kind::valid ? cp->value.point.value : 0;
  std::string bytes;
  REQUIRE(!moonmq::util::read_file(active, bytes));
  const int64_t last_in_wal = in_wal.empty() ? -1 : *in_wal.rbegin();
  size_t keep = 0;  // the first byte that may be lost
  size_t at = 0;
  std::string_view rest = bytes;
  while (!rest.empty()) {
    auto head = moonmq::storage::peek_batch_header(rest);
    auto size = moonmq::storage::peek_batch_size(rest);
    if (!head || !size || *size > rest.size())
      break;
    at += *size;
    rest.remove_prefix(*size);
    auto first_acked = acked.lower_bound(head->base.value);
    bool was_acked = first_acked != acked.end() && *first_acked <= head->last.value;
    bool wal = in_wal.count(head->base.value) != 0;
    if (head->base.value < point || (!wal && (was_acked || last_in_wal > head->base.value)))
      keep = at;
  }
  const auto cut_at = keep + rng() % (bytes.size() - keep + 1);
  REQUIRE(::truncate(active.c_str(), static_cast<off_t>(cut_at)) == 0);
  return bytes.size() - cut_at;
}

/// Batches of the segment files of `dir`: how many, and how many of at
/// least `bytes` bytes.
std::pair<size_t, size_t> count_batches(const std::string& dir, size_t bytes) {
  std::pair<size_t, size_t> out{0, 0};
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() != ".log")
      continue;
    std::string data;
    REQUIRE(!moonmq::util::read_file(f.path().string(), data));
    std::string_view rest = data;
    while (auto size = moonmq::storage::peek_batch_size(rest)) {
      if (*size > rest.size())
        break;
      ++out.first;
      out.second += *size >= bytes ? 1 : 0;
      rest.remove_prefix(*size);
    }
  }
  return out;
}

/// The lost-tail crash test: kills the node at random moments under
/// produce, cuts each partition's segment past what was synced
/// (lose_unsynced_tail), restarts and checks every acknowledged record.
/// `skip_bytes` > 0 sets Storage.WalMaxBatchBytes to it and pads values to
/// up to `max_pad` bytes, so that some batches skip the WAL.
void lost_tail_crashes(size_t skip_bytes, size_t max_pad) {
  auto seed = env_or("MOONMQ_CRASH_SEED", std::random_device{}());
  auto rounds = static_cast<int>(env_or("MOONMQ_CRASH_ROUNDS", 6));
  std::printf("lost-tail crash test seed=%llu rounds=%d wal_max_batch_bytes=%zu\n",
              static_cast<unsigned long long>(seed), rounds, skip_bytes);
  std::fflush(stdout);
  INFO("MOONMQ_CRASH_SEED=" << seed);
  std::mt19937_64 rng{seed};
  temp_dir dir;
  ledger book;
  std::vector<int64_t> checked(partitions, 0);
  std::vector<std::string> small_wal{"Storage.WalCheckpointBytes=1048576"};
  if (skip_bytes > 0)
    small_wal.push_back("Storage.WalMaxBatchBytes=" + std::to_string(skip_bytes));
  auto n = running_node::start(dir, small_wal);
  create_topic(n.client, "crash", partitions);
  uint64_t cut_total = 0;
  for (int round = 0; round < rounds; ++round) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int w = 0; w < producers; ++w)
      workers.emplace_back(produce_loop, n.client, round, w, rng(), std::ref(stop), std::ref(book), max_pad);
    wait_until(
      [&] {
        std::lock_guard<std::mutex> lock{book.mu};
        return book.requests_ok > static_cast<uint64_t>(20 * (round + 1));
      },
      10s);
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 300));
    n.kill();
    stop = true;
    for (auto& w : workers)
      w.join();
    REQUIRE(book.errors.empty());
    for (int p = 0; p < partitions; ++p) {
      std::set<int64_t> acked;
      for (auto it = book.acked.lower_bound({p, 0}); it != book.acked.end() && it->first.first == p; ++it)
        acked.insert(it->first.second);
      cut_total += lose_unsynced_tail(dir.path() + "/data/crash-" + std::to_string(p), rng,
                                      wal_bases(dir.path() + "/data", "crash", p), acked);
    }
    n = running_node::start(dir, small_wal);
    std::fill(checked.begin(), checked.end(), 0);
    verify(n.client, book, round, checked);
  }
  std::printf("lost-tail crash test: %d kills, %llu bytes of segments lost and replayed, %zu records verified\n",
              rounds, static_cast<unsigned long long>(cut_total), book.acked.size());
  CHECK(cut_total > 0);  // the WAL had something to put back
  n.stop();
  if (skip_bytes > 0) {  // some batches did skip the WAL
    size_t batches = 0, large = 0;
    for (int p = 0; p < partitions; ++p) {
      auto [all, big] = count_batches(dir.path() + "/data/crash-" + std::to_string(p), skip_bytes);
      batches += all;
      large += big;
    }
    std::printf("lost-tail crash test: %zu of %zu batches at least %zu bytes\n", large, batches, skip_bytes);
    CHECK(large > 0);
    CHECK(large < batches);
  }
}

}  // namespace

TEST_CASE("acknowledged records survive a crash that also loses every unsynced byte of the segments",
          "[broker][crash][wal]") {
  // With the I/O workers' WAL, an acknowledgement means the WAL's commit
  // was fdatasynced, not the segment: replay at the start must put back
  // whatever the segments lost past their recovery points. The WAL is
  // checkpointed every 1 MiB (the smallest WalCheckpointBytes), so kills
  // also land between checkpoints, file replacements and their deletes.
  lost_tail_crashes(0, 100);
}

TEST_CASE("acknowledged records survive lost segment tails when large batches skip the WAL",
          "[broker][crash][wal]") {
  // Some batches (a partition's share of 1-20 records of up to 400 bytes)
  // are at least WalMaxBatchBytes = 2 KiB: they and the appends after them
  // skip the WAL until their segment's sync (docs/storage.md "Large
  // batches skip the WAL"), and the WAL holds the rest. Replay must
  // continue every log from where its segment was cut.
  lost_tail_crashes(2048, 400);
}

TEST_CASE("acknowledged records survive SIGKILL at random moments", "[broker][crash]") {
  auto seed = env_or("MOONMQ_CRASH_SEED", std::random_device{}());
  auto rounds = static_cast<int>(env_or("MOONMQ_CRASH_ROUNDS", 20));
  std::printf("crash test seed=%llu rounds=%d (MOONMQ_CRASH_SEED=%llu to replay)\n",
              static_cast<unsigned long long>(seed), rounds, static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  INFO("MOONMQ_CRASH_SEED=" << seed);
  std::mt19937_64 rng{seed};
  temp_dir dir;
  ledger book;
  std::vector<int64_t> checked(partitions, 0);  ///< per partition: verified up to here
  auto n = running_node::start(dir);
  create_topic(n.client, "crash", partitions);
  for (int round = 0; round < rounds; ++round) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int w = 0; w < producers; ++w)
      workers.emplace_back(produce_loop, n.client, round, w, rng(), std::ref(stop), std::ref(book), size_t{100});
    // Kill at a random moment once acknowledgements are flowing.
    auto acked_before = [&] {
      std::lock_guard<std::mutex> lock{book.mu};
      return book.requests_ok;
    }();
    wait_until(
      [&] {
        std::lock_guard<std::mutex> lock{book.mu};
        return book.requests_ok > acked_before;
      },
      5s);
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 500));
    n.kill();
    stop = true;
    for (auto& w : workers)
      w.join();
    for (const auto& e : book.errors)
      FAIL_CHECK("round " << round << ": " << e);
    REQUIRE(book.errors.empty());
    n = running_node::start(dir);
    // Every fifth round and the last one re-read everything; the others
    // read what is new since the previous check (a log that lost records
    // before that point fails there with offset_out_of_range).
    if (round % 5 == 4 || round == rounds - 1)
      std::fill(checked.begin(), checked.end(), 0);
    verify(n.client, book, round, checked);
  }
  INFO("requests acknowledged " << book.requests_ok << ", failed " << book.requests_failed);
  CHECK(book.requests_ok > static_cast<uint64_t>(rounds));
  std::printf("crash test: %d kills, %llu produce requests acknowledged, %zu records verified\n", rounds,
              static_cast<unsigned long long>(book.requests_ok), book.acked.size());
  n.stop();
}

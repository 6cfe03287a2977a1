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
/// connection until `stop`; records each acknowledged record.
void produce_loop(uint16_t port, int round, int id, uint64_t seed, std::atomic<bool>& stop, ledger& book) {
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
                   + std::string(rng() % 100, 'x');
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

/// What a power loss may leave of a partition killed mid-write: every byte
/// past what was fdatasynced may be gone. The active segment of `dir` is
/// cut at a random position at or past the first batch not below the
/// recovery point (storage::partition_log::open treats everything below
/// it, and below the active segment's base, as synced). Returns the bytes
/// cut.
uint64_t lose_unsynced_tail(const std::string& dir, std::mt19937_64& rng) {
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
  size_t keep = 0;  // the first byte that may be lost
  std::string_view rest = bytes;
  while (!rest.empty()) {
    auto head = moonmq::storage::peek_batch_header(rest);
    auto size = moonmq::storage::peek_batch_size(rest);
    if (!head || !size || *size > rest.size() || head->base.value >= point)
      break;
    keep += *size;
    rest.remove_prefix(*size);
  }
  const auto cut_at = keep + rng() % (bytes.size() - keep + 1);
  REQUIRE(::truncate(active.c_str(), static_cast<off_t>(cut_at)) == 0);
  return bytes.size() - cut_at;
}

}  // namespace

TEST_CASE("acknowledged records survive a crash that also loses every unsynced byte of the segments",
          "[broker][crash][wal]") {
  // With the I/O workers' WAL, an acknowledgement means the WAL's commit
  // was fdatasynced, not the segment: replay at the start must put back
  // whatever the segments lost past their recovery points. The WAL is
  // checkpointed every 1 MiB (the smallest WalCheckpointBytes), so kills
  // also land between checkpoints, file replacements and their deletes.
  auto seed = env_or("MOONMQ_CRASH_SEED", std::random_device{}());
  auto rounds = static_cast<int>(env_or("MOONMQ_CRASH_ROUNDS", 6));
  std::printf("lost-tail crash test seed=%llu rounds=%d\n", static_cast<unsigned long long>(seed), rounds);
  std::fflush(stdout);
  INFO("MOONMQ_CRASH_SEED=" << seed);
  std::mt19937_64 rng{seed};
  temp_dir dir;
  ledger book;
  std::vector<int64_t> checked(partitions, 0);
  const std::vector<std::string> small_wal{"Storage.WalCheckpointBytes=1048576"};
  auto n = running_node::start(dir, small_wal);
  create_topic(n.client, "crash", partitions);
  uint64_t cut_total = 0;
  for (int round = 0; round < rounds; ++round) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int w = 0; w < producers; ++w)
      workers.emplace_back(produce_loop, n.client, round, w, rng(), std::ref(stop), std::ref(book));
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
    for (int p = 0; p < partitions; ++p)
      cut_total += lose_unsynced_tail(dir.path() + "/data/crash-" + std::to_string(p), rng);
    n = running_node::start(dir, small_wal);
    std::fill(checked.begin(), checked.end(), 0);
    verify(n.client, book, round, checked);
  }
  std::printf("lost-tail crash test: %d kills, %llu bytes of segments lost and replayed, %zu records verified\n",
              rounds, static_cast<unsigned long long>(cut_total), book.acked.size());
  CHECK(cut_total > 0);  // the WAL had something to put back
  n.stop();
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
      workers.emplace_back(produce_loop, n.client, round, w, rng(), std::ref(stop), std::ref(book));
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

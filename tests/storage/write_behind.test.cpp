// Write-behind (log_config::write_behind_bytes, docs/storage.md
// "Write-behind"): appends held in memory reach the segment file before
// anything that reads the file or syncs it, and when the log goes.

#include <catch2/catch.hpp>

#include <filesystem>

#include "storage/group_commit.hpp"
#include "storage/partition_log.hpp"
#include "storage_test_helpers.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;
namespace fs = std::filesystem;

namespace {

constexpr size_t hold = 16 << 10;

log_config holding() {
  log_config c;
  c.write_behind_bytes = hold;
  return c;
}

std::string segment_of(const std::string& dir) { return dir + "/00000000000000000000.log"; }

/// Appends `n` batches of one ~1 KiB record; returns their bytes in all.
uint64_t append_small(partition_log& lg, int n, int seed) {
  uint64_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    auto batch = make_batch(1, seed + i, 1000);
    bytes += batch.size();
    REQUIRE(lg.append(batch).ok());
  }
  return bytes;
}

}  // namespace

TEST_CASE("a holding log writes many appends in one go, and reads, flushes and time lookups see every one",
          "[storage][write_behind]") {
  temp_dir dir;
  const auto where = dir.sub("wb-0");
  auto lg = partition_log::open(where, holding());
  REQUIRE(lg.ok());
  const auto bytes = append_small(*lg, 5, 1);
  CHECK(lg->held_bytes() == bytes);
  CHECK(fs::file_size(segment_of(where)) == 0);  // nothing written yet

  SECTION("a read writes them first") {
    auto values = read_all(*lg);
    REQUIRE(values.size() == 5);
    CHECK(values[4].first == 4);
    CHECK(lg->held_bytes() == 0);
    CHECK(fs::file_size(segment_of(where)) == bytes);
  }
  SECTION("a flush writes them, then syncs") {
    CHECK(lg->flush().value().value == 5);
    CHECK(lg->held_bytes() == 0);
    CHECK(fs::file_size(segment_of(where)) == bytes);
  }
  SECTION("a time lookup reads the file by its path: they are written first") {
    auto hit = lg->offset_for_timestamp(0);
    REQUIRE(hit.ok());
    REQUIRE(hit->has_value());
    CHECK((*hit)->off.value == 0);
    CHECK(lg->held_bytes() == 0);
  }
  SECTION("reaching the budget writes them in one pwrite") {
    const auto more = append_small(*lg, 20, 10);  // past 16 KiB in all
    CHECK(lg->held_bytes() < hold);
    CHECK(fs::file_size(segment_of(where)) + lg->held_bytes() == bytes + more);
    CHECK(fs::file_size(segment_of(where)) >= hold);
  }
  SECTION("dropping the log writes them, as appends without holding would be in the page cache") {
    lg = partition_log::open(dir.sub("other-0"));  // the holding log is destroyed
    auto again = partition_log::open(where);
    REQUIRE(again.ok());
    CHECK(again->log_end().value == 5);
    CHECK(read_all(*again).size() == 5);
  }
  SECTION("a batch larger than the budget is written at once, after what was held") {
    auto big = make_batch(20, 99, 1000);
    REQUIRE(big.size() > hold);
    REQUIRE(lg->append(big).ok());
    CHECK(lg->held_bytes() == 0);
    CHECK(fs::file_size(segment_of(where)) == bytes + big.size());
    CHECK(read_all(*lg).size() == 25);
  }
}

TEST_CASE("a sync round writes every log's held appends before the syncfs that covers them",
          "[storage][write_behind]") {
  temp_dir dir;
  std::vector<partition_log> logs;
  for (int i = 0; i < 3; ++i) {
    auto lg = partition_log::open(partition_dir(dir.path(), "wb", i), holding());
    REQUIRE(lg.ok());
    logs.push_back(std::move(lg.value()));
  }
  std::vector<uint64_t> bytes;
  std::vector<partition_log*> ptrs;
  for (auto& lg : logs) {
    bytes.push_back(append_small(lg, 3, 7));
    ptrs.push_back(&lg);
  }
  syncfs_handles handles{dir.path()};
  sync_round_stats stats;
  auto results = sync_round(ptrs, handles, stats);
  for (size_t i = 0; i < logs.size(); ++i) {
    REQUIRE(results[i].ok());
    CHECK(results[i]->value == 3);
    CHECK(logs[i].held_bytes() == 0);
    CHECK(fs::file_size(segment_of(logs[i].dir())) == bytes[i]);
    CHECK_FALSE(logs[i].needs_sync());
  }
  // Closed together: clean at their log ends, every record there.
  auto closed = close_together(ptrs, handles, stats);
  for (auto& c : closed)
    CHECK(c.ok());
  auto again = partition_log::open(partition_dir(dir.path(), "wb", 1));
  REQUIRE(again.ok());
  CHECK(read_all(*again).size() == 3);
}

TEST_CASE("a log that does not hold writes each append at once", "[storage][write_behind]") {
  temp_dir dir;
  const auto where = dir.sub("direct-0");
  auto lg = partition_log::open(where);
  REQUIRE(lg.ok());
  const auto bytes = append_small(*lg, 3, 1);
  CHECK(lg->held_bytes() == 0);
  CHECK(fs::file_size(segment_of(where)) == bytes);
}

TEST_CASE("a holding log rolls, indexes and reads back every offset one batch at a time", "[storage][write_behind]") {
  temp_dir dir;
  const auto where = dir.sub("roll-0");
  auto config = holding();
  config.segment_bytes = 4096;  // a roll every few appends, each sealing what the segment held
  auto lg = partition_log::open(where, config);
  REQUIRE(lg.ok());
  append_small(*lg, 30, 1);
  CHECK(lg->log_end().value == 30);
  auto values = read_all(*lg, 1);  // one batch per read: every index lookup
  REQUIRE(values.size() == 30);
  for (int64_t i = 0; i < 30; ++i)
    CHECK(values[static_cast<size_t>(i)].first == i);
  REQUIRE(lg->close().ok());
  auto again = partition_log::open(where, config);
  REQUIRE(again.ok());
  CHECK(again->log_end().value == 30);
  CHECK(read_all(*again, 1).size() == 30);
}

TEST_CASE("a reset to the log's own base never writes what the old segment held into the new file",
          "[storage][write_behind]") {
  temp_dir dir;
  const auto where = dir.sub("reset-0");
  auto lg = partition_log::open(where, holding());
  REQUIRE(lg.ok());
  append_small(*lg, 4, 1);
  REQUIRE(lg->held_bytes() > 0);
  REQUIRE(lg->reset(offset{0}).ok());  // the same base: create() truncates and reuses the file name
  CHECK(lg->held_bytes() == 0);
  CHECK(lg->log_end().value == 0);
  CHECK(fs::file_size(segment_of(where)) == 0);
  append_small(*lg, 2, 50);
  REQUIRE(lg->close().ok());
  auto again = partition_log::open(where);
  REQUIRE(again.ok());
  auto values = read_all(*again);
  REQUIRE(values.size() == 2);
  CHECK(values[0].second.rfind("v50-0", 0) == 0);
}

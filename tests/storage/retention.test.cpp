#include "storage/partition_log.hpp"

#include <catch2/catch.hpp>

#include "storage_test_helpers.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;

namespace {

log_config cfg() { return one_kib_segments(); }

// Appends `n` batches of 2 records with timestamps ts, ts+1.
void fill(partition_log& lg, int n, int64_t ts) {
  for (int i = 0; i < n; ++i) {
    auto b = make_batch(2, i, 80, ts);
    REQUIRE(lg.append(b).ok());
  }
}

}  // namespace

TEST_CASE("retention by bytes deletes the oldest segments and advances log-start",
          "[storage][retention]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0"), cfg()).value();
  fill(lg, 60, 1000);
  const auto leo = lg.log_end();
  const auto segments = lg.segment_count();
  REQUIRE(segments > 6);
  const uint64_t limit = lg.size_bytes() / 2;

  auto res = lg.apply_retention(static_cast<int64_t>(limit), -1, 0);
  REQUIRE(res.ok());
  CHECK(res->segments_deleted > 0);
  CHECK(lg.segment_count() == segments - res->segments_deleted);
  CHECK(lg.size_bytes() >= limit);  // Kafka semantics: never below the limit
  CHECK(lg.log_start() > offset{0});
  CHECK(lg.log_end() == leo);
  // Everything from log-start on still reads; below it is out of range.
  auto first = lg.read(lg.log_start(), 1).value();
  CHECK(batch_view::parse(first.batches)->base_offset() == lg.log_start());
  auto below = lg.read(offset{lg.log_start().value - 1}, 100);
  REQUIRE_FALSE(below.ok());
  CHECK(below.err().code == errc::offset_out_of_range);
  CHECK(below.err().log_start == lg.log_start());

  // A second pass with the same limit has nothing left to delete.
  CHECK(lg.apply_retention(static_cast<int64_t>(limit), -1, 0)->segments_deleted == 0);

  // Zero bytes: every sealed segment goes, the active one stays.
  auto active_base_reads = lg.read(offset{leo.value - 1}, 1 << 20).value().batches;
  REQUIRE(lg.apply_retention(0, -1, 0).ok());
  CHECK(lg.segment_count() == 1);
  CHECK(lg.read(offset{leo.value - 1}, 1 << 20)->batches == active_base_reads);
  CHECK(lg.log_end() == leo);

  // log-start survives a reopen.
  auto start = lg.log_start();
  auto reopened = partition_log::open(tmp.sub("t-0"), cfg()).value();
  CHECK(reopened.log_start() == start);
  CHECK(reopened.log_end() == leo);
}

TEST_CASE("retention by time deletes only segments older than retention.ms",
          "[storage][retention]") {
  temp_dir tmp;
  offset old_end;
  {
    auto lg = partition_log::open(tmp.sub("t-1"), cfg()).value();
    fill(lg, 30, 10'000);  // old
    // Force the old records into sealed segments only.
    auto big = make_batch(1, 0, 2000, 10'000);
    REQUIRE(lg.append(big).ok());
    old_end = lg.log_end();
    fill(lg, 30, 1'000'000);  // new
    REQUIRE(lg.flush().ok());
  }
  // Reopen so the sealed segments' timestamps are computed from disk.
  auto lg = partition_log::open(tmp.sub("t-1"), cfg()).value();
  const auto segments = lg.segment_count();

  // now - retention is before every timestamp: nothing goes.
  CHECK(lg.apply_retention(-1, 2'000'000, 1'500'000)->segments_deleted == 0);
  CHECK(lg.log_start() == offset{0});

  auto res = lg.apply_retention(-1, 100'000, 1'050'000);
  REQUIRE(res.ok());
  CHECK(res->segments_deleted > 0);
  CHECK(lg.segment_count() == segments - res->segments_deleted);
  // All old segments are gone, the first new one starts log-start.
  CHECK(lg.log_start() == old_end);
  auto first = lg.read(lg.log_start(), 1).value();
  CHECK(batch_view::parse(first.batches)->max_timestamp() >= 1'000'000);

  // Far future: all sealed segments expire, the active one never does.
  REQUIRE(lg.apply_retention(-1, 1, 1'000'000'000).ok());
  CHECK(lg.segment_count() == 1);
  CHECK(lg.log_end() > lg.log_start());
}

TEST_CASE("disabled retention deletes nothing", "[storage][retention]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-2"), cfg()).value();
  fill(lg, 40, 1);
  auto segments = lg.segment_count();
  CHECK(lg.apply_retention(-1, -1, 1'000'000'000)->segments_deleted == 0);
  CHECK(lg.segment_count() == segments);
  CHECK(lg.log_start() == offset{0});
}

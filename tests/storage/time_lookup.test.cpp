// partition_log::offset_for_timestamp and find_timestamp_in_batch: Kafka's
// ListOffsets-by-timestamp semantics (the earliest offset whose record
// timestamp is >= the target) without a time index.

#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "storage/partition_log.hpp"
#include "storage/record_batch.hpp"
#include "storage_test_helpers.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;

namespace {

log_config small_segments() {
  log_config c;
  c.segment_bytes = 1024;
  c.index_interval_bytes = 256;
  return c;
}

/// One record per timestamp, 40 bytes of padding each.
std::vector<record> records_at(const std::vector<int64_t>& timestamps, int seed) {
  std::vector<record> out;
  for (size_t i = 0; i < timestamps.size(); ++i) {
    record r;
    r.value = pseudo_bytes(40, static_cast<uint64_t>(seed * 100 + static_cast<int>(i)));
    r.timestamp_ms = timestamps[i];
    out.push_back(std::move(r));
  }
  return out;
}

/// (offset, timestamp) of every record appended, in offset order.
using stamped = std::vector<std::pair<int64_t, int64_t>>;

offset append_at(partition_log& lg, const std::vector<int64_t>& timestamps, int seed,
                 stamped& all, int16_t attributes = 0) {
  batch_options opt;
  opt.attributes = attributes;
  auto batch = encode_batch(records_at(timestamps, seed), opt).value();
  auto base = lg.append(batch).value();
  for (size_t i = 0; i < timestamps.size(); ++i)
    all.emplace_back(base.value + static_cast<int64_t>(i), timestamps[i]);
  return base;
}

/// The answer by definition: the first record at or after `from` whose
/// timestamp is >= target.
std::optional<std::pair<int64_t, int64_t>> brute_force(const stamped& all, int64_t target,
                                                       int64_t from = 0) {
  for (const auto& [off, ts] : all)
    if (off >= from && ts >= target)
      return std::make_pair(off, ts);
  return std::nullopt;
}

/// 40 batches; batch b holds three records at 1000 + 10b, +2, +4.
stamped fill_spaced(partition_log& lg) {
  stamped all;
  for (int b = 0; b < 40; ++b) {
    int64_t t0 = 1000 + 10 * b;
    append_at(lg, {t0, t0 + 2, t0 + 4}, b, all);
  }
  return all;
}

std::optional<std::pair<int64_t, int64_t>> lookup(partition_log& lg, int64_t target) {
  auto r = lg.offset_for_timestamp(target);
  REQUIRE(r.ok());
  if (!*r)
    return std::nullopt;
  return std::make_pair((*r)->off.value, (*r)->timestamp);
}

void store_be(std::string& b, size_t pos, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    b[pos + n - 1 - i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

TEST_CASE("time lookup over several segments answers the first record at or after the target",
          "[storage][timelookup]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0"), small_segments()).value();
  auto all = fill_spaced(lg);
  REQUIRE(lg.segment_count() > 4);
  const int64_t last_ts = all.back().second;

  // Before everything: the log-start record.
  CHECK(lookup(lg, 0) == std::make_pair(int64_t{0}, int64_t{1000}));
  CHECK(lookup(lg, 1000) == std::make_pair(int64_t{0}, int64_t{1000}));
  // Between two records of one batch: the later record, with its own timestamp.
  CHECK(lookup(lg, 1003) == std::make_pair(int64_t{2}, int64_t{1004}));
  CHECK(lookup(lg, 1000 + 10 * 25 + 1) == std::make_pair(int64_t{3 * 25 + 1}, int64_t{1252}));
  // Between two batches: the next batch's first record.
  CHECK(lookup(lg, 1005) == std::make_pair(int64_t{3}, int64_t{1010}));
  // The last record exactly, then after everything: no record.
  CHECK(lookup(lg, last_ts) == std::make_pair(all.back().first, last_ts));
  CHECK_FALSE(lookup(lg, last_ts + 1).has_value());
  // Every target, against the definition.
  for (int64_t t = 990; t <= last_ts + 2; ++t)
    REQUIRE(lookup(lg, t) == brute_force(all, t));

  // After a reopen the sealed segments' largest timestamps are computed
  // lazily again; the answers do not change.
  auto reopened = partition_log::open(tmp.sub("t-0"), small_segments()).value();
  for (int64_t t = 990; t <= last_ts + 2; t += 3)
    REQUIRE(lookup(reopened, t) == brute_force(all, t));
}

TEST_CASE("time lookup with out-of-order timestamps answers the earliest offset",
          "[storage][timelookup]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0"), small_segments()).value();
  stamped all;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> ts(0, 500);
  std::uniform_int_distribution<int> count(1, 5);
  for (int b = 0; b < 60; ++b) {
    std::vector<int64_t> stamps(static_cast<size_t>(count(rng)));
    for (auto& s : stamps)
      s = ts(rng);
    append_at(lg, stamps, b, all);
  }
  REQUIRE(lg.segment_count() > 4);
  for (int64_t t = 0; t <= 502; ++t)
    REQUIRE(lookup(lg, t) == brute_force(all, t));
}

TEST_CASE("time lookup on an empty log and with a negative target", "[storage][timelookup]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0")).value();
  CHECK_FALSE(lookup(lg, 0).has_value());
  auto neg = lg.offset_for_timestamp(-1);
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.err().code == errc::invalid_argument);
}

TEST_CASE("a LogAppendTime batch gives every record its maxTimestamp", "[storage][timelookup]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0")).value();
  stamped all;
  append_at(lg, {1, 2, 3}, 0, all);                               // offsets 0..2, CreateTime
  auto lat = append_at(lg, {10, 20, 90}, 1, all, attr_log_append_time);  // offsets 3..5
  append_at(lg, {10, 20, 90}, 2, all);                            // offsets 6..8, CreateTime
  REQUIRE(lat == offset{3});
  // Each LogAppendTime record is at 90: the batch's first record answers
  // (under CreateTime, 50 would find offset 5).
  CHECK(lookup(lg, 50) == std::make_pair(int64_t{3}, int64_t{90}));
  CHECK(lookup(lg, 4) == std::make_pair(int64_t{3}, int64_t{90}));
  CHECK(lookup(lg, 90) == std::make_pair(int64_t{3}, int64_t{90}));
  // The same records under CreateTime keep their own timestamps.
  CHECK(lookup(lg, 0) == std::make_pair(int64_t{0}, int64_t{1}));
  CHECK_FALSE(lookup(lg, 91).has_value());
}

TEST_CASE("find_timestamp_in_batch honours the starting offset and the timestamp type",
          "[storage][timelookup]") {
  auto bytes = encode_batch(records_at({10, 20, 90}, 0)).value();
  REQUIRE(set_base_offset(bytes, offset{100}).ok());
  auto view = batch_view::parse(bytes).value();
  auto at = [&](int64_t target, int64_t from) -> std::optional<std::pair<int64_t, int64_t>> {
    auto r = find_timestamp_in_batch(view, target, offset{from}).value();
    if (!r)
      return std::nullopt;
    return std::make_pair(r->off.value, r->timestamp);
  };
  CHECK(at(0, 0) == std::make_pair(int64_t{100}, int64_t{10}));
  CHECK(at(15, 0) == std::make_pair(int64_t{101}, int64_t{20}));
  CHECK(at(0, 101) == std::make_pair(int64_t{101}, int64_t{20}));  // below the start is skipped
  CHECK(at(15, 102) == std::make_pair(int64_t{102}, int64_t{90}));
  CHECK_FALSE(at(91, 0).has_value());   // maxTimestamp below the target
  CHECK_FALSE(at(0, 103).has_value());  // the whole batch is below the start

  batch_options opt;
  opt.attributes = attr_log_append_time;
  auto lat_bytes = encode_batch(records_at({10, 20, 90}, 0), opt).value();
  REQUIRE(set_base_offset(lat_bytes, offset{100}).ok());
  auto lat = batch_view::parse(lat_bytes).value();
  auto lat_hit = find_timestamp_in_batch(lat, 15, offset{101}).value();
  REQUIRE(lat_hit);
  CHECK(lat_hit->off == offset{101});
  CHECK(lat_hit->timestamp == 90);
}

TEST_CASE("a compressed batch answers its base offset and maxTimestamp", "[storage][timelookup]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0")).value();
  stamped all;
  append_at(lg, {100, 110}, 0, all);  // offsets 0..1
  // Offsets 2..4 at 200, 210, 220, then marked lz4: the records are not
  // decoded, so the lookup cannot see inside the batch.
  auto batch = encode_batch(records_at({200, 210, 220}, 1)).value();
  batch[22] = static_cast<char>((batch[22] & ~0x07) | 0x03);
  batch[61] = static_cast<char>(0xff);  // not a valid lz4 frame: never decoded
  store_be(batch, batch_crc_offset,
           crc32c(std::string_view(batch).substr(batch_attributes_offset)), 4);
  REQUIRE(lg.append(batch).value() == offset{2});
  append_at(lg, {300}, 2, all);  // offset 5

  CHECK(lookup(lg, 105) == std::make_pair(int64_t{1}, int64_t{110}));
  CHECK(lookup(lg, 111) == std::make_pair(int64_t{2}, int64_t{220}));
  CHECK(lookup(lg, 215) == std::make_pair(int64_t{2}, int64_t{220}));
  CHECK(lookup(lg, 221) == std::make_pair(int64_t{5}, int64_t{300}));
}

TEST_CASE("time lookup after retention moved the log start", "[storage][timelookup]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0"), small_segments()).value();
  auto all = fill_spaced(lg);
  auto res = lg.apply_retention(static_cast<int64_t>(lg.size_bytes() / 2), -1, 0);
  REQUIRE(res.ok());
  REQUIRE(res->segments_deleted > 0);
  const int64_t start = lg.log_start().value;
  REQUIRE(start > 0);
  const auto first = brute_force(all, 0, start);
  REQUIRE(first);
  // Before everything, or a time only deleted records had: the log-start record.
  CHECK(lookup(lg, 0) == first);
  CHECK(lookup(lg, 1003) == first);
  CHECK(lookup(lg, first->second) == first);
  for (int64_t t = 990; t <= all.back().second + 2; ++t)
    REQUIRE(lookup(lg, t) == brute_force(all, t, start));
}

// Crash recovery: torn tails, flipped bytes, torn indexes, corrupt sealed
// segments. The damage here is past the recovery point (a torn tail); damage
// below it is in corruption.test.cpp.
#include "storage/partition_log.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "storage/recovery_point.hpp"
#include "storage_test_helpers.hpp"
#include "util/atomic_file.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;
namespace fs = std::filesystem;

namespace {

log_config cfg() {
  log_config c;
  c.segment_bytes = 1500;
  c.index_interval_bytes = 200;
  c.checkpoint_interval_ms = 24 * 3600 * 1000;  // flush() leaves the recovery point where the test puts it
  return c;
}

void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::string out;
  REQUIRE_FALSE(moonmq::util::read_file(path, out));
  return out;
}

std::string last_segment_path(const std::string& dir) {
  std::string best;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".log" && e.path().string() > best)
      best = e.path().string();
  return best;
}

// A log with several segments whose active segment holds a few batches.
// Returns the expected records, the LEO before the last batch and the
// position of the last batch inside the active segment.
struct fixture {
  temp_dir tmp;
  std::string dir = tmp.sub("r-0");
  std::vector<std::pair<int64_t, std::string>> expected;  // all records
  int64_t leo_before_last = 0;
  size_t last_batch_pos = 0;
  std::string active_path;
  std::string active_bytes;

  fixture() {
    auto lg = partition_log::open(dir, cfg()).value();
    for (int b = 0; b < 30; ++b) {
      auto recs = make_records(1 + b % 3, b, 40);
      auto batch = encode_batch(recs).value();
      auto base = lg.append(batch).value();
      for (size_t i = 0; i < recs.size(); ++i)
        expected.emplace_back(base.value + static_cast<int64_t>(i), recs[i].value);
      if (b == 29)
        leo_before_last = base.value;
    }
    REQUIRE(lg.flush().ok());
    REQUIRE(lg.segment_count() >= 3);
    active_path = last_segment_path(dir);
    active_bytes = read_bytes(active_path);
    // Walk the active segment to the last batch.
    size_t pos = 0;
    while (true) {
      auto size = peek_batch_size(std::string_view(active_bytes).substr(pos)).value();
      if (pos + size == active_bytes.size())
        break;
      pos += size;
    }
    last_batch_pos = pos;
    REQUIRE(last_batch_pos > 0);  // at least two batches in the active segment
  }

  /// Puts the recovery point at the last batch's base (as if the last
  /// batch was appended after the last checkpoint), so that batch is a tail
  /// recovery may cut. Each open moves the checkpoint up to what it kept.
  void last_batch_unflushed() const {
    REQUIRE(write_recovery_checkpoint(dir, {offset{leo_before_last}, false}).ok());
  }

  std::vector<std::pair<int64_t, std::string>> before_last() const {
    std::vector<std::pair<int64_t, std::string>> out;
    for (auto& e : expected)
      if (e.first < leo_before_last)
        out.push_back(e);
    return out;
  }
};

}  // namespace

TEST_CASE("recovery keeps exactly the earlier batches for a cut at every byte of the last batch",
          "[storage][recovery]") {
  fixture fx;
  const auto earlier = fx.before_last();
  for (size_t cut = fx.last_batch_pos; cut < fx.active_bytes.size(); ++cut) {
    INFO("cut at " << cut);
    write_bytes(fx.active_path, std::string_view(fx.active_bytes).substr(0, cut));
    fx.last_batch_unflushed();
    auto lg = partition_log::open(fx.dir, cfg());
    REQUIRE(lg.ok());
    REQUIRE(lg->log_end() == offset{fx.leo_before_last});
    REQUIRE(fs::file_size(fx.active_path) == fx.last_batch_pos);  // torn tail removed
    // Appends continue at the right offset, then the full log reads back.
    auto b = make_batch(2, 99);
    REQUIRE(lg->append(b).value() == offset{fx.leo_before_last});
    REQUIRE(lg->log_end() == offset{fx.leo_before_last + 2});
    if (cut == fx.last_batch_pos || cut + 1 == fx.active_bytes.size()) {
      auto all = read_all(*lg);
      REQUIRE(all.size() == earlier.size() + 2);
      REQUIRE(std::equal(earlier.begin(), earlier.end(), all.begin()));
    }
  }
  // Uncut: everything survives.
  write_bytes(fx.active_path, fx.active_bytes);
  auto lg = partition_log::open(fx.dir, cfg()).value();
  CHECK(read_all(lg) == fx.expected);
}

TEST_CASE("a flipped byte anywhere in the last batch truncates to the previous batch",
          "[storage][recovery]") {
  fixture fx;
  const auto earlier = fx.before_last();
  for (size_t pos = fx.last_batch_pos; pos < fx.active_bytes.size(); ++pos) {
    INFO("flip at batch byte " << pos - fx.last_batch_pos);
    auto bytes = fx.active_bytes;
    bytes[pos] = static_cast<char>(bytes[pos] ^ 0xA5);
    write_bytes(fx.active_path, bytes);
    fx.last_batch_unflushed();
    auto lg = partition_log::open(fx.dir, cfg());
    REQUIRE(lg.ok());
    size_t rel = pos - fx.last_batch_pos;
    if (rel >= 12 && rel < 16) {
      // partitionLeaderEpoch is outside the CRC (Kafka's layout) and carries
      // no record data: the batch stays.
      CHECK(read_all(*lg) == fx.expected);
      continue;
    }
    REQUIRE(lg->log_end() == offset{fx.leo_before_last});
    REQUIRE(read_all(*lg) == earlier);
  }
}

TEST_CASE("zero-filled or garbage tails after the last batch are cut", "[storage][recovery]") {
  fixture fx;
  for (auto tail : {std::string(4096, '\0'), pseudo_bytes(100, 3), std::string(11, '\x01')}) {
    write_bytes(fx.active_path, fx.active_bytes + tail);
    auto lg = partition_log::open(fx.dir, cfg()).value();
    CHECK(read_all(lg) == fx.expected);
    CHECK(fs::file_size(fx.active_path) == fx.active_bytes.size());
  }
}

TEST_CASE("a torn, garbage or missing index of a sealed segment is rebuilt",
          "[storage][recovery]") {
  fixture fx;
  auto first_index = fx.dir + "/" + segment_index_name(offset{0});
  const auto original = read_bytes(first_index);
  REQUIRE(original.size() >= 16);
  std::vector<std::string> damaged = {original.substr(0, original.size() - 3),
                                      original.substr(0, 0), pseudo_bytes(original.size(), 5)};
  for (size_t i = 0; i <= damaged.size(); ++i) {
    INFO("case " << i);
    if (i < damaged.size())
      write_bytes(first_index, damaged[i]);
    else
      fs::remove(first_index);
    auto lg = partition_log::open(fx.dir, cfg()).value();
    CHECK(read_bytes(first_index) == original);
    CHECK(read_all(lg, 1) == fx.expected);
  }
}

TEST_CASE("a stale but well-formed index never misdirects reads", "[storage][recovery]") {
  fixture fx;
  // Entries that are increasing and in bounds but point at wrong positions.
  auto first_index = fx.dir + "/" + segment_index_name(offset{0});
  write_bytes(first_index, encode_index({{0, 0}, {1, 7}, {3, 9}}));
  auto lg = partition_log::open(fx.dir, cfg()).value();
  CHECK(read_all(lg, 1) == fx.expected);
}

TEST_CASE("a corrupt sealed segment refuses the open instead of serving a shorter log",
          "[storage][recovery]") {
  fixture fx;
  auto first_log = fx.dir + "/" + segment_log_name(offset{0});
  auto bytes = read_bytes(first_log);
  auto first_size = peek_batch_size(bytes).value();
  const auto first_batch = batch_view::parse(bytes).value();
  const int64_t first_last = first_batch.last_offset().value;
  // Smash the header of the second batch.
  for (size_t i = first_size; i < first_size + 20 && i < bytes.size(); ++i)
    bytes[i] = '\xee';
  write_bytes(first_log, bytes);
  fs::remove(fx.dir + "/" + segment_index_name(offset{0}));  // force a rescan

  auto lg = partition_log::open(fx.dir, cfg());
  REQUIRE_FALSE(lg.ok());
  CHECK(lg.err().code == errc::corrupt_log);
  REQUIRE(lg.err().damaged);
  CHECK(lg.err().damaged->path == first_log);
  CHECK(lg.err().damaged->sealed);
  CHECK(lg.err().damaged->position == first_size);
  CHECK(lg.err().damaged->first == offset{first_last + 1});
  CHECK(read_bytes(first_log) == bytes);  // nothing cut
}

TEST_CASE("an empty active segment left by a crash during a roll opens cleanly",
          "[storage][recovery]") {
  fixture fx;
  auto leo = static_cast<int64_t>(fx.expected.size());
  write_bytes(fx.dir + "/" + segment_log_name(offset{leo}), "");
  write_bytes(fx.dir + "/" + segment_index_name(offset{leo}) + ".tmp", "junk");
  auto lg = partition_log::open(fx.dir, cfg()).value();
  CHECK(lg.log_end() == offset{leo});
  CHECK(read_all(lg) == fx.expected);
  CHECK_FALSE(fs::exists(fx.dir + "/" + segment_index_name(offset{leo}) + ".tmp"));
  auto b = make_batch(2, 1);
  CHECK(lg.append(b).value() == offset{leo});
}

// Damage below the recovery point (bit rot, a zeroed block, a lost tail)
// never removes records silently: open refuses with the damage, repair cuts
// it on request without reusing an offset; a torn tail past the recovery
// point is still cut quietly.
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

constexpr int batches = 100;
constexpr int per_batch = 10;
constexpr int64_t total = batches * per_batch;

log_config one_segment() {
  log_config c;
  c.checkpoint_interval_ms = 0;  // every flush moves the recovery point
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

/// Byte position of every batch of a segment file, and the file end last.
std::vector<size_t> batch_positions(const std::string& bytes) {
  std::vector<size_t> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    out.push_back(pos);
    pos += peek_batch_size(std::string_view(bytes).substr(pos)).value();
  }
  out.push_back(pos);
  return out;
}

// 1,000 records in 100 batches of one segment, flushed (the recovery point
// is 1,000), the log object gone as after a crash after the last fsync, or
// closed cleanly.
struct flushed_log {
  temp_dir tmp;
  std::string dir = tmp.sub("c-0");
  std::string path = dir + "/" + segment_log_name(offset{0});
  std::vector<std::pair<int64_t, std::string>> expected;
  std::string bytes;
  std::vector<size_t> positions;

  explicit flushed_log(bool clean_close) {
    auto lg = partition_log::open(dir, one_segment()).value();
    for (int b = 0; b < batches; ++b) {
      auto recs = make_records(per_batch, b, 30);
      auto batch = encode_batch(recs).value();
      auto base = lg.append(batch).value();
      for (size_t i = 0; i < recs.size(); ++i)
        expected.emplace_back(base.value + static_cast<int64_t>(i), recs[i].value);
    }
    REQUIRE(lg.flush().value() == offset{total});
    REQUIRE(lg.recovery_point() == offset{total});
    if (clean_close)
      REQUIRE(lg.close().ok());
    bytes = read_bytes(path);
    positions = batch_positions(bytes);
    REQUIRE(positions.size() == batches + 1);
  }

  /// Index of the batch holding byte `pos`.
  size_t batch_at(size_t pos) const {
    return static_cast<size_t>(std::upper_bound(positions.begin(), positions.end(), pos) - positions.begin()) - 1;
  }

  std::vector<std::pair<int64_t, std::string>> below(int64_t end) const {
    std::vector<std::pair<int64_t, std::string>> out;
    for (const auto& e : expected)
      if (e.first < end)
        out.push_back(e);
    return out;
  }
};

void require_refused_at(const flushed_log& fx, const result<partition_log>& lg, size_t batch) {
  REQUIRE_FALSE(lg.ok());
  INFO(lg.err().message);
  REQUIRE(lg.err().code == errc::corrupt_log);
  REQUIRE(lg.err().damaged);
  const auto& d = *lg.err().damaged;
  CHECK(d.path == fx.path);
  CHECK(d.position == fx.positions[batch]);
  CHECK(d.first == offset{static_cast<int64_t>(batch) * per_batch});
  CHECK(d.end == offset{total});
  CHECK(d.recovery_point == offset{total});
  CHECK_FALSE(d.sealed);
  // The message names the file, the byte position and the offsets.
  CHECK_THAT(lg.err().message, Catch::Contains(fx.path));
  CHECK_THAT(lg.err().message, Catch::Contains("position=" + std::to_string(fx.positions[batch])));
  CHECK_THAT(lg.err().message,
             Catch::Contains("offsets [" + std::to_string(batch * per_batch) + ", " + std::to_string(total) + ")"));
}

}  // namespace

TEST_CASE("two XOR-ed bytes in a flushed segment refuse the open and cut nothing", "[storage][corruption]") {
  for (bool clean : {false, true}) {
    INFO((clean ? "closed cleanly" : "crashed after the last fsync"));
    flushed_log fx{clean};
    auto damaged = fx.bytes;
    const size_t mid = damaged.size() / 2;
    damaged[mid] = static_cast<char>(damaged[mid] ^ 0x5a);
    damaged[mid + 1] = static_cast<char>(damaged[mid + 1] ^ 0x5a);
    write_bytes(fx.path, damaged);
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto lg = partition_log::open(fx.dir, one_segment());
      require_refused_at(fx, lg, fx.batch_at(mid));
      CHECK(read_bytes(fx.path) == damaged);  // not one byte removed
    }
  }
}

TEST_CASE("a zeroed 4 KiB block in a flushed segment refuses the open and cuts nothing", "[storage][corruption]") {
  flushed_log fx{true};
  auto damaged = fx.bytes;
  const size_t from = damaged.size() * 3 / 10;
  std::fill(damaged.begin() + static_cast<std::ptrdiff_t>(from), damaged.begin() + static_cast<std::ptrdiff_t>(from + 4096),
            '\0');
  write_bytes(fx.path, damaged);
  auto lg = partition_log::open(fx.dir, one_segment());
  require_refused_at(fx, lg, fx.batch_at(from));
  CHECK(read_bytes(fx.path) == damaged);
}

TEST_CASE("repair cuts at the damage, says what went and never reuses an offset", "[storage][corruption]") {
  flushed_log fx{false};
  auto damaged = fx.bytes;
  const size_t from = damaged.size() / 2;
  std::fill(damaged.begin() + static_cast<std::ptrdiff_t>(from), damaged.begin() + static_cast<std::ptrdiff_t>(from + 4096),
            '\0');
  write_bytes(fx.path, damaged);
  const size_t batch = fx.batch_at(from);
  const int64_t first = static_cast<int64_t>(batch) * per_batch;

  repair_result report;
  auto lg = partition_log::repair(fx.dir, one_segment(), report);
  REQUIRE(lg.ok());
  REQUIRE(report.cuts.size() == 1);
  CHECK(report.cuts[0].path == fx.path);
  CHECK(report.cuts[0].position == fx.positions[batch]);
  CHECK(report.cuts[0].first == offset{first});
  CHECK(report.cuts[0].end == offset{total});
  CHECK(report.records == static_cast<uint64_t>(total - first));
  CHECK(report.bytes == damaged.size() - fx.positions[batch]);
  // Everything before the damage is kept; the next offset is the recovery point.
  CHECK(lg->log_end() == offset{total});
  CHECK(read_all(*lg) == fx.below(first));
  auto next = make_batch(3, 777);
  CHECK(lg->append(next).value() == offset{total});
  REQUIRE(lg->flush().ok());
  // A read inside the gap gets the first batch after it.
  auto in_gap = lg->read(offset{first}, 1 << 20);
  REQUIRE(in_gap.ok());
  CHECK(batch_view::parse(in_gap->batches).value().base_offset() == offset{total});

  // Reopening finds nothing more to cut.
  lg = partition_log::open(fx.dir, one_segment());
  REQUIRE(lg.ok());
  CHECK(lg->log_end() == offset{total + 3});
  auto all = read_all(*lg);
  CHECK(all.size() == static_cast<size_t>(first) + 3);
  CHECK(all.back().first == total + 2);
  repair_result again;
  REQUIRE(partition_log::repair(fx.dir, one_segment(), again).ok());
  CHECK(again.cuts.empty());
}

TEST_CASE("repair keeps the next offset above valid batches past the damage when the checkpoint lags",
          "[storage][corruption]") {
  flushed_log fx{false};
  // The checkpoint says only the first 500 records were flushed.
  REQUIRE(write_recovery_checkpoint(fx.dir, {offset{500}, false}).ok());
  auto damaged = fx.bytes;
  const size_t pos = fx.positions[20] + 70;  // inside a record of batch 20 (offsets 200..209)
  damaged[pos] = static_cast<char>(damaged[pos] ^ 0x01);
  write_bytes(fx.path, damaged);
  auto refused = partition_log::open(fx.dir, one_segment());
  REQUIRE_FALSE(refused.ok());
  REQUIRE(refused.err().damaged);
  CHECK(refused.err().damaged->first == offset{200});
  CHECK(refused.err().damaged->end == offset{total});  // the valid batches past it count
  CHECK(refused.err().damaged->recovery_point == offset{500});
  repair_result report;
  auto lg = partition_log::repair(fx.dir, one_segment(), report);
  REQUIRE(lg.ok());
  CHECK(report.records == 800);
  CHECK(lg->log_end() == offset{total});
}

TEST_CASE("a torn tail past the recovery point is still cut quietly", "[storage][corruption]") {
  temp_dir tmp;
  auto dir = tmp.sub("c-1");
  auto path = dir + "/" + segment_log_name(offset{0});
  size_t flushed_bytes = 0;
  {
    auto lg = partition_log::open(dir, one_segment()).value();
    for (int b = 0; b < 50; ++b) {
      auto batch = make_batch(per_batch, b, 30);
      REQUIRE(lg.append(batch).ok());
    }
    REQUIRE(lg.flush().value() == offset{500});
    flushed_bytes = fs::file_size(path);
    for (int b = 50; b < 60; ++b) {  // appended, never flushed: past the recovery point
      auto batch = make_batch(per_batch, b, 30);
      REQUIRE(lg.append(batch).ok());
    }
  }
  const auto bytes = read_bytes(path);
  const auto positions = batch_positions(bytes);
  SECTION("cut inside the last batch") {
    write_bytes(path, std::string_view(bytes).substr(0, positions[59] + 30));
    auto lg = partition_log::open(dir, one_segment());
    REQUIRE(lg.ok());
    CHECK(lg->log_end() == offset{590});
    CHECK(fs::file_size(path) == positions[59]);
  }
  SECTION("a flipped byte in an unflushed batch") {
    auto damaged = bytes;
    damaged[positions[55] + 40] ^= 0x10;
    write_bytes(path, damaged);
    auto lg = partition_log::open(dir, one_segment());
    REQUIRE(lg.ok());
    CHECK(lg->log_end() == offset{550});
  }
  SECTION("zeros where unflushed batches were") {
    auto damaged = bytes;
    std::fill(damaged.begin() + static_cast<std::ptrdiff_t>(flushed_bytes), damaged.end(), '\0');
    write_bytes(path, damaged);
    auto lg = partition_log::open(dir, one_segment());
    REQUIRE(lg.ok());
    CHECK(lg->log_end() == offset{500});
    // The open made the kept records the new recovery point.
    CHECK(lg->recovery_point() == offset{500});
  }
  SECTION("but a flipped byte at the recovery point's last batch refuses") {
    auto damaged = bytes;
    damaged[positions[49] + 40] ^= 0x10;
    write_bytes(path, damaged);
    auto lg = partition_log::open(dir, one_segment());
    REQUIRE_FALSE(lg.ok());
    CHECK(lg.err().code == errc::corrupt_log);
    CHECK(lg.err().damaged->first == offset{490});
  }
}

TEST_CASE("after a clean close nothing may be cut, and the next append clears the flag", "[storage][corruption]") {
  temp_dir tmp;
  auto dir = tmp.sub("c-2");
  auto path = dir + "/" + segment_log_name(offset{0});
  {
    auto lg = partition_log::open(dir, one_segment()).value();
    auto batch = make_batch(per_batch, 1, 30);
    REQUIRE(lg.append(batch).ok());
    REQUIRE(lg.close().ok());
  }
  auto loaded = read_recovery_checkpoint(dir).value();
  REQUIRE(loaded.state == loaded_checkpoint::kind::valid);
  CHECK(loaded.value.clean);
  CHECK(loaded.value.point == offset{per_batch});
  const auto bytes = read_bytes(path);
  SECTION("bytes after a clean end are damage") {
    write_bytes(path, bytes + std::string(100, '\0'));
    auto lg = partition_log::open(dir, one_segment());
    REQUIRE_FALSE(lg.ok());
    CHECK(lg.err().code == errc::corrupt_log);
    // Repair cuts them without losing an offset.
    repair_result report;
    auto fixed = partition_log::repair(dir, one_segment(), report);
    REQUIRE(fixed.ok());
    CHECK(report.records == 0);
    CHECK(report.bytes == 100);
    CHECK(fixed->log_end() == offset{per_batch});
  }
  SECTION("an append after reopening makes a torn tail cuttable again") {
    {
      auto lg = partition_log::open(dir, one_segment()).value();
      auto batch = make_batch(per_batch, 2, 30);
      REQUIRE(lg.append(batch).ok());
      auto after = read_recovery_checkpoint(dir).value();
      CHECK_FALSE(after.value.clean);
    }
    auto grown = read_bytes(path);
    write_bytes(path, grown.substr(0, grown.size() - 5));
    auto lg = partition_log::open(dir, one_segment());
    REQUIRE(lg.ok());
    CHECK(lg->log_end() == offset{per_batch});
  }
}

TEST_CASE("without a readable checkpoint only a final batch running past the end is cut",
          "[storage][corruption]") {
  for (bool garbage : {false, true}) {
    INFO((garbage ? "unreadable checkpoint" : "no checkpoint (a log written before checkpoints)"));
    flushed_log fx{false};
    auto checkpoint = fx.dir + "/" + recovery_point_file_name;
    auto forget = [&] {
      if (garbage)
        write_bytes(checkpoint, "moonmq-recovery-point v1 offset=9 clean=0 crc32c=00000000\n");
      else
        fs::remove(checkpoint);
    };
    // A CRC-invalid batch in the middle: refused, recovery point unknown.
    auto damaged = fx.bytes;
    damaged[fx.positions[40] + 30] ^= 0x04;
    write_bytes(fx.path, damaged);
    forget();
    auto lg = partition_log::open(fx.dir, one_segment());
    REQUIRE_FALSE(lg.ok());
    REQUIRE(lg.err().code == errc::corrupt_log);
    CHECK(lg.err().damaged->first == offset{400});
    CHECK(lg.err().damaged->recovery_point == offset{-1});
    CHECK(lg.err().damaged->end == offset{total});  // valid batches follow it
    CHECK(read_bytes(fx.path) == damaged);
    // Zeros after the last batch are not provably torn either.
    write_bytes(fx.path, fx.bytes + std::string(4096, '\0'));
    forget();
    CHECK(partition_log::open(fx.dir, one_segment()).err().code == errc::corrupt_log);
    // A final batch cut short is.
    write_bytes(fx.path, fx.bytes.substr(0, fx.bytes.size() - 7));
    forget();
    auto cut = partition_log::open(fx.dir, one_segment());
    REQUIRE(cut.ok());
    CHECK(cut->log_end() == offset{total - per_batch});
    // ... and the open writes a checkpoint for what it kept.
    auto loaded = read_recovery_checkpoint(fx.dir).value();
    REQUIRE(loaded.state == loaded_checkpoint::kind::valid);
    CHECK(loaded.value.point == offset{total - per_batch});
  }
}

TEST_CASE("a log that ends below its recovery point refuses to open", "[storage][corruption]") {
  flushed_log fx{true};
  // The file lost its last 30 batches, cut at a batch boundary.
  write_bytes(fx.path, std::string_view(fx.bytes).substr(0, fx.positions[70]));
  auto lg = partition_log::open(fx.dir, one_segment());
  REQUIRE_FALSE(lg.ok());
  REQUIRE(lg.err().code == errc::corrupt_log);
  CHECK(lg.err().damaged->first == offset{700});
  CHECK(lg.err().damaged->end == offset{total});
  repair_result report;
  auto fixed = partition_log::repair(fx.dir, one_segment(), report);
  REQUIRE(fixed.ok());
  CHECK(report.records == 300);
  CHECK(report.bytes == 0);
  CHECK(fixed->log_end() == offset{total});
  auto b = make_batch(1, 5);
  CHECK(fixed->append(b).value() == offset{total});
}

TEST_CASE("a directory without segments below a recovery point refuses and repair starts at it",
          "[storage][corruption]") {
  flushed_log fx{true};
  fs::remove(fx.path);
  fs::remove(fx.dir + "/" + segment_index_name(offset{0}));
  auto lg = partition_log::open(fx.dir, one_segment());
  REQUIRE_FALSE(lg.ok());
  CHECK(lg.err().code == errc::corrupt_log);
  repair_result report;
  auto fixed = partition_log::repair(fx.dir, one_segment(), report);
  REQUIRE(fixed.ok());
  CHECK(fixed->log_start() == offset{total});
  CHECK(fixed->log_end() == offset{total});
}

TEST_CASE("a damaged sealed segment refuses and repair keeps the later segments", "[storage][corruption]") {
  temp_dir tmp;
  auto dir = tmp.sub("c-3");
  log_config c = one_segment();
  c.segment_bytes = 2000;
  std::vector<std::pair<int64_t, std::string>> expected;
  {
    auto lg = partition_log::open(dir, c).value();
    for (int b = 0; b < 40; ++b) {
      auto recs = make_records(4, b, 40);
      auto batch = encode_batch(recs).value();
      auto base = lg.append(batch).value();
      for (size_t i = 0; i < recs.size(); ++i)
        expected.emplace_back(base.value + static_cast<int64_t>(i), recs[i].value);
    }
    REQUIRE(lg.segment_count() >= 4);
    REQUIRE(lg.flush().ok());
  }
  std::vector<offset> bases;
  for (auto& e : fs::directory_iterator(dir))
    if (auto b = parse_segment_log_name(e.path().filename().string()))
      bases.push_back(*b);
  std::sort(bases.begin(), bases.end());
  const auto second = dir + "/" + segment_log_name(bases[1]);
  auto bytes = read_bytes(second);
  const auto positions = batch_positions(bytes);
  REQUIRE(positions.size() >= 4);
  const int64_t first_lost = bases[1].value + 4;  // the second batch of that segment
  SECTION("a flipped record byte found by an index rebuild") {
    bytes[positions[1] + 70] ^= 0x20;
    fs::remove(dir + "/" + segment_index_name(bases[1]));
  }
  SECTION("a smashed batch header found by the header walk") {
    for (size_t i = positions[1]; i < positions[1] + 20; ++i)
      bytes[i] = '\xee';
  }
  write_bytes(second, bytes);
  auto lg = partition_log::open(dir, c);
  REQUIRE_FALSE(lg.ok());
  REQUIRE(lg.err().code == errc::corrupt_log);
  const auto& d = *lg.err().damaged;
  CHECK(d.path == second);
  CHECK(d.sealed);
  CHECK(d.position == positions[1]);
  CHECK(d.first == offset{first_lost});
  CHECK(d.end == bases[2]);

  repair_result report;
  auto fixed = partition_log::repair(dir, c, report);
  REQUIRE(fixed.ok());
  CHECK(report.records == static_cast<uint64_t>(bases[2].value - first_lost));
  CHECK(fixed->log_end() == offset{static_cast<int64_t>(expected.size())});
  std::vector<std::pair<int64_t, std::string>> kept;
  for (const auto& e : expected)
    if (e.first < first_lost || e.first >= bases[2].value)
      kept.push_back(e);
  CHECK(read_all(*fixed) == kept);
}

TEST_CASE("reset lowers the recovery point, so a torn tail after it is cut", "[storage][corruption]") {
  flushed_log fx{false};
  {
    auto lg = partition_log::open(fx.dir, one_segment()).value();
    REQUIRE(lg.reset(offset{0}).ok());
    CHECK(lg.recovery_point() == offset{0});
    for (int b = 0; b < 5; ++b) {
      auto batch = make_batch(per_batch, b, 30);
      REQUIRE(lg.append(batch).ok());
    }
  }
  auto bytes = read_bytes(fx.path);
  write_bytes(fx.path, bytes.substr(0, bytes.size() - 3));
  auto lg = partition_log::open(fx.dir, one_segment());
  REQUIRE(lg.ok());
  CHECK(lg->log_end() == offset{40});
}

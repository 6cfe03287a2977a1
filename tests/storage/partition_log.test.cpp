#include "storage/partition_log.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "storage_test_helpers.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;

namespace {

log_config small_segments(uint64_t bytes = 2048) {
  log_config c;
  c.segment_bytes = bytes;
  c.index_interval_bytes = 256;
  return c;
}

// Appends `batches` batches of 1..4 records; returns the expected
// (offset, value) list.
std::vector<std::pair<int64_t, std::string>> fill(partition_log& lg, int batches, int seed0 = 0,
                                                  size_t pad = 60) {
  std::vector<std::pair<int64_t, std::string>> expected;
  for (int b = 0; b < batches; ++b) {
    int n = 1 + (b % 4);
    auto recs = make_records(n, seed0 + b, pad);
    auto batch = encode_batch(recs).value();
    auto base = lg.append(batch);
    REQUIRE(base.ok());
    for (int i = 0; i < n; ++i)
      expected.emplace_back(base->value + i, recs[static_cast<size_t>(i)].value);
  }
  return expected;
}

}  // namespace

TEST_CASE("partition_dir joins data dir, topic and partition", "[storage][log]") {
  CHECK(partition_dir("/data", "orders", 3) == "/data/orders-3");
}

TEST_CASE("append assigns base offsets in place and reads return whole batches",
          "[storage][log]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0"));
  REQUIRE(lg.ok());
  CHECK(lg->log_start() == offset{0});
  CHECK(lg->log_end() == offset{0});
  auto b1 = make_batch(3, 1);
  auto b2 = make_batch(2, 2);
  CHECK(lg->append(b1).value() == offset{0});
  CHECK(lg->append(b2).value() == offset{3});
  CHECK(batch_view::parse(b2)->base_offset() == offset{3});  // assigned in place
  CHECK(lg->log_end() == offset{5});

  auto r = lg->read(offset{4}, 1 << 20);
  REQUIRE(r.ok());
  CHECK(r->batches == b2);  // starts with the batch containing offset 4
  CHECK(r->log_start == offset{0});
  CHECK(r->log_end == offset{5});
  auto all = lg->read(offset{1}, 1 << 20);
  CHECK(all->batches == b1 + b2);
  // A limit below the first batch still returns that whole batch.
  auto one = lg->read(offset{0}, 1);
  CHECK(one->batches == b1);
  // A limit between two batches returns only the whole first one.
  auto cut = lg->read(offset{0}, b1.size() + b2.size() - 1);
  CHECK(cut->batches == b1);
  // Reading at LEO is empty, not an error.
  auto at_end = lg->read(offset{5}, 100);
  REQUIRE(at_end.ok());
  CHECK(at_end->batches.empty());
}

TEST_CASE("start_writeback writes nothing durable: the log still needs its sync and reads the same",
          "[storage][log]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0"));
  REQUIRE(lg.ok());
  CHECK(lg->start_writeback().ok());  // nothing written yet: nothing to do
  auto b1 = make_batch(3, 1);
  auto b2 = make_batch(2, 2);
  REQUIRE(lg->append(b1).ok());
  REQUIRE(lg->append(b2).ok());
  const auto durable = lg->durable_offset();
  REQUIRE(lg->start_writeback().ok());
  CHECK(lg->needs_sync());
  CHECK(lg->durable_offset() == durable);
  CHECK(lg->read(offset{0}, 1 << 20)->batches == b1 + b2);
  REQUIRE(lg->flush().ok());
  CHECK(lg->durable_offset() == offset{5});
  CHECK_FALSE(lg->needs_sync());
}

TEST_CASE("append refuses invalid or multi-batch buffers without changing the log",
          "[storage][log]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0")).value();
  auto bad = make_batch(2, 1);
  bad[bad.size() - 1] ^= 0x55;
  CHECK(lg.append(bad).err().code == errc::bad_crc);
  auto two = make_batch(1, 1) + make_batch(1, 2);
  CHECK(lg.append(two).err().code == errc::bad_length);
  CHECK(lg.log_end() == offset{0});
  CHECK(lg.size_bytes() == 0);
}

TEST_CASE("append of a verified batch checks its framing only, and the stored batch keeps its CRC",
          "[storage][log]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0")).value();
  auto b = make_batch(3, 1);
  REQUIRE(batch_view::parse(b, true).ok());  // what the caller of verified did
  CHECK(lg.append(b, batch_check::verified).value() == offset{0});
  auto stored = lg.read(offset{0}, 1 << 20);
  REQUIRE(stored.ok());
  auto view = batch_view::parse(stored->batches, true);  // the CRC still holds with offsets assigned
  REQUIRE(view.ok());
  CHECK(view->base_offset() == offset{0});
  // The framing is still checked: trailing bytes, a short buffer, a wrong magic.
  auto two = make_batch(1, 1) + make_batch(1, 2);
  CHECK(lg.append(two, batch_check::verified).err().code == errc::bad_length);
  auto cut = make_batch(2, 2).substr(0, 40);
  CHECK(lg.append(cut, batch_check::verified).err().code == errc::short_buffer);
  auto magic = make_batch(2, 2);
  magic[16] = 1;
  CHECK(lg.append(magic, batch_check::verified).err().code == errc::bad_magic);
  // The CRC is checked again (bytes changed in memory since the caller's
  // check are never acknowledged), the records are not parsed again.
  auto changed = make_batch(2, 3);
  changed[changed.size() - 1] ^= 0x55;
  CHECK(lg.append(changed).err().code == errc::bad_crc);
  CHECK(lg.append(changed, batch_check::verified).err().code == errc::bad_crc);
  CHECK(lg.log_end() == offset{3});
}

TEST_CASE("log rolls segments and reads every offset across them", "[storage][log]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-1"), small_segments()).value();
  auto expected = fill(lg, 120);
  CHECK(lg.segment_count() > 5);
  CHECK(lg.log_end() == offset{static_cast<int64_t>(expected.size())});
  CHECK(read_all(lg) == expected);
  CHECK(read_all(lg, 1) == expected);  // one batch per read
  // Every single offset: the first batch returned contains it.
  for (int64_t o = 0; o < lg.log_end().value; ++o) {
    auto r = lg.read(offset{o}, 300);
    REQUIRE(r.ok());
    auto view = batch_view::parse(r->batches).value();
    CHECK(view.base_offset() <= offset{o});
    CHECK(view.last_offset() >= offset{o});
  }
  // Segment files are named by base offset and the sizes add up.
  uint64_t on_disk = 0;
  size_t logs = 0;
  for (auto& e : std::filesystem::directory_iterator(tmp.sub("t-1"))) {
    if (e.path().filename() == "recovery-point")
      continue;  // the checkpoint is not a segment file
    on_disk += std::filesystem::file_size(e.path());
    logs += e.path().extension() == ".log";
  }
  CHECK(logs == lg.segment_count());
  CHECK(on_disk <= lg.size_bytes());  // active index is only written at seal
  CHECK(on_disk + 4096 > lg.size_bytes());
}

TEST_CASE("a batch larger than segment.bytes gets a segment of its own", "[storage][log]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0"), small_segments(512)).value();
  auto small = make_batch(1, 1);
  auto big = make_batch(3, 2, 1000);
  REQUIRE(lg.append(small).ok());
  REQUIRE(lg.append(big).ok());
  REQUIRE(lg.append(small).ok());
  CHECK(lg.segment_count() == 3);
  CHECK(lg.read(offset{1}, 10)->batches == big);
}

TEST_CASE("reopen keeps every batch, offsets and segment layout", "[storage][log]") {
  temp_dir tmp;
  std::vector<std::pair<int64_t, std::string>> expected;
  size_t segments = 0;
  {
    auto lg = partition_log::open(tmp.sub("t-2"), small_segments()).value();
    expected = fill(lg, 60);
    REQUIRE(lg.flush().value() == lg.log_end());
    segments = lg.segment_count();
  }
  auto lg = partition_log::open(tmp.sub("t-2"), small_segments()).value();
  CHECK(lg.segment_count() == segments);
  CHECK(lg.log_end() == offset{static_cast<int64_t>(expected.size())});
  CHECK(lg.durable_offset() == lg.log_end());
  CHECK(read_all(lg) == expected);
  auto more = fill(lg, 5, 1000);
  CHECK(more.front().first == static_cast<int64_t>(expected.size()));
}

TEST_CASE("flush reports the durable offset for group commit", "[storage][log]") {
  temp_dir tmp;
  auto lg = partition_log::open(tmp.sub("t-0"), small_segments()).value();
  CHECK(lg.durable_offset() == offset{0});
  auto b = make_batch(4, 1);
  REQUIRE(lg.append(b).ok());
  CHECK(lg.durable_offset() == offset{0});  // appended, not yet synced
  CHECK(lg.flush().value() == offset{4});
  CHECK(lg.durable_offset() == offset{4});
  CHECK(lg.flush().value() == offset{4});  // nothing new: still 4
}

TEST_CASE("a log can start at a non-zero offset and keeps it across reopen", "[storage][log]") {
  temp_dir tmp;
  {
    auto lg = partition_log::create(tmp.sub("moved-0"), offset{1000}, small_segments()).value();
    CHECK(lg.log_start() == offset{1000});
    CHECK(lg.log_end() == offset{1000});
    auto b = make_batch(3, 1);
    CHECK(lg.append(b).value() == offset{1000});
    CHECK(lg.flush().value() == offset{1003});
  }
  auto lg = partition_log::open(tmp.sub("moved-0"), small_segments()).value();
  CHECK(lg.log_start() == offset{1000});
  CHECK(lg.log_end() == offset{1003});
  auto r = lg.read(offset{1002}, 100);
  REQUIRE(r.ok());
  CHECK(batch_view::parse(r->batches)->base_offset() == offset{1000});
}

TEST_CASE("reads outside [log-start, LEO] carry both bounds", "[storage][log]") {
  temp_dir tmp;
  auto lg = partition_log::create(tmp.sub("t-0"), offset{50}).value();
  auto b = make_batch(5, 1);
  REQUIRE(lg.append(b).ok());
  for (int64_t bad : {int64_t{0}, int64_t{49}, int64_t{56}, int64_t{1} << 40}) {
    auto r = lg.read(offset{bad}, 100);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::offset_out_of_range);
    CHECK(r.err().log_start == offset{50});
    CHECK(r.err().log_end == offset{55});
  }
  CHECK(lg.read(offset{50}, 100).ok());
  CHECK(lg.read(offset{55}, 100).ok());
}

TEST_CASE("append_with_offsets copies a partition batch for batch", "[storage][log]") {
  temp_dir tmp;
  auto src = partition_log::create(tmp.sub("src-0"), offset{300}, small_segments()).value();
  auto expected = fill(src, 40);
  auto dst = partition_log::create(tmp.sub("dst-0"), src.log_start(), small_segments()).value();
  offset next = src.log_start();
  while (next < src.log_end()) {
    auto r = src.read(next, 700).value();
    std::string_view rest = r.batches;
    while (!rest.empty()) {
      auto view = batch_view::parse(rest).value();
      REQUIRE(dst.append_with_offsets(view.bytes()).value() == view.base_offset());
      next = offset{view.last_offset().value + 1};
      rest.remove_prefix(view.size());
    }
  }
  CHECK(dst.log_end() == src.log_end());
  CHECK(read_all(dst) == expected);

  // A batch that is not exactly at LEO is refused with the bounds.
  auto stale = src.read(offset{300}, 1).value().batches;
  auto r = dst.append_with_offsets(stale);
  REQUIRE_FALSE(r.ok());
  CHECK(r.err().code == errc::base_offset_mismatch);
  CHECK(r.err().log_start == offset{300});
  CHECK(r.err().log_end == src.log_end());
  CHECK(dst.log_end() == src.log_end());
}

TEST_CASE("reset discards everything and remove deletes the directory", "[storage][log]") {
  temp_dir tmp;
  auto dir = tmp.sub("t-9");
  auto lg = partition_log::open(dir, small_segments()).value();
  fill(lg, 40);
  REQUIRE(lg.segment_count() > 1);
  REQUIRE(lg.reset(offset{777}).ok());
  CHECK(lg.log_start() == offset{777});
  CHECK(lg.log_end() == offset{777});
  CHECK(lg.segment_count() == 1);
  CHECK(lg.size_bytes() == 0);
  auto b = make_batch(2, 5);
  CHECK(lg.append(b).value() == offset{777});
  REQUIRE(lg.flush().ok());
  {
    auto again = partition_log::open(dir, small_segments()).value();
    CHECK(again.log_start() == offset{777});
    CHECK(again.log_end() == offset{779});
  }
  REQUIRE(partition_log::remove(dir).ok());
  CHECK_FALSE(std::filesystem::exists(dir));
  CHECK(partition_log::remove(dir).ok());  // already gone: fine
}

TEST_CASE("reset leaves no retired segment behind and open removes one a crash left", "[storage][log]") {
  temp_dir tmp;
  auto dir = tmp.sub("t-8");
  auto count_retired = [&] {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      n += e.path().filename().string().find(".deleted") != std::string::npos ? 1 : 0;
    return n;
  };
  {
    auto lg = partition_log::open(dir, small_segments()).value();
    fill(lg, 40);
    REQUIRE(lg.segment_count() > 1);
    REQUIRE(lg.reset(offset{100}).ok());
    CHECK(count_retired() == 0);
    CHECK(lg.log_end() == offset{100});
  }
  // A crash between the rename and the delete leaves a retired segment.
  {
    std::ofstream left{dir + "/00000000000000000000.log.deleted"};
    left << std::string(4096, 'x');
  }
  REQUIRE(count_retired() == 1);
  auto reopened = partition_log::open(dir, small_segments()).value();
  CHECK(count_retired() == 0);
  CHECK(reopened.log_start() == offset{100});
  CHECK(reopened.log_end() == offset{100});
}

TEST_CASE("create over an existing directory starts a fresh log", "[storage][log]") {
  temp_dir tmp;
  auto dir = tmp.sub("t-0");
  {
    auto lg = partition_log::open(dir, small_segments()).value();
    fill(lg, 30);
  }
  auto lg = partition_log::create(dir, offset{5}, small_segments()).value();
  CHECK(lg.segment_count() == 1);
  CHECK(lg.log_end() == offset{5});
  auto reopened = partition_log::open(dir, small_segments()).value();
  CHECK(reopened.log_start() == offset{5});
  CHECK(reopened.log_end() == offset{5});
}

TEST_CASE("open refuses a zero segment size", "[storage][log]") {
  temp_dir tmp;
  log_config c;
  c.segment_bytes = 0;
  CHECK(partition_log::open(tmp.sub("t-0"), c).err().code == errc::invalid_argument);
}

TEST_CASE("a log holds one fd however many segments it has", "[storage][log]") {
  auto open_fds = [] {
    size_t n = 0;
    for (auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
      (void)e;
      ++n;
    }
    return n;
  };
  temp_dir tmp;
  std::vector<partition_log> logs;
  for (int p = 0; p < 3; ++p) {
    auto lg = partition_log::open(tmp.sub("t-" + std::to_string(p)), small_segments()).value();
    fill(lg, 40);
    REQUIRE(lg.segment_count() >= 4);
    logs.push_back(std::move(lg));
  }
  logs.clear();
  const auto before = open_fds();
  for (int p = 0; p < 3; ++p)
    logs.push_back(partition_log::open(tmp.sub("t-" + std::to_string(p)), small_segments()).value());
  CHECK(open_fds() == before + 3);
  // Reads from sealed segments open and close their files.
  for (auto& lg : logs)
    CHECK(read_all(lg, 1).size() == static_cast<size_t>(lg.log_end().value));
  CHECK(open_fds() == before + 3);
}

// The log-start offset DeleteRecords advances: its file, reads and
// retention around it, reopen, reset and create.
#include "storage/partition_log.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "storage/recovery_point.hpp"
#include "storage_test_helpers.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;

namespace {

log_config cfg() { return one_kib_segments(); }

// Appends `n` batches of 2 records each (offsets 2i, 2i+1).
void fill(partition_log& lg, int n) {
  for (int i = 0; i < n; ++i) {
    auto b = make_batch(2, i, 80);
    REQUIRE(lg.append(b).ok());
  }
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc | std::ios::binary);
  f << text;
}

}  // namespace

TEST_CASE("a log-start line round-trips and a damaged one does not decode", "[storage][log_start]") {
  for (int64_t v : {int64_t{0}, int64_t{17}, INT64_MAX}) {
    auto line = encode_log_start(offset{v});
    CHECK(line.rfind("moonmq-log-start v1 offset=", 0) == 0);
    CHECK(decode_log_start(line) == offset{v});
  }
  const auto line = encode_log_start(offset{98765});
  for (size_t i = 0; i < line.size(); ++i) {
    auto bad = line;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    INFO("byte " << i);
    CHECK_FALSE(decode_log_start(bad));
  }
  for (size_t n = 0; n < line.size(); ++n)
    CHECK_FALSE(decode_log_start(line.substr(0, n)));
  // A recovery-point line is not a log-start line, and the reverse.
  CHECK_FALSE(decode_log_start(encode_recovery_checkpoint({offset{5}, false})));
  CHECK_FALSE(decode_recovery_checkpoint(line));
}

TEST_CASE("advancing the log start hides the offsets below it and survives a reopen", "[storage][log_start]") {
  temp_dir tmp;
  const auto dir = tmp.sub("t-0");
  auto lg = partition_log::open(dir, cfg()).value();
  fill(lg, 10);  // offsets 0..19
  CHECK(read_log_start(dir)->state == loaded_checkpoint::kind::missing);

  // Inside the batch [6, 7]: the log starts at 7, the batch still reads whole.
  REQUIRE(lg.advance_log_start(offset{7}).value() == offset{7});
  CHECK(lg.log_start() == offset{7});
  CHECK(lg.durable_offset() >= offset{7});  // flushed before the file was written
  auto below = lg.read(offset{6}, 1 << 20);
  REQUIRE_FALSE(below.ok());
  CHECK(below.err().code == errc::offset_out_of_range);
  CHECK(below.err().log_start == offset{7});
  auto at = lg.read(offset{7}, 1).value();
  CHECK(batch_view::parse(at.batches)->base_offset() == offset{6});
  CHECK(at.log_start == offset{7});
  auto values = read_all(lg);
  REQUIRE_FALSE(values.empty());
  CHECK(values.front().first == 7);
  auto stored = read_log_start(dir).value();
  CHECK(stored.state == loaded_checkpoint::kind::valid);
  CHECK(stored.value == offset{7});

  // At or below the log start changes nothing; above the log end is refused.
  CHECK(lg.advance_log_start(offset{7}).value() == offset{7});
  CHECK(lg.advance_log_start(offset{3}).value() == offset{7});
  auto above = lg.advance_log_start(offset{21});
  REQUIRE_FALSE(above.ok());
  CHECK(above.err().code == errc::offset_out_of_range);
  CHECK(above.err().log_end == offset{20});
  CHECK(lg.advance_log_start(offset{-2}).err().code == errc::invalid_argument);
  CHECK(lg.log_start() == offset{7});

  // Kept by a clean close and by a crash (no close) alike.
  REQUIRE(lg.close().ok());
  CHECK(partition_log::open(dir, cfg())->log_start() == offset{7});
  {
    auto again = partition_log::open(dir, cfg()).value();
    REQUIRE(again.advance_log_start(offset{11}).ok());
  }
  auto reopened = partition_log::open(dir, cfg()).value();
  CHECK(reopened.log_start() == offset{11});
  CHECK(reopened.log_end() == offset{20});
  CHECK(reopened.read(offset{10}, 100).err().code == errc::offset_out_of_range);

  // -1 is the log end: nothing is left to read, appends continue there.
  CHECK(reopened.advance_log_start(offset{-1}).value() == offset{20});
  CHECK(reopened.read(offset{20}, 100)->batches.empty());
  auto b = make_batch(1, 99);
  CHECK(reopened.append(b).value() == offset{20});
  CHECK(partition_log::open(dir, cfg())->log_start() == offset{20});
}

TEST_CASE("sealed segments wholly below the log start are deleted, one straddling it stays",
          "[storage][log_start]") {
  temp_dir tmp;
  const auto dir = tmp.sub("t-0");
  auto lg = partition_log::open(dir, cfg()).value();
  fill(lg, 40);
  REQUIRE(lg.segment_count() > 4);
  // The base of the third segment: the first batch of a file.
  std::vector<offset> bases;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (auto base = parse_segment_log_name(e.path().filename().string()))
      bases.push_back(*base);
  std::sort(bases.begin(), bases.end());
  REQUIRE(bases.size() == lg.segment_count());
  const offset third = bases[2];
  const offset inside{third.value + 1};  // inside the third segment's first batch
  const auto segments = lg.segment_count();

  REQUIRE(lg.advance_log_start(inside).value() == inside);
  CHECK(lg.segment_count() == segments - 2);
  CHECK_FALSE(std::filesystem::exists(dir + "/" + segment_log_name(bases[0])));
  CHECK_FALSE(std::filesystem::exists(dir + "/" + segment_log_name(bases[1])));
  CHECK(std::filesystem::exists(dir + "/" + segment_log_name(third)));
  CHECK(lg.log_start() == inside);

  // Retention keeps the stored log start while the segment holding it
  // stays, and moves past it when that segment goes.
  CHECK(lg.apply_retention(-1, -1, 0)->segments_deleted == 0);
  CHECK(lg.log_start() == inside);
  REQUIRE(lg.apply_retention(0, -1, 0).ok());
  CHECK(lg.segment_count() == 1);
  CHECK(lg.log_start() == bases.back());
  CHECK(partition_log::open(dir, cfg())->log_start() == bases.back());
}

TEST_CASE("an unreadable log-start file is ignored and one above the log end is clamped",
          "[storage][log_start]") {
  temp_dir tmp;
  const auto dir = tmp.sub("t-0");
  {
    auto lg = partition_log::open(dir, cfg()).value();
    fill(lg, 10);
    REQUIRE(lg.advance_log_start(offset{5}).ok());
    REQUIRE(lg.close().ok());
  }
  const auto path = dir + "/" + log_start_file_name;
  auto line = encode_log_start(offset{5});
  // Torn or garbage: the log starts at its first segment, nothing is lost.
  for (const auto& text : {line.substr(0, line.size() / 2), std::string("garbage\n"), std::string()}) {
    write_text(path, text);
    auto lg = partition_log::open(dir, cfg()).value();
    CHECK(lg.log_start() == offset{0});
    CHECK(lg.log_end() == offset{20});
    CHECK(read_all(lg).size() == 20);
  }
  // Stored above the end (records lost below it): the log starts at its
  // end, durably: records appended past the old value stay readable after
  // a reopen and after retention.
  write_text(path, encode_log_start(offset{500}));
  {
    auto lg = partition_log::open(dir, cfg()).value();
    CHECK(lg.log_start() == offset{20});
    CHECK(lg.log_end() == offset{20});
  }
  write_text(path, encode_log_start(offset{25}));
  {
    auto lg = partition_log::open(dir, cfg()).value();
    CHECK(lg.log_start() == offset{20});
    fill(lg, 30);  // 30 batches of 2: offsets 20..79, past the old 25
    REQUIRE(lg.apply_retention(-1, -1, 0).ok());
    CHECK(lg.log_start() == offset{20});
    REQUIRE(lg.close().ok());
  }
  auto lg = partition_log::open(dir, cfg()).value();
  CHECK(lg.log_start() == offset{20});
  CHECK(read_all(lg).size() == 60);
}

TEST_CASE("advancing the log start moves the recovery point up to it", "[storage][log_start]") {
  temp_dir tmp;
  const auto dir = tmp.sub("t-0");
  auto lg = partition_log::open(dir, cfg()).value();
  fill(lg, 10);
  REQUIRE(lg.advance_log_start(offset{7}).ok());
  auto point = read_recovery_checkpoint(dir);
  REQUIRE(point.ok());
  REQUIRE(point->state == loaded_checkpoint::kind::valid);
  CHECK(point->value.point >= offset{7});
}

TEST_CASE("reset and create forget a stored log start", "[storage][log_start]") {
  temp_dir tmp;
  const auto dir = tmp.sub("t-0");
  {
    auto lg = partition_log::open(dir, cfg()).value();
    fill(lg, 10);
    REQUIRE(lg.advance_log_start(offset{9}).ok());
    REQUIRE(lg.reset(offset{4}).ok());
    CHECK(lg.log_start() == offset{4});
    CHECK(read_log_start(dir)->state == loaded_checkpoint::kind::missing);
    fill(lg, 3);  // offsets 4..9
    CHECK(lg.read(offset{4}, 100).ok());
  }
  CHECK(partition_log::open(dir, cfg())->log_start() == offset{4});
  {
    auto lg = partition_log::open(dir, cfg()).value();
    REQUIRE(lg.advance_log_start(offset{6}).ok());
  }
  // A crash in reset after the new segment is in place but before the
  // file goes: the stored start is clamped to the new, empty log's end.
  write_text(dir + "/" + log_start_file_name, encode_log_start(offset{6}));
  {
    auto lg = partition_log::create(dir, offset{2}, cfg()).value();
    CHECK(lg.log_start() == offset{2});
  }
  CHECK(read_log_start(dir)->state == loaded_checkpoint::kind::missing);
  CHECK(partition_log::open(dir, cfg())->log_start() == offset{2});
}

TEST_CASE("a copy into an empty log may begin with the batch that holds its log start", "[storage][log_start]") {
  temp_dir tmp;
  auto src = partition_log::open(tmp.sub("t-0"), cfg()).value();
  fill(src, 10);  // offsets 0..19, batches of 2
  REQUIRE(src.advance_log_start(offset{7}).ok());

  const auto dir = tmp.sub("copy-0");
  auto dst = partition_log::create(dir, src.log_start(), cfg()).value();
  // A first batch past the log start leaves a gap: refused.
  auto below = src.read(offset{8}, 1).value().batches;  // offsets 8..9
  CHECK(dst.append_with_offsets(below).err().code == errc::base_offset_mismatch);
  offset next = src.log_start();
  while (next < src.log_end()) {
    auto r = src.read(next, 1).value();
    auto view = batch_view::parse(r.batches).value();
    REQUIRE(dst.append_with_offsets(r.batches).value() == view.base_offset());
    next = offset{view.last_offset().value + 1};
  }
  CHECK(dst.log_start() == offset{7});
  CHECK(dst.log_end() == offset{20});
  CHECK(dst.read(offset{6}, 100).err().code == errc::offset_out_of_range);
  CHECK(read_all(dst) == read_all(src));
  // A second straddling batch is a mismatch now that the log holds one.
  auto again = src.read(offset{7}, 1).value().batches;
  CHECK(dst.append_with_offsets(again).err().code == errc::base_offset_mismatch);
  REQUIRE(dst.flush().ok());
  auto reopened = partition_log::open(dir, cfg()).value();
  CHECK(reopened.log_start() == offset{7});
  CHECK(reopened.log_end() == offset{20});
  CHECK(read_all(reopened) == read_all(src));
}

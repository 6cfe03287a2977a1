#include "storage/wal.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "storage_test_helpers.hpp"
#include "util/atomic_file.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;
namespace fs = std::filesystem;

namespace {

/// Files directly in `dir` (no subdirectories).
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file())
      out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_bytes(const std::string& path) {
  std::string out;
  REQUIRE(!moonmq::util::read_file(path, out));
  return out;
}

/// The active segment of a log directory (the highest base).
std::string last_segment(const std::string& dir) {
  std::string best;
  for (const auto& f : files_in(dir))
    if (f.size() > 4 && f.compare(f.size() - 4, 4, ".log") == 0)
      best = std::max(best, f);
  REQUIRE(!best.empty());
  return dir + "/" + best;
}

/// A log of `batches` batches of 4 records each, appended and added to a
/// committed WAL of worker 0; the log is dropped without a sync or close,
/// as a crash leaves it. Returns each batch as appended (offsets assigned).
std::vector<std::string> write_with_wal(const std::string& data_dir, const std::string& topic, int32_t partition,
                                        int batches) {
  auto lg = partition_log::open(partition_dir(data_dir, topic, partition));
  REQUIRE(lg.ok());
  REQUIRE(lg->materialize().ok());
  REQUIRE(lg->flush().ok());  // the directory is durable, as a worker makes it before any WAL ack
  auto wal = wal_writer::open(data_dir, 0);
  REQUIRE(wal.ok());
  std::vector<std::string> out;
  for (int i = 0; i < batches; ++i) {
    auto batch = make_batch(4, i, 200);
    REQUIRE(lg->append(batch).ok());
    wal->add(topic, partition, batch);
    out.push_back(batch);
  }
  REQUIRE(wal->commit().ok());
  return out;
}

/// Replaces the one WAL file in `data_dir` with entries of `format` for
/// `batches` of partition t-0.
void rewrite_wal(const std::string& data_dir, const std::vector<std::string>& batches, wal_format format) {
  auto files = files_in(wal_dir(data_dir));
  REQUIRE(files.size() == 1);
  std::string file{wal_header(format)};
  for (const auto& b : batches)
    encode_wal_entry(file, "t", 0, b, format);
  REQUIRE(!moonmq::util::write_file_atomic(wal_dir(data_dir) + "/" + files[0], file));
}

}  // namespace

TEST_CASE("WAL entries decode as they were encoded, a cut tail is torn, a bad CRC before more bytes is damage",
          "[storage][wal]") {
  // Both formats: v1 as earlier builds wrote it, v2 as this one does.
  const auto format = GENERATE(wal_format::v1, wal_format::v2);
  std::string file{wal_header(format)};
  auto a = make_batch(2, 1), b = make_batch(3, 2, 50), c = make_batch(1, 3);
  encode_wal_entry(file, "orders", 7, a, format);
  const auto after_a = file.size();
  encode_wal_entry(file, "t", 0, b, format);
  const auto after_b = file.size();
  encode_wal_entry(file, std::string(300, 'x'), 1 << 30, c, format);

  auto all = decode_wal(file);
  REQUIRE(all.entries.size() == 3);
  CHECK_FALSE(all.torn_tail);
  CHECK_FALSE(all.damaged);
  CHECK(all.valid_bytes == file.size());
  CHECK(all.entries[0].topic == "orders");
  CHECK(all.entries[0].partition == 7);
  CHECK(all.entries[0].batch == a);
  CHECK(all.entries[1].batch == b);
  CHECK(all.entries[2].topic == std::string(300, 'x'));
  CHECK(all.entries[2].partition == 1 << 30);

  SECTION("an entry cut short by a crash is a torn tail") {
    auto cut = decode_wal(std::string_view(file).substr(0, after_b + 20));
    CHECK(cut.entries.size() == 2);
    CHECK(cut.valid_bytes == after_b);
    CHECK(cut.torn_tail);
    CHECK_FALSE(cut.damaged);
  }
  SECTION("zero bytes after the last entry (a preallocated or unwritten page) are a torn tail") {
    auto zeros = file.substr(0, after_a) + std::string(4096, '\0');
    auto scan = decode_wal(zeros);
    CHECK(scan.entries.size() == 1);
    CHECK(scan.torn_tail);
    CHECK_FALSE(scan.damaged);
  }
  SECTION("a flipped byte inside an entry followed by more entries is damage, and nothing after it is read") {
    auto bad = file;
    bad[after_a + 30] ^= 0x40;
    auto scan = decode_wal(bad);
    CHECK(scan.entries.size() == 1);
    CHECK(scan.valid_bytes == after_a);
    CHECK(scan.damaged);
    CHECK_FALSE(scan.torn_tail);
    CHECK(scan.reason.find("CRC") != std::string::npos);
  }
  SECTION("a file without the header is damaged at 0; an empty file holds nothing") {
    auto scan = decode_wal("NOTAWAL!" + file.substr(8));
    CHECK(scan.entries.empty());
    CHECK(scan.damaged);
    auto empty = decode_wal("");
    CHECK(empty.entries.empty());
    CHECK_FALSE(empty.damaged);
  }
}

TEST_CASE("a v2 entry's batch is covered by its own CRC: a flipped byte anywhere in an entry is damage",
          "[storage][wal]") {
  std::string file{wal_header(wal_format::v2)};
  auto a = make_batch(2, 1), b = make_batch(3, 2, 50), c = make_batch(1, 3);
  encode_wal_entry(file, "orders", 7, a);
  const auto after_a = file.size();
  encode_wal_entry(file, "t", 0, b);
  encode_wal_entry(file, "t", 0, c);
  const auto b_batch = after_a + 12 + 2 + 1 + 4;  // frame, topic length, "t", partition
  // Each position: the entry header, the batch's first 21 bytes (the entry
  // CRC's), and the bytes from attributes on (the batch CRC's).
  const std::vector<std::pair<size_t, std::string>> flips = {
    {after_a + 12, "entry topic length"},               // topic length, high byte: 8193
    {after_a + 13, "entry CRC"},                        // topic length, low byte: 33
    {after_a + 15, "entry CRC"},                        // partition
    {b_batch + 3, "entry CRC"},                         // baseOffset
    {b_batch + 11, "entry CRC"},                        // batchLength
    {b_batch + 18, "entry CRC"},                        // the batch's crc field
    {b_batch + 21, "entry batch CRC"},                  // attributes: first byte the batch CRC covers
    {b_batch + b.size() - 5, "entry batch CRC"},        // a record's value
  };
  for (const auto& [at, reason] : flips) {
    CAPTURE(at - b_batch);
    auto bad = file;
    bad[at] ^= 0x20;
    auto scan = decode_wal(bad);
    CHECK(scan.entries.size() == 1);
    CHECK(scan.valid_bytes == after_a);
    CHECK(scan.damaged);
    CHECK_FALSE(scan.torn_tail);
    CHECK(scan.reason.rfind(reason, 0) == 0);
  }

  SECTION("a batch whose batchLength does not fill its entry is damage") {
    std::string odd{wal_header(wal_format::v2)};
    encode_wal_entry(odd, "t", 0, a);
    encode_wal_entry(odd, "t", 0, b + "x");  // one byte more than its batchLength says
    encode_wal_entry(odd, "t", 0, c);
    auto scan = decode_wal(odd);
    CHECK(scan.entries.size() == 1);
    CHECK(scan.damaged);
    CHECK(scan.reason == "entry batch length does not match the entry");
  }
}

TEST_CASE("replay reads a MOONWAL1 file as earlier builds wrote it", "[storage][wal]") {
  temp_dir dir;
  auto batches = write_with_wal(dir.path(), "t", 0, 3);
  const auto where = partition_dir(dir.path(), "t", 0);
  rewrite_wal(dir.path(), batches, wal_format::v1);
  REQUIRE(::truncate(last_segment(where).c_str(), 0) == 0);

  auto report = replay_wal(dir.path());
  CHECK(report.problems.empty());
  CHECK(report.entries == 3);
  CHECK(report.batches_applied == 3);
  CHECK(files_in(wal_dir(dir.path())).empty());
  auto lg = partition_log::open(where);
  REQUIRE(lg.ok());
  CHECK(lg->log_end().value == 12);
  CHECK(read_all(*lg).size() == 12);
}

TEST_CASE("replay puts back what a crash cut from a segment, and deletes the WAL", "[storage][wal]") {
  temp_dir dir;
  auto batches = write_with_wal(dir.path(), "t", 0, 6);
  const auto where = partition_dir(dir.path(), "t", 0);
  // The crash kept the first two batches and part of the third.
  const auto keep = batches[0].size() + batches[1].size() + 17;
  REQUIRE(::truncate(last_segment(where).c_str(), static_cast<off_t>(keep)) == 0);

  auto report = replay_wal(dir.path());
  CHECK(report.problems.empty());
  CHECK(report.files == 1);
  CHECK(report.entries == 6);
  CHECK(report.partitions == 1);
  CHECK(report.batches_applied == 4);
  CHECK(report.retained_in.empty());
  CHECK(files_in(wal_dir(dir.path())).empty());

  auto lg = partition_log::open(where);
  REQUIRE(lg.ok());
  CHECK(lg->log_end().value == 24);
  auto values = read_all(*lg);
  REQUIRE(values.size() == 24);
  for (size_t i = 0; i < values.size(); ++i) {
    CHECK(values[i].first == static_cast<int64_t>(i));
    CHECK(values[i].second.rfind("v" + std::to_string(i / 4) + "-" + std::to_string(i % 4), 0) == 0);
  }
  // Closed cleanly by the replay: the next open cuts nothing and appends continue.
  auto next = make_batch(1, 99);
  CHECK(lg->append(next).value().value == 24);
}

TEST_CASE("replay of a log that kept everything applies nothing", "[storage][wal]") {
  temp_dir dir;
  write_with_wal(dir.path(), "t", 3, 3);
  auto report = replay_wal(dir.path());
  CHECK(report.problems.empty());
  CHECK(report.entries == 3);
  CHECK(report.batches_applied == 0);
  auto lg = partition_log::open(partition_dir(dir.path(), "t", 3));
  REQUIRE(lg.ok());
  CHECK(lg->log_end().value == 12);
  CHECK(replay_wal(dir.path()).files == 0);  // nothing left to replay
}

TEST_CASE("replay never brings back a deleted partition", "[storage][wal]") {
  temp_dir dir;
  write_with_wal(dir.path(), "gone", 0, 2);
  REQUIRE(partition_log::remove(partition_dir(dir.path(), "gone", 0)).ok());
  auto report = replay_wal(dir.path());
  CHECK(report.problems.empty());
  CHECK(report.batches_applied == 0);
  CHECK_FALSE(fs::exists(partition_dir(dir.path(), "gone", 0)));
  CHECK(files_in(wal_dir(dir.path())).empty());
}

TEST_CASE("entries that do not continue a log are kept for the operator, never applied out of place, and their "
          "offsets are never given out again",
          "[storage][wal]") {
  temp_dir dir;
  auto batches = write_with_wal(dir.path(), "t", 0, 4);
  const auto where = partition_dir(dir.path(), "t", 0);
  // A WAL that lost its first two entries (only the later ones are there):
  // rewrite the file with entries 2 and 3 only.
  const auto files = files_in(wal_dir(dir.path()));
  rewrite_wal(dir.path(), {batches[2], batches[3]}, wal_format::v2);
  REQUIRE(::truncate(last_segment(where).c_str(), static_cast<off_t>(batches[0].size())) == 0);

  auto report = replay_wal(dir.path());
  REQUIRE(report.problems.size() == 1);
  CHECK(report.problems[0].find("does not continue the log") != std::string::npos);
  CHECK(report.batches_applied == 0);
  REQUIRE_FALSE(report.retained_in.empty());
  CHECK(files_in(report.retained_in) == files);
  CHECK(files_in(wal_dir(dir.path())).empty());
  // Offsets 4..15 were acknowledged through the WAL and are not in the log:
  // the log opens offline (it ends below its raised recovery point) rather
  // than give them to other records.
  auto lg = partition_log::open(where);
  REQUIRE_FALSE(lg.ok());
  CHECK(lg.err().code == errc::corrupt_log);
  repair_result cut;
  auto repaired = partition_log::repair(where, {}, cut);
  REQUIRE(repaired.ok());
  CHECK(repaired->log_end().value == 16);
  auto next = make_batch(1, 50);
  CHECK(repaired->append(next).value().value == 16);
  auto values = read_all(*repaired);
  REQUIRE(values.size() == 5);  // nothing was put after the gap
  CHECK(values[3].first == 3);
  CHECK(values[4].first == 16);
}

TEST_CASE("a partition whose log opens corrupt keeps the WAL's offsets: it stays offline and a repair continues "
          "past them",
          "[storage][wal]") {
  temp_dir dir;
  const auto where = partition_dir(dir.path(), "t", 0);
  {
    auto lg = partition_log::open(where);
    REQUIRE(lg.ok());
    for (int i = 0; i < 3; ++i) {
      auto batch = make_batch(4, i, 200);
      REQUIRE(lg->append(batch).ok());
    }
    REQUIRE(lg->flush().ok());  // offsets 0..11 synced in the segment
    auto wal = wal_writer::open(dir.path(), 0);
    REQUIRE(wal.ok());
    for (int i = 3; i < 5; ++i) {  // 12..19 acknowledged through the WAL only
      auto batch = make_batch(4, i, 200);
      REQUIRE(lg->append(batch).ok());
      wal->add("t", 0, batch);
    }
    REQUIRE(wal->commit().ok());
    REQUIRE(lg->checkpoint().ok());
  }
  // Bit rot below the recovery point: the log opens corrupt.
  auto seg = last_segment(where);
  auto bytes = read_bytes(seg);
  bytes[100] ^= 0x10;
  REQUIRE(!moonmq::util::write_file_atomic(seg, bytes));
  REQUIRE_FALSE(partition_log::open(where).ok());

  auto report = replay_wal(dir.path());
  REQUIRE(report.problems.size() == 1);
  CHECK(report.batches_applied == 0);
  CHECK_FALSE(report.retained_in.empty());
  REQUIRE_FALSE(partition_log::open(where).ok());
  repair_result cut;
  auto repaired = partition_log::repair(where, {}, cut);
  REQUIRE(repaired.ok());
  CHECK(repaired->log_end().value >= 20);  // 12..19 are never given to other records
  auto next = make_batch(1, 60);
  CHECK(repaired->append(next).value().value >= 20);
}

TEST_CASE("entries of a partition dropped while the WAL was stopped are never replayed into its new log",
          "[storage][wal]") {
  temp_dir dir;
  write_with_wal(dir.path(), "t", 0, 4);
  write_with_wal(dir.path(), "u", 1, 2);  // worker 0's second file
  const auto where = partition_dir(dir.path(), "t", 0);
  // The log was deleted and made again under the same name (or reset to
  // 0) while the WAL files stayed: the new log is empty.
  REQUIRE(drop_wal_entries(dir.path(), "t", 0).ok());
  REQUIRE(::truncate(last_segment(where).c_str(), 0) == 0);
  REQUIRE(::truncate(last_segment(partition_dir(dir.path(), "u", 1)).c_str(), 0) == 0);

  auto report = replay_wal(dir.path());
  CHECK(report.problems.empty());
  CHECK(report.batches_applied == 2);  // u-1's only
  auto lg = partition_log::open(where);
  REQUIRE(lg.ok());
  CHECK(lg->log_end().value == 0);
  auto u = partition_log::open(partition_dir(dir.path(), "u", 1));
  REQUIRE(u.ok());
  CHECK(u->log_end().value == 8);
  // The note went with the files it was about.
  CHECK_FALSE(fs::exists(wal_dir(dir.path()) + "/dropped"));
}

TEST_CASE("a damaged entry length is damage, never a torn tail, so is a cut entry in a file its worker followed",
          "[storage][wal]") {
  std::string file{wal_header(wal_format::v2)};
  encode_wal_entry(file, "t", 0, make_batch(2, 1));
  const auto after_a = file.size();
  encode_wal_entry(file, "t", 0, make_batch(2, 2));
  encode_wal_entry(file, "t", 0, make_batch(2, 3));
  auto bad = file;
  bad[after_a] ^= 0x01;  // the second entry's length now runs past the end
  auto scan = decode_wal(bad);
  CHECK(scan.entries.size() == 1);
  CHECK(scan.damaged);
  CHECK_FALSE(scan.torn_tail);

  temp_dir dir;
  auto batches = write_with_wal(dir.path(), "t", 0, 2);
  auto first = wal_dir(dir.path()) + "/" + files_in(wal_dir(dir.path()))[0];
  REQUIRE(::truncate(first.c_str(), static_cast<off_t>(fs::file_size(first) - 10)) == 0);
  write_with_wal(dir.path(), "t", 1, 1);  // a later file of worker 0
  auto report = replay_wal(dir.path());
  REQUIRE(report.problems.size() == 1);
  CHECK(report.problems[0].find("a later one of its worker followed") != std::string::npos);
  CHECK_FALSE(report.retained_in.empty());
}

TEST_CASE("a damaged WAL file applies the entries before the damage and is kept", "[storage][wal]") {
  temp_dir dir;
  auto batches = write_with_wal(dir.path(), "t", 0, 3);
  const auto where = partition_dir(dir.path(), "t", 0);
  auto path = wal_dir(dir.path()) + "/" + files_in(wal_dir(dir.path()))[0];
  auto bytes = read_bytes(path);
  // Damage the second entry (past its length and CRC), with the third after
  // it: 20 bytes into its body (the first batch bytes, under the entry's
  // CRC), or a record byte near its end (under the batch's own CRC only).
  const auto second = 8 + 12 + 2 + 1 + 4 + batches[0].size() + 12;  // header, entry 1, frame of entry 2
  const auto [at, reason] = GENERATE_COPY(
    std::make_pair(second + 20, std::string("entry CRC mismatch")),
    std::make_pair(second + 2 + 1 + 4 + batches[1].size() - 10, std::string("entry batch CRC mismatch")));
  bytes[at] ^= 0x01;
  REQUIRE(!moonmq::util::write_file_atomic(path, bytes));
  REQUIRE(::truncate(last_segment(where).c_str(), 0) == 0);

  auto report = replay_wal(dir.path());
  REQUIRE(report.problems.size() == 1);
  CHECK(report.problems[0].find(reason) != std::string::npos);
  CHECK(report.batches_applied == 1);
  CHECK_FALSE(report.retained_in.empty());
  auto lg = partition_log::open(where);
  REQUIRE(lg.ok());
  CHECK(lg->log_end().value == 4);
}

TEST_CASE("a WAL writer numbers its files, a restart deletes the older ones, remove_all leaves none",
          "[storage][wal]") {
  temp_dir dir;
  auto w = wal_writer::open(dir.path(), 2);
  REQUIRE(w.ok());
  CHECK(files_in(wal_dir(dir.path())) == std::vector<std::string>{"2-00000000000000000001.wal"});
  CHECK(w->file_bytes() == 8);
  w->add("t", 0, make_batch(2, 1));
  CHECK(w->pending());
  const auto added = w->buffered_bytes();
  REQUIRE(w->commit().ok());
  CHECK_FALSE(w->pending());
  CHECK(w->file_bytes() == 8 + added);
  CHECK(read_bytes(w->path()).size() == 8 + added);

  w->add("t", 0, make_batch(2, 2));  // dropped by the restart: the caller synced the segments
  REQUIRE(w->restart().ok());
  CHECK(files_in(wal_dir(dir.path())) == std::vector<std::string>{"2-00000000000000000002.wal"});
  CHECK_FALSE(w->pending());
  CHECK(w->file_bytes() == 8);

  // Another worker's files are not touched; a writer opened after an
  // unreplayed file numbers after it and deletes it at its first restart.
  auto other = wal_writer::open(dir.path(), 5);
  REQUIRE(other.ok());
  auto again = wal_writer::open(dir.path(), 2);
  REQUIRE(again.ok());
  CHECK(again->path().find("2-00000000000000000003.wal") != std::string::npos);
  REQUIRE(again->restart().ok());
  CHECK(files_in(wal_dir(dir.path()))
        == std::vector<std::string>{"2-00000000000000000004.wal", "5-00000000000000000001.wal"});
  REQUIRE(again->remove_all().ok());
  CHECK(files_in(wal_dir(dir.path())) == std::vector<std::string>{"5-00000000000000000001.wal"});
}

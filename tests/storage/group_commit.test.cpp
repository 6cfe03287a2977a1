#include "storage/group_commit.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>

#include "storage/recovery_point.hpp"
#include "storage_test_helpers.hpp"

using namespace moonmq::storage;
using namespace moonmq::storage::test;

namespace {

offset append_one(partition_log& lg, int seed) {
  auto batch = encode_batch(make_records(3, seed, 100)).value();
  auto base = lg.append(batch);
  REQUIRE(base.ok());
  return *base;
}

/// Inode and modification time: a checkpoint write replaces the file.
std::pair<ino_t, int64_t> identity_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return {st.st_ino, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

std::vector<partition_log> open_logs(const temp_dir& dir, int n) {
  std::vector<partition_log> logs;
  for (int i = 0; i < n; ++i) {
    auto lg = partition_log::open(partition_dir(dir.path(), "g", i));
    REQUIRE(lg.ok());
    logs.push_back(std::move(lg.value()));
  }
  return logs;
}

std::vector<partition_log*> pointers(std::vector<partition_log>& logs) {
  std::vector<partition_log*> out;
  for (auto& lg : logs)
    out.push_back(&lg);
  return out;
}

}  // namespace

TEST_CASE("a log opened on a new directory touches no disk until written, and its first flush makes it durable",
          "[storage][group_commit]") {
  temp_dir dir;
  auto where = partition_dir(dir.path(), "fresh", 0);
  {
    auto lg = partition_log::open(where);
    REQUIRE(lg.ok());
    CHECK_FALSE(lg->on_disk());
    CHECK_FALSE(lg->needs_sync());
    CHECK(lg->log_end().value == 0);
    CHECK(lg->read(offset{0}, 1024).value().batches.empty());
    CHECK(lg->flush().value().value == 0);
    REQUIRE(lg->close().ok());
    CHECK_FALSE(std::filesystem::exists(where));  // never written: no directory, no file, no checkpoint
  }
  auto lg = partition_log::open(where);
  REQUIRE(lg.ok());
  CHECK_FALSE(lg->on_disk());
  append_one(*lg, 1);
  CHECK(lg->on_disk());
  CHECK(std::filesystem::exists(where + "/" + segment_log_name(offset{0})));
  CHECK(lg->needs_sync());  // the new directory and segment file are not synced yet
  auto durable = lg->flush();
  REQUIRE(durable.ok());
  CHECK(durable->value == 3);
  CHECK_FALSE(lg->needs_sync());
  auto cp = read_recovery_checkpoint(where);
  REQUIRE(cp.ok());
  REQUIRE(cp->state == loaded_checkpoint::kind::valid);
  CHECK(cp->value.point.value == 3);  // the first flush syncs the new directory with its checkpoint
  REQUIRE(lg->close().ok());
  auto again = partition_log::open(where);
  REQUIRE(again.ok());
  CHECK(again->on_disk());
  CHECK(again->log_end().value == 3);
  CHECK_FALSE(again->needs_sync());  // an existing directory opens durable
}

TEST_CASE("a never-written log reset to an offset starts there, segments that appeared since open are never cut",
          "[storage][group_commit]") {
  temp_dir dir;
  auto where = partition_dir(dir.path(), "r", 0);
  auto lg = partition_log::open(where).value();
  REQUIRE(lg.reset(offset{500}).ok());
  CHECK(lg.on_disk());
  CHECK(lg.log_start().value == 500);
  CHECK(lg.log_end().value == 500);
  CHECK(std::filesystem::exists(where + "/" + segment_log_name(offset{500})));
  CHECK_FALSE(std::filesystem::exists(where + "/" + segment_log_name(offset{0})));
  CHECK(append_one(lg, 1).value == 500);
  REQUIRE(lg.flush().ok());

  auto shared = partition_dir(dir.path(), "r", 1);
  auto late = partition_log::open(shared).value();  // opened while the directory did not exist
  {
    auto first = partition_log::open(shared).value();
    append_one(first, 2);
    REQUIRE(first.close().ok());
  }
  auto batch = encode_batch(make_records(1, 3, 10)).value();
  CHECK_FALSE(late.append(batch).ok());  // refused, not a truncation of the other's records
  CHECK(partition_log::open(shared).value().log_end().value == 3);
}

TEST_CASE("one round makes the appends of many logs durable with a single syncfs, one log gets an fdatasync",
          "[storage][group_commit]") {
  temp_dir dir;
  auto logs = open_logs(dir, 5);
  for (size_t i = 0; i < logs.size(); ++i)
    for (int k = 0; k <= static_cast<int>(i); ++k)
      append_one(logs[i], k);
  syncfs_handles handles{dir.path()};
  REQUIRE(handles.usable());  // Linux >= 5.8
  sync_round_stats stats;
  auto results = sync_round(pointers(logs), handles, stats);
  CHECK(stats.syncfs_calls == 1);
  CHECK(stats.fdatasyncs == 0);
  REQUIRE(results.size() == 5);
  for (size_t i = 0; i < logs.size(); ++i) {
    REQUIRE(results[i].ok());
    CHECK(results[i]->value == static_cast<int64_t>(3 * (i + 1)));
    CHECK(logs[i].durable_offset() == logs[i].log_end());
    CHECK_FALSE(logs[i].needs_sync());
    CHECK(logs[i].written_since_fdatasync());  // only its own fdatasync clears it
  }

  append_one(logs[2], 9);
  sync_round_stats single;
  auto one = sync_round({&logs[2]}, handles, single);
  CHECK(single.syncfs_calls == 0);
  CHECK(single.fdatasyncs == 1);
  CHECK_FALSE(single.syncfs_failed);
  REQUIRE(one[0].ok());
  CHECK(one[0]->value == 12);
  CHECK_FALSE(logs[2].written_since_fdatasync());
}

TEST_CASE("logs closed together leave clean checkpoints at their log end that the next open trusts",
          "[storage][group_commit]") {
  temp_dir dir;
  std::vector<int64_t> ends;
  {
    auto logs = open_logs(dir, 3);
    for (auto& lg : logs) {
      append_one(lg, 1);
      append_one(lg, 2);
      ends.push_back(lg.log_end().value);
    }
    syncfs_handles handles{dir.path()};
    sync_round_stats stats;
    auto closed = close_together(pointers(logs), handles, stats);
    for (auto& st : closed)
      CHECK(st.ok());
    CHECK(stats.syncfs_calls == 2);  // the data, then the checkpoints
  }
  for (int i = 0; i < 3; ++i) {
    auto where = partition_dir(dir.path(), "g", i);
    auto cp = read_recovery_checkpoint(where);
    REQUIRE(cp.ok());
    REQUIRE(cp->state == loaded_checkpoint::kind::valid);
    CHECK(cp->value.clean);
    CHECK(cp->value.point.value == ends[static_cast<size_t>(i)]);
    auto lg = partition_log::open(where);
    REQUIRE(lg.ok());
    CHECK(lg->log_end().value == ends[static_cast<size_t>(i)]);
  }
}

TEST_CASE("never-written logs take part in rounds and closes without a sync or a directory",
          "[storage][group_commit]") {
  temp_dir dir;
  auto logs = open_logs(dir, 4);  // 0 and 1 written, 2 and 3 never
  append_one(logs[0], 1);
  append_one(logs[1], 2);
  syncfs_handles handles{dir.path()};
  sync_round_stats stats;
  auto synced = sync_round(pointers(logs), handles, stats);
  for (auto& r : synced)
    CHECK(r.ok());
  CHECK(synced[0]->value == 3);
  CHECK(synced[2]->value == 0);
  auto closed = close_together(pointers(logs), handles, stats);
  for (auto& st : closed)
    CHECK(st.ok());
  CHECK_FALSE(stats.syncfs_failed);  // no sync of a directory that does not exist
  CHECK(stats.fdatasyncs == 0);
  CHECK_FALSE(std::filesystem::exists(partition_dir(dir.path(), "g", 2)));
  CHECK(read_recovery_checkpoint(partition_dir(dir.path(), "g", 1)).value().value.clean);
  // Only never-written logs: nothing to do at all.
  std::vector<partition_log*> unwritten{&logs[2], &logs[3]};
  sync_round_stats none;
  for (auto& st : close_together(unwritten, handles, none))
    CHECK(st.ok());
  CHECK(none.syncfs_calls == 0);
  CHECK(none.fdatasyncs == 0);
}

TEST_CASE("close_synced refuses a log whose appends no sync covered", "[storage][group_commit]") {
  temp_dir dir;
  auto logs = open_logs(dir, 1);
  REQUIRE(logs[0].flush().ok());
  append_one(logs[0], 1);
  auto st = logs[0].close_synced();
  REQUIRE_FALSE(st.ok());
  CHECK(st.err().code == errc::invalid_argument);
  auto cp = read_recovery_checkpoint(logs[0].dir());
  REQUIRE(cp.ok());
  CHECK_FALSE((cp->state == loaded_checkpoint::kind::valid && cp->value.clean));
}

TEST_CASE("a second close writes nothing when the checkpoint already says clean at the log end",
          "[storage][group_commit]") {
  temp_dir dir;
  auto logs = open_logs(dir, 1);
  append_one(logs[0], 1);
  REQUIRE(logs[0].close().ok());
  auto file = logs[0].dir() + "/" + recovery_point_file_name;
  auto before = identity_of(file);
  REQUIRE(logs[0].close().ok());
  CHECK(identity_of(file) == before);
  append_one(logs[0], 2);
  REQUIRE(logs[0].close().ok());
  auto cp = read_recovery_checkpoint(logs[0].dir());
  REQUIRE(cp.ok());
  CHECK(cp->value.clean);
  CHECK(cp->value.point.value == 6);
}

TEST_CASE("an idle log releases its segment file and opens it again for reads and appends",
          "[storage][group_commit]") {
  temp_dir dir;
  auto logs = open_logs(dir, 1);
  auto& lg = logs[0];
  append_one(lg, 1);
  CHECK_FALSE(lg.release_fd());  // unsynced appends keep the file open
  REQUIRE(lg.flush().ok());
  CHECK(lg.holds_fd());
  CHECK(lg.release_fd());
  CHECK_FALSE(lg.holds_fd());
  auto r = lg.read(offset{0}, 1 << 20);
  REQUIRE(r.ok());
  CHECK_FALSE(r->batches.empty());
  CHECK(lg.holds_fd());
  CHECK(lg.release_fd());
  CHECK(append_one(lg, 2).value == 3);
  CHECK(lg.holds_fd());
  REQUIRE(lg.flush().ok());
  CHECK(lg.release_fd());
  REQUIRE(lg.close().ok());
  auto again = partition_log::open(lg.dir());
  REQUIRE(again.ok());
  CHECK(again->log_end().value == 6);
}

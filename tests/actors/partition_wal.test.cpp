// The I/O workers' write-ahead log through the partition actors
// (storage/wal.hpp, docs/storage.md "Write-ahead log", "Large batches
// skip the WAL", "Pipelined commits").

#include <filesystem>

#include "tests/actors/partition_fixture.hpp"

using namespace moonmq;
using namespace moonmq::test::partitions;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> wal_files(const std::string& data_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(storage::wal_dir(data_dir), ec), end; !ec && it != end;
       it.increment(ec))
    if (it->is_regular_file())
      out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// Every entry of the WAL files of `data_dir`, in file order.
std::vector<storage::wal_entry> wal_entries(const std::string& data_dir) {
  std::vector<storage::wal_entry> out;
  for (const auto& f : wal_files(data_dir)) {
    std::string bytes;
    REQUIRE(!util::read_file(f, bytes));
    auto scan = storage::decode_wal(bytes);
    CHECK_FALSE(scan.damaged);
    for (auto& e : scan.entries)
      out.push_back(std::move(e));
  }
  return out;
}

io_settings with_wal(const std::string& data_dir, int64_t checkpoint_bytes = 64LL << 20) {
  io_settings s;
  s.threads = 1;
  s.data_dir = data_dir;
  s.write_ahead_log = true;
  s.wal_checkpoint_bytes = checkpoint_bytes;
  return s;
}

}  // namespace

TEST_CASE("with the WAL, acknowledged appends are durable through the WAL while the segments are synced later",
          "[partition][io_worker][wal]") {
  fixture f;
  f.io = spawn_io_pool(f.sys, with_wal(f.dir.path()));
  auto p = f.spawn("w", -1, 0);
  // The first round syncs the log itself: its directory is new.
  CHECK(f.ask_int(p, append_atom::value, batch_of(2, "a"), true) == 0);
  CHECK(f.status(p)["segment_durable_offset"] == 2);
  for (int i = 0; i < 3; ++i)
    CHECK(f.ask_int(p, append_atom::value, batch_of(2, "b"), true) == 2 + 2 * i);
  CHECK(f.ask_int(p, append_atom::value, batch_of(2, "none"), false) == 8);  // acks=none: in the WAL too
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), true) == 10);
  auto s = f.status(p);
  CHECK(s["durable_offset"] == 11);
  CHECK(s["segment_durable_offset"] == 2);  // the segment was not synced for those acks
  auto entries = wal_entries(f.dir.path());
  REQUIRE(entries.size() == 6);
  for (const auto& e : entries) {
    CHECK(e.topic == "w");
    CHECK(e.partition == 0);
  }
  CHECK(storage::peek_batch_header(entries.back().batch).value().base.value == 10);

  SECTION("what a crash would leave of the segment is restored by replay") {
    // A crash image: the WAL as written, the segment cut just past its
    // synced part (its unsynced pages lost).
    test::temp_dir image;
    std::filesystem::copy(f.dir.path(), image.path(), std::filesystem::copy_options::recursive);
    auto where = storage::partition_dir(image.path(), "w", 0);
    std::string segment = where + "/00000000000000000000.log";
    REQUIRE(std::filesystem::exists(segment));
    auto first = batch_of(2, "a").size();
    REQUIRE(::truncate(segment.c_str(), static_cast<off_t>(first + 5)) == 0);
    auto report = storage::replay_wal(image.path());
    CHECK(report.problems.empty());
    CHECK(report.batches_applied == 5);
    auto lg = storage::partition_log::open(where);
    REQUIRE(lg.ok());
    CHECK(lg->log_end().value == 11);
  }
  SECTION("a clean stop leaves no WAL file") {
    f.self->send_exit(p, caf::exit_reason::user_shutdown);
    f.self->wait_for(p);
    f.spawned.clear();
    f.io.reset();
    CHECK(test::wait_until([&] { return wal_files(f.dir.path()).empty(); }, 10s));
    auto lg = storage::partition_log::open(storage::partition_dir(f.dir.path(), "w", 0));
    REQUIRE(lg.ok());
    CHECK(lg->log_end().value == 11);
    CHECK(lg->recovery_point().value == 11);
  }
}

TEST_CASE("a WAL past its checkpoint size syncs the segments and starts again empty, a deleted partition leaves it",
          "[partition][io_worker][wal]") {
  fixture f;
  f.io = spawn_io_pool(f.sys, with_wal(f.dir.path(), 64 << 10));
  constexpr int n = 8;
  std::vector<partition_actor> parts;
  for (int i = 0; i < n; ++i)
    parts.push_back(f.spawn("cp", -1, i));
  const std::string big(1000, 'x');
  for (int round = 0; round < 20; ++round) {
    using handle = decltype(f.self->request(parts[0], 10s, append_atom::value, std::string{}, true));
    std::vector<handle> pending;
    for (auto& p : parts)
      pending.push_back(f.self->request(p, 10s, append_atom::value, batch_of(1, big), true));
    for (auto& h : pending)
      h.receive([](int64_t) {}, [&](caf::error& e) { FAIL("append failed: " << caf::to_string(e)); });
  }
  // 160 KiB of entries went through a WAL of 64 KiB: it was replaced, and
  // what it holds now is less than one checkpoint's worth.
  auto files = wal_files(f.dir.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].find("0-00000000000000000001.wal") == std::string::npos);
  CHECK(std::filesystem::file_size(files[0]) < (64u << 10) + 8 * 1100);
  CHECK(wal_entries(f.dir.path()).size() < 8 * 20);
  for (auto& p : parts) {
    auto s = f.status(p);
    CHECK(s["durable_offset"] == 20);
    CHECK(s["segment_durable_offset"] > 0);  // synced by a checkpoint
  }
  // A deleted partition's entries leave the WAL at once: a partition made
  // again under its name never gets them replayed into it.
  f.self->request(parts[3], 10s, delete_atom::value).receive([](bool) {}, [](caf::error& e) {
    FAIL(caf::to_string(e));
  });
  for (const auto& e : wal_entries(f.dir.path()))
    CHECK(e.partition != 3);
}

TEST_CASE("with the WAL, a large acks=leader batch skips it, and so does its partition until its segment is synced",
          "[partition][io_worker][wal]") {
  // docs/storage.md "Large batches skip the WAL": written once, to the
  // segment, and acknowledged after the segment's own sync; the
  // partition's entries in the WAL never jump over a batch only its
  // segment holds.
  fixture f;
  auto settings = with_wal(f.dir.path());
  settings.wal_max_batch_bytes = 4096;
  f.io = spawn_io_pool(f.sys, settings);
  auto p = f.spawn("big", -1, 0);
  const std::string large(6000, 'L');
  auto wal_bases = [&] {
    std::vector<int64_t> out;
    for (const auto& e : wal_entries(f.dir.path()))
      out.push_back(storage::peek_batch_header(e.batch).value().base.value);
    return out;
  };
  CHECK(f.ask_int(p, append_atom::value, batch_of(2, "a"), true) == 0);  // a new directory: synced itself
  CHECK(f.ask_int(p, append_atom::value, batch_of(2, "b"), true) == 2);  // through the WAL
  CHECK(f.status(p)["segment_durable_offset"] == 2);
  CHECK(wal_bases() == std::vector<int64_t>{0, 2});

  // One request: the large batch, then a small one of the same partition,
  // both taken before their round runs.
  answers got;
  append_direct(f.sys, [&] {
    std::vector<direct_append> v;
    v.push_back(got.make(p, batch_of(1, large), true, "large"));
    v.push_back(got.make(p, batch_of(2, "c"), true, "c"));
    return v;
  }(), 10s);
  REQUIRE(got.wait_for(2));
  REQUIRE(got.errors.empty());
  CHECK(got.bases["large"] == 4);
  CHECK(got.bases["c"] == 5);
  // Neither is in the WAL: the round synced the segment instead.
  CHECK(wal_bases() == std::vector<int64_t>{0, 2});
  CHECK(f.status(p)["segment_durable_offset"] == 7);

  // After that sync, small appends go through the WAL again.
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "d"), true) == 7);
  CHECK(wal_bases() == std::vector<int64_t>{0, 2, 7});
  CHECK(f.status(p)["segment_durable_offset"] == 7);
  // acks=none is never skipped: nothing waits for a sync of it.
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, large), false) == 8);
  CHECK(wal_bases() == std::vector<int64_t>{0, 2, 7});  // added, not committed yet
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "e"), true) == 9);
  CHECK(wal_bases() == std::vector<int64_t>{0, 2, 7, 8, 9});

  SECTION("a crash that loses the segment past its sync is made good by replay, without a gap") {
    test::temp_dir image;
    std::filesystem::copy(f.dir.path(), image.path(), std::filesystem::copy_options::recursive);
    auto where = storage::partition_dir(image.path(), "big", 0);
    std::string segment = where + "/00000000000000000000.log";
    // Synced: a, b, the large batch and c (offsets 0-6). Lost: whatever
    // follows, cut inside d.
    auto synced = batch_of(2, "a").size() + batch_of(2, "b").size() + batch_of(1, large).size() +
                  batch_of(2, "c").size();
    REQUIRE(std::filesystem::file_size(segment) >= synced);
    REQUIRE(::truncate(segment.c_str(), static_cast<off_t>(synced + 5)) == 0);
    auto report = storage::replay_wal(image.path());
    CHECK(report.problems.empty());
    CHECK(report.batches_applied == 3);  // d, the acks=none batch, e
    auto lg = storage::partition_log::open(where);
    REQUIRE(lg.ok());
    CHECK(lg->log_end().value == 10);
  }
}

namespace {

/// Holds each WAL commit a worker's committer thread starts until
/// released (io_settings::before_wal_commit), and counts them.
struct commit_gate {
  std::mutex mtx;
  std::condition_variable cv;
  int started = 0;
  bool open = false;

  std::function<void()> hook() {
    return [this] {
      std::unique_lock<std::mutex> g{mtx};
      ++started;
      cv.notify_all();
      cv.wait(g, [&] { return open; });
    };
  }
  bool wait_started(int n) {
    std::unique_lock<std::mutex> g{mtx};
    return cv.wait_for(g, 10s, [&] { return started >= n; });
  }
  int count() {
    std::lock_guard<std::mutex> g{mtx};
    return started;
  }
  void release() {
    std::lock_guard<std::mutex> g{mtx};
    open = true;
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("with the WAL, a worker takes appends and serves reads while a commit's fdatasync runs",
          "[partition][io_worker][wal]") {
  // docs/storage.md "Pipelined commits": the commit runs on the worker's
  // committer thread; the appends it answers wait for it, later ones go to
  // the next commit, and reads (a move's copy) do not wait at all.
  commit_gate gate;
  fixture f;
  auto settings = with_wal(f.dir.path());
  settings.before_wal_commit = gate.hook();
  f.io = spawn_io_pool(f.sys, settings);
  struct release_at_end {
    commit_gate& g;
    ~release_at_end() { g.release(); }  // before the workers stop: they wait for their commit
  } guard{gate};
  auto p = f.spawn("pipe", -1, 0);
  CHECK(f.ask_int(p, append_atom::value, batch_of(2, "a"), true) == 0);  // a new directory: synced in place
  REQUIRE(gate.count() == 0);

  answers got;
  append_direct(f.sys, [&] {
    std::vector<direct_append> v;
    v.push_back(got.make(p, batch_of(1, "b"), true, "b"));
    return v;
  }(), 10s);
  REQUIRE(gate.wait_started(1));  // b's commit is under way, held
  // The worker still serves: a read sees b, and c is taken.
  auto [batches, log_start, log_end] = f.read(p, 0);
  CHECK(log_end == 3);
  append_direct(f.sys, [&] {
    std::vector<direct_append> v;
    v.push_back(got.make(p, batch_of(2, "c"), true, "c"));
    return v;
  }(), 10s);
  CHECK(f.status(p)["log_end_offset"] == 5);
  {
    std::lock_guard<std::mutex> g{got.mtx};
    CHECK(got.bases.empty());  // neither is acknowledged before its commit
    CHECK(got.errors.empty());
  }
  gate.release();
  REQUIRE(got.wait_for(2));
  CHECK(got.errors.empty());
  CHECK(got.bases["b"] == 2);
  CHECK(got.bases["c"] == 3);
  CHECK(gate.wait_started(2));  // c went with a commit of its own
  std::vector<int64_t> bases;
  for (const auto& e : wal_entries(f.dir.path()))
    bases.push_back(storage::peek_batch_header(e.batch).value().base.value);
  CHECK(bases == std::vector<int64_t>{0, 2, 3});
  CHECK(f.values(p) == std::vector<std::string>{"a0", "a1", "b0", "c0", "c1"});
}

TEST_CASE("with the WAL, a large batch taken while a commit runs keeps its partition's later appends out of the WAL",
          "[partition][io_worker][wal]") {
  // The skip across requests, with a commit of another partition under
  // way: the large batch and the small one after it wait for a round that
  // syncs their segment, and neither gets a WAL entry.
  commit_gate gate;
  fixture f;
  auto settings = with_wal(f.dir.path());
  settings.wal_max_batch_bytes = 4096;
  settings.before_wal_commit = gate.hook();
  f.io = spawn_io_pool(f.sys, settings);
  struct release_at_end {
    commit_gate& g;
    ~release_at_end() { g.release(); }
  } guard{gate};
  auto p = f.spawn("skip", -1, 0);
  auto q = f.spawn("skip", -1, 1);
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "p"), true) == 0);  // new directories: synced in place
  CHECK(f.ask_int(q, append_atom::value, batch_of(1, "q"), true) == 0);
  answers got;
  auto send = [&](const partition_actor& to, std::string batch, const std::string& tag) {
    append_direct(f.sys, [&] {
      std::vector<direct_append> v;
      v.push_back(got.make(to, std::move(batch), true, tag));
      return v;
    }(), 10s);
  };
  send(q, batch_of(1, "q"), "q1");
  REQUIRE(gate.wait_started(1));  // q1's commit is under way, held
  send(p, batch_of(1, std::string(6000, 'L')), "large");
  send(p, batch_of(1, "small"), "small");
  CHECK(f.status(p)["log_end_offset"] == 3);  // both taken
  gate.release();
  REQUIRE(got.wait_for(3));
  CHECK(got.errors.empty());
  CHECK(got.bases["large"] == 1);
  CHECK(got.bases["small"] == 2);
  CHECK(f.status(p)["segment_durable_offset"] == 3);
  auto wal_bases_of = [&](int32_t partition) {
    std::vector<int64_t> out;
    for (const auto& e : wal_entries(f.dir.path()))
      if (e.partition == partition)
        out.push_back(storage::peek_batch_header(e.batch).value().base.value);
    return out;
  };
  CHECK(wal_bases_of(0) == std::vector<int64_t>{0});  // nothing of p after its large batch
  CHECK(wal_bases_of(1) == std::vector<int64_t>{0, 1});
  // Synced: p's small appends go through the WAL again.
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "again"), true) == 3);
  CHECK(wal_bases_of(0) == std::vector<int64_t>{0, 3});
}

TEST_CASE("with the WAL, appends wait in memory until a read, a sync or the write-behind interval writes them",
          "[partition][io_worker][wal][write_behind]") {
  fixture f;
  auto settings = with_wal(f.dir.path());
  SECTION("held until something reads them") {
    settings.write_behind_ms = 60000;  // the timer never fires within the test
    f.io = spawn_io_pool(f.sys, settings);
    auto p = f.spawn("wb", -1, 0);
    CHECK(f.ask_int(p, append_atom::value, batch_of(2, "a"), true) == 0);  // synced itself: a new directory
    CHECK(f.ask_int(p, append_atom::value, batch_of(3, "b"), true) == 2);  // through the WAL
    CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), false) == 5);
    auto s = f.status(p);
    CHECK(s["held_bytes"] > 0);
    CHECK(s["durable_offset"] == 5);  // acknowledged through the WAL, not yet in the file
    const auto segment = storage::partition_dir(f.dir.path(), "wb", 0) + "/00000000000000000000.log";
    const auto appended = batch_of(2, "a").size() + batch_of(3, "b").size() + batch_of(1, "c").size();
    CHECK(std::filesystem::file_size(segment) < appended);
    CHECK(f.values(p) == std::vector<std::string>{"a0", "a1", "b0", "b1", "b2", "c0"});
    CHECK(f.status(p)["held_bytes"] == 0);
    CHECK(std::filesystem::file_size(segment) == appended);
  }
  SECTION("written by the worker within the interval") {
    settings.write_behind_ms = 20;
    f.io = spawn_io_pool(f.sys, settings);
    auto p = f.spawn("wb", -1, 1);
    CHECK(f.ask_int(p, append_atom::value, batch_of(2, "a"), true) == 0);
    CHECK(f.ask_int(p, append_atom::value, batch_of(1, "none"), false) == 2);
    const auto segment = storage::partition_dir(f.dir.path(), "wb", 1) + "/00000000000000000000.log";
    CHECK(test::wait_until([&] { return f.status(p)["held_bytes"] == 0; }, 10s));
    CHECK(std::filesystem::file_size(segment) == batch_of(2, "a").size() + batch_of(1, "none").size());
  }
}

#include <algorithm>
#include <catch2/catch.hpp>

#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/direct_append.hpp"
#include "actors/errors.hpp"
#include "actors/partition.hpp"
#include "actors/system.hpp"
#include "storage/record_batch.hpp"
#include "storage/partition_log.hpp"
#include "storage/wal.hpp"
#include "util/atomic_file.hpp"
#include "tests/support/process.hpp"

using namespace moonmq;
using namespace std::chrono_literals;

namespace {

/// I/O settings with `threads` workers and `max_open_files`, the rest as configured by default.
io_settings io_of(int threads, int64_t max_open_files) {
  io_settings s;
  s.threads = threads;
  s.max_open_files = max_open_files;
  return s;
}

std::string batch_of(int n, const std::string& prefix) {
  std::vector<storage::record> recs;
  for (int i = 0; i < n; ++i)
    recs.push_back({std::string("k"), prefix + std::to_string(i), {}, 1000 + i});
  return storage::encode_batch(recs).value();
}

/// The answers of direct appends, keyed by a caller's tag; callbacks run on
/// CAF threads.
struct answers {
  std::mutex mtx;
  std::condition_variable cv;
  std::map<std::string, int64_t> bases;
  std::map<std::string, caf::error> errors;

  direct_append make(const partition_actor& dest, std::string batch, bool durable, const std::string& tag) {
    return direct_append{dest, std::move(batch), durable,
                         [this, tag](int64_t base) {
                           std::lock_guard<std::mutex> g{mtx};
                           CHECK(bases.count(tag) + errors.count(tag) == 0);  // exactly one answer
                           bases[tag] = base;
                           cv.notify_all();
                         },
                         [this, tag](const caf::error& e) {
                           std::lock_guard<std::mutex> g{mtx};
                           CHECK(bases.count(tag) + errors.count(tag) == 0);
                           errors[tag] = e;
                           cv.notify_all();
                         }};
  }
  bool wait_for(size_t n) {
    std::unique_lock<std::mutex> g{mtx};
    return cv.wait_for(g, 20s, [&] { return bases.size() + errors.size() >= n; });
  }
};

struct fixture {
  fixture() : cfg(make_system_config({})), sys(*cfg), self(sys) {}
  partition_actor spawn(const std::string& topic, int64_t retention_bytes = -1, int32_t partition = 0) {
    partition_settings s{dir.path(), topic, partition, {}, 0};
    s.config.retention_bytes = retention_bytes;
    auto p = spawn_partition(sys, io, s);
    spawned.push_back(p);
    return p;
  }
  ~fixture() {
    for (auto& p : spawned)
      caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
  }
  template <class... Ts>
  int64_t ask_int(const partition_actor& p, Ts... xs) {
    int64_t out = -1;
    self->request(p, 10s, xs...).receive([&](int64_t v) { out = v; },
                                         [&](caf::error& e) { FAIL("request failed: " << caf::to_string(e)); });
    return out;
  }
  caf::error ask_error(const partition_actor& p, std::string batch) {
    caf::error out;
    self->request(p, 10s, append_atom::value, std::move(batch), true)
      .receive([&](int64_t) {}, [&](caf::error& e) { out = e; });
    return out;
  }
  nlohmann::json status(const partition_actor& p) {
    nlohmann::json out;
    self->request(p, 10s, status_atom::value)
      .receive([&](std::string& s) { out = nlohmann::json::parse(s); },
               [&](caf::error& e) { FAIL("status failed: " << caf::to_string(e)); });
    return out;
  }
  std::tuple<std::string, int64_t, int64_t> read(const partition_actor& p, int64_t from) {
    std::tuple<std::string, int64_t, int64_t> out;
    self->request(p, 10s, read_atom::value, from, int32_t{1 << 20})
      .receive([&](std::string& b, int64_t lo, int64_t hi) { out = {std::move(b), lo, hi}; },
               [&](caf::error& e) { FAIL("read failed: " << caf::to_string(e)); });
    return out;
  }

  /// The values of every record of `p`, in offset order.
  std::vector<std::string> values(const partition_actor& p) {
    std::vector<std::string> out;
    self->request(p, 10s, read_atom::value, int64_t{0}, int32_t{1 << 20})
      .receive(
        [&](std::string& batches, int64_t, int64_t) {
          std::string_view rest = batches;
          while (!rest.empty()) {
            auto size = storage::peek_batch_size(rest);
            REQUIRE(size.ok());
            auto view = storage::batch_view::parse(rest.substr(0, *size));
            REQUIRE(view.ok());
            auto decoded = storage::decode_records(*view);
            REQUIRE(decoded.ok());
            for (auto& r : *decoded)
              out.push_back(r.value ? std::string(*r.value) : std::string{});
            rest.remove_prefix(*size);
          }
        },
        [&](caf::error& e) { FAIL("read failed: " << caf::to_string(e)); });
    return out;
  }

  test::temp_dir dir;
  std::unique_ptr<caf::actor_system_config> cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  std::shared_ptr<io_pool> io = spawn_io_pool(sys, io_of(2, 0));
  std::vector<partition_actor> spawned;
};

}  // namespace

TEST_CASE("partition appends answer base offsets in order", "[partition]") {
  fixture f;
  auto p = f.spawn("a");
  CHECK(f.ask_int(p, append_atom::value, batch_of(3, "x"), true) == 0);
  CHECK(f.ask_int(p, append_atom::value, batch_of(2, "y"), false) == 3);
  auto [bytes, lo, hi] = f.read(p, 0);
  CHECK(lo == 0);
  CHECK(hi == 5);
  CHECK_FALSE(bytes.empty());
}

TEST_CASE("a copy keeps offsets: reset to the source's log start, then append its batches", "[partition]") {
  fixture f;
  auto src = f.spawn("src");
  for (int i = 0; i < 4; ++i)
    f.ask_int(src, append_atom::value, batch_of(5, "r" + std::to_string(i) + "-"), true);
  auto dst = f.spawn("dst");
  CHECK(f.ask_int(dst, reset_atom::value, int64_t{7}) == 7);
  // Copy from offset 10 (a batch boundary) onwards: the destination must
  // first be reset to start exactly there.
  CHECK(f.ask_int(dst, reset_atom::value, int64_t{10}) == 10);
  auto [bytes, lo, hi] = f.read(src, 10);
  CHECK(hi == 20);
  // A copy that serves producers never takes copied batches: only a sealed
  // one (a move's destination, sealed by its ensure) does.
  caf::error unsealed;
  f.self->request(dst, 10s, copy_atom::value, bytes, true).receive([](int64_t) {}, [&](caf::error& e) { unsealed = e; });
  CHECK(error_code_of(unsealed) == "invalid_request");
  CHECK(std::get<2>(f.read(dst, 10)) == 10);
  CHECK(f.ask_int(dst, seal_atom::value, true, true) == 10);
  CHECK(f.ask_int(dst, copy_atom::value, bytes, true) == 20);
  // Until the move confirms, clients read nothing from the copy (it may be
  // incomplete): a retriable partition_moved.
  caf::error early;
  f.self->request(dst, 10s, read_atom::value, int64_t{10}, int32_t{1 << 20})
    .receive([](std::string&, int64_t, int64_t) {}, [&](caf::error& e) { early = e; });
  CHECK(error_code_of(early) == "partition_moved");
  // Copying the same batches again is an offset gap, refused.
  caf::error err;
  f.self->request(dst, 10s, copy_atom::value, bytes, true).receive([](int64_t) {}, [&](caf::error& e) { err = e; });
  CHECK(error_code_of(err) == "invalid_request");
  // Confirmed (unsealed): the copied batches read back as sent, and new
  // produce continues after the copied offsets; a plain seal takes no copies.
  CHECK(f.ask_int(dst, seal_atom::value, false) == 20);
  auto [copied, dlo, dhi] = f.read(dst, 10);
  CHECK(dlo == 10);
  CHECK(dhi == 20);
  CHECK(copied == bytes);
  CHECK(f.ask_int(dst, seal_atom::value, true) == 20);
  caf::error plain;
  f.self->request(dst, 10s, copy_atom::value, bytes, true).receive([](int64_t) {}, [&](caf::error& e) { plain = e; });
  CHECK(error_code_of(plain) == "invalid_request");
  CHECK(f.ask_int(dst, seal_atom::value, false) == 20);
  CHECK(f.ask_int(dst, append_atom::value, batch_of(1, "new"), true) == 20);
}

TEST_CASE("a copy at an expected offset is applied in offset order: one that arrives ahead waits for its turn",
          "[partition]") {
  fixture f;
  auto src = f.spawn("src");
  for (int i = 0; i < 4; ++i)
    f.ask_int(src, append_atom::value, batch_of(5, "r" + std::to_string(i) + "-"), true);
  // The four batches one by one (a read returns at least one whole batch).
  std::vector<std::string> b;
  for (int64_t at = 0; at < 20; at += 5) {
    std::string one;
    f.self->request(src, 10s, read_atom::value, at, int32_t{1})
      .receive([&](std::string& bytes, int64_t, int64_t) { one = std::move(bytes); },
               [&](caf::error& e) { FAIL("read failed: " << caf::to_string(e)); });
    b.push_back(one);
  }
  auto dst = f.spawn("dst");
  CHECK(f.ask_int(dst, seal_atom::value, true, true) == 0);
  auto error_of = [&](const partition_actor& to, int64_t expected, const std::string& bytes) {
    caf::error err;
    f.self->request(to, 10s, copy_atom::value, expected, bytes, false)
      .receive([](int64_t) { FAIL("applied"); }, [&](caf::error& e) { err = e; });
    return err;
  };
  // Batches 2 and 1 arrive first (sent, not awaited): both are held.
  f.self->send(dst, copy_atom::value, int64_t{10}, b[2], false);
  f.self->send(dst, copy_atom::value, int64_t{5}, b[1], false);
  // An empty list never waits, and nothing is held twice at one offset.
  int64_t lo = -1, hi = -1;
  CHECK(out_of_range_bounds(error_of(dst, 12, ""), lo, hi));
  CHECK(hi == 0);
  CHECK(out_of_range_bounds(error_of(dst, 10, b[2]), lo, hi));
  CHECK(std::get<2>(f.read(src, 0)) == 20);
  // Batch 0 lands at the log end; the held ones follow it in offset order.
  CHECK(f.ask_int(dst, copy_atom::value, int64_t{0}, b[0], true) == 5);
  std::vector<int64_t> answered;
  for (int i = 0; i < 2; ++i)
    f.self->receive([&](int64_t end) { answered.push_back(end); },
                    [&](caf::error& e) { FAIL("held copy failed: " << caf::to_string(e)); });
  std::sort(answered.begin(), answered.end());
  CHECK(answered == std::vector<int64_t>{10, 15});
  CHECK(f.ask_int(dst, copy_atom::value, int64_t{15}, b[3], true) == 20);
  // Sent again (a retry after a lost answer): behind the log end, refused
  // with the bounds, and the copy reads back exactly as the source.
  CHECK(out_of_range_bounds(error_of(dst, 15, b[3]), lo, hi));
  CHECK(hi == 20);
  CHECK(f.ask_int(dst, seal_atom::value, false) == 20);
  CHECK(std::get<0>(f.read(dst, 0)) == std::get<0>(f.read(src, 0)));

  // A held list whose gap never fills is answered when the copy is reset.
  auto again = f.spawn("again");
  CHECK(f.ask_int(again, seal_atom::value, true, true) == 0);
  f.self->send(again, copy_atom::value, int64_t{5}, b[1], false);
  CHECK(f.ask_int(again, reset_atom::value, int64_t{0}) == 0);
  bool refused = false;
  f.self->receive([](int64_t) { FAIL("a held copy was applied after a reset"); },
                  [&](caf::error& e) { refused = out_of_range_bounds(e, lo, hi); });
  CHECK(refused);
  // At most 16 wait; the next is refused at once.
  for (int64_t k = 1; k <= 16; ++k)
    f.self->send(again, copy_atom::value, 100 * k, b[1], false);
  CHECK(out_of_range_bounds(error_of(again, 5000, b[1]), lo, hi));
}

TEST_CASE("a durable seal survives a restart of the partition, a plain seal and an unseal do not", "[partition]") {
  fixture f;
  auto p = f.spawn("d");
  f.ask_int(p, append_atom::value, batch_of(2, "a"), true);
  CHECK(f.ask_int(p, seal_atom::value, true, true) == 2);
  auto restart = [&](partition_actor& a) {
    f.self->send_exit(a, caf::exit_reason::user_shutdown);
    f.self->wait_for(a);
    a = f.spawn("d");
  };
  // A move's destination copy restarted between cutover and confirm must not
  // start serving its incomplete log.
  restart(p);
  CHECK(error_code_of(f.ask_error(p, batch_of(1, "b"))) == "partition_moved");
  CHECK(f.ask_int(p, seal_atom::value, false) == 2);
  restart(p);
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), true) == 2);
  CHECK(f.ask_int(p, seal_atom::value, true) == 3);  // the source's seal at cutover: memory only
  restart(p);
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "e"), true) == 3);
}

TEST_CASE("a sealed partition refuses produce but serves reads, unsealing resumes", "[partition]") {
  fixture f;
  auto p = f.spawn("s");
  f.ask_int(p, append_atom::value, batch_of(2, "a"), true);
  CHECK(f.ask_int(p, seal_atom::value, true) == 2);
  auto err = f.ask_error(p, batch_of(1, "b"));
  CHECK(error_code_of(err) == "partition_moved");
  CHECK(http_status_of(err) == 503);
  CHECK(std::get<2>(f.read(p, 0)) == 2);
  CHECK(f.ask_int(p, seal_atom::value, false) == 2);
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), true) == 2);
}

TEST_CASE("an invalid batch is refused with invalid_request and nothing is appended", "[partition]") {
  fixture f;
  auto p = f.spawn("bad");
  auto batch = batch_of(2, "z");
  batch[30] = static_cast<char>(batch[30] ^ 0x5a);  // inside the CRC-covered part
  CHECK(error_code_of(f.ask_error(p, batch)) == "invalid_request");
  CHECK(std::get<2>(f.read(p, 0)) == 0);
}

TEST_CASE("reading outside the log is offset_out_of_range with both bounds", "[partition]") {
  fixture f;
  auto p = f.spawn("oor");
  f.ask_int(p, append_atom::value, batch_of(3, "a"), true);
  caf::error err;
  f.self->request(p, 10s, read_atom::value, int64_t{9}, int32_t{100})
    .receive([](std::string&, int64_t, int64_t) {}, [&](caf::error& e) { err = e; });
  int64_t lo = -1, hi = -1;
  REQUIRE(out_of_range_bounds(err, lo, hi));
  CHECK(lo == 0);
  CHECK(hi == 3);
}

TEST_CASE("delete records advances the log start durably, out of range, sealed and bad offsets are refused",
          "[partition][delete_records]") {
  fixture f;
  auto p = f.spawn("dr");
  f.ask_int(p, append_atom::value, batch_of(3, "a"), false);  // 0..2, acks=none: not synced yet
  f.ask_int(p, append_atom::value, batch_of(3, "b"), false);  // 3..5
  auto refused = [&](int64_t before, bool sealed_ok) {
    caf::error err;
    f.self->request(p, 10s, delete_records_atom::value, before, sealed_ok)
      .receive([](int64_t) { FAIL("accepted"); }, [&](caf::error& e) { err = e; });
    return err;
  };
  int64_t lo = -1, hi = -1;
  REQUIRE(out_of_range_bounds(refused(7, false), lo, hi));
  CHECK(lo == 0);
  CHECK(hi == 6);
  CHECK(error_code_of(refused(-2, false)) == "invalid_request");
  CHECK(f.ask_int(p, delete_records_atom::value, int64_t{4}, false) == 4);  // inside the second batch
  CHECK(f.ask_int(p, delete_records_atom::value, int64_t{1}, false) == 4);  // below: unchanged
  CHECK(std::get<1>(f.read(p, 4)) == 4);
  caf::error below;
  f.self->request(p, 10s, read_atom::value, int64_t{3}, int32_t{100})
    .receive([](std::string&, int64_t, int64_t) {}, [&](caf::error& e) { below = e; });
  REQUIRE(out_of_range_bounds(below, lo, hi));
  CHECK(lo == 4);
  // A sealed partition refuses a client's request, not a move's confirm.
  CHECK(f.ask_int(p, seal_atom::value, true) == 6);
  CHECK(error_code_of(refused(5, false)) == "partition_moved");
  CHECK(f.ask_int(p, delete_records_atom::value, int64_t{5}, true) == 5);
  CHECK(f.ask_int(p, seal_atom::value, false) == 6);
  // The log start survives a restart of the partition.
  f.self->send_exit(p, caf::exit_reason::user_shutdown);
  f.self->wait_for(p);
  p = f.spawn("dr");
  CHECK(std::get<1>(f.read(p, 5)) == 5);
  CHECK(f.ask_int(p, delete_records_atom::value, int64_t{-1}, false) == 6);
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), true) == 6);
}

TEST_CASE("partitions sharing one I/O worker all get their durable appends answered, and keep them across a restart",
          "[partition][io_worker]") {
  fixture f;
  f.io = spawn_io_pool(f.sys, io_of(1, 0));
  constexpr int n = 40;
  std::vector<partition_actor> parts;
  for (int i = 0; i < n; ++i)
    parts.push_back(f.spawn("many", -1, i));
  // Every append is in flight before any answer is read, so the worker's
  // rounds take many partitions at once (one syncfs each).
  for (int round = 0; round < 3; ++round) {
    using handle = decltype(f.self->request(parts[0], 10s, append_atom::value, std::string{}, true));
    std::vector<handle> pending;
    for (int i = 0; i < n; ++i)
      pending.push_back(f.self->request(parts[static_cast<size_t>(i)], 10s, append_atom::value, batch_of(2, "r"), true));
    for (auto& h : pending) {
      int64_t base = -1;
      h.receive([&](int64_t b) { base = b; }, [&](caf::error& e) { FAIL("append failed: " << caf::to_string(e)); });
      CHECK(base == 2 * round);
    }
  }
  for (auto& p : parts) {
    auto s = f.status(p);
    CHECK(s["durable_offset"] == 6);
    CHECK(s["pending_acks"] == 0);
    CHECK(s["io_worker"] == 0);
  }
  for (auto& p : parts) {
    f.self->send_exit(p, caf::exit_reason::user_shutdown);
    f.self->wait_for(p);
  }
  f.spawned.clear();
  for (int i = 0; i < n; i += 7) {
    auto p = f.spawn("many", -1, i);
    CHECK(std::get<2>(f.read(p, 0)) == 6);
  }
}

TEST_CASE("partitions past the open-file budget release their idle segment files and still serve",
          "[partition][io_worker]") {
  fixture f;
  f.io = spawn_io_pool(f.sys, io_of(1, 2));  // one worker, two files
  constexpr int n = 10;
  std::vector<partition_actor> parts;
  for (int i = 0; i < n; ++i) {
    parts.push_back(f.spawn("fds", -1, i));
    f.ask_int(parts.back(), append_atom::value, batch_of(3, "a"), true);
  }
  auto open_files = [&] {
    int open = 0;
    for (auto& p : parts)
      open += f.status(p)["file_open"].get<bool>() ? 1 : 0;
    return open;
  };
  CHECK(open_files() <= 2);
  for (int i = 0; i < n; ++i) {
    CHECK(std::get<2>(f.read(parts[static_cast<size_t>(i)], 0)) == 3);
    CHECK(f.ask_int(parts[static_cast<size_t>(i)], append_atom::value, batch_of(1, "b"), true) == 3);
  }
  CHECK(open_files() <= 2);
  for (auto& p : parts)
    CHECK(std::get<2>(f.read(p, 0)) == 4);
  // acks=none leaves the logs unsynced: the budget syncs them before their
  // files close.
  for (auto& p : parts)
    CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), false) == 4);
  CHECK(open_files() <= 2);
  for (auto& p : parts) {
    auto s = f.status(p);
    CHECK(s["log_end_offset"] == 5);
    CHECK(std::get<2>(f.read(p, 0)) == 5);
  }
}

// append_direct (actors/direct_append.hpp): appends handed straight to the
// I/O workers keep each partition's order across calls, are answered once
// durable, and fail (never acknowledged) on a partition that is gone.

TEST_CASE("direct appends of consecutive calls reach every partition in call order", "[partition][direct_append]") {
  fixture f;
  constexpr int partitions = 12;
  constexpr int calls = 40;
  std::vector<partition_actor> parts;
  for (int i = 0; i < partitions; ++i)
    parts.push_back(f.spawn("spread", -1, i));
  answers a;
  // Every call spans both workers; nothing waits between calls, so each
  // worker's mailbox holds many calls at once (and its rounds many
  // partitions).
  for (int c = 0; c < calls; ++c) {
    std::vector<direct_append> appends;
    for (int i = 0; i < partitions; ++i)
      appends.push_back(a.make(parts[static_cast<size_t>(i)], batch_of(2, "c" + std::to_string(c) + "-"),
                               (c + i) % 3 != 0, std::to_string(i) + "/" + std::to_string(c)));
    append_direct(f.sys, std::move(appends), 10s);
  }
  REQUIRE(a.wait_for(partitions * calls));
  CHECK(a.errors.empty());
  for (int i = 0; i < partitions; ++i)
    for (int c = 0; c < calls; ++c)
      CHECK(a.bases[std::to_string(i) + "/" + std::to_string(c)] == 2 * c);
  for (auto& p : parts) {
    auto v = f.values(p);
    REQUIRE(v.size() == 2 * calls);
    for (int c = 0; c < calls; ++c) {
      CHECK(v[static_cast<size_t>(2 * c)] == "c" + std::to_string(c) + "-0");
      CHECK(v[static_cast<size_t>(2 * c + 1)] == "c" + std::to_string(c) + "-1");
    }
  }
}

TEST_CASE("a durable direct append is answered only once its sync round made it durable", "[partition][direct_append]") {
  fixture f;
  auto p = f.spawn("durable", -1, 0);
  answers a;
  append_direct(f.sys, {a.make(p, batch_of(3, "d"), true, "one")}, 10s);
  REQUIRE(a.wait_for(1));
  CHECK(a.bases["one"] == 0);
  nlohmann::json status;
  f.self->request(p, 10s, status_atom::value).receive([&](std::string& s) { status = nlohmann::json::parse(s); },
                                                      [&](caf::error& e) { FAIL(caf::to_string(e)); });
  CHECK(status["durable_offset"] == 3);
  CHECK(status["pending_acks"] == 0);
}

TEST_CASE("direct appends to a sealed, a deleted or an exited partition fail and append nothing",
          "[partition][direct_append]") {
  fixture f;
  auto sealed = f.spawn("gone", -1, 0);
  auto deleted = f.spawn("gone", -1, 1);
  auto exited = f.spawn("gone", -1, 2);
  f.self->request(sealed, 10s, seal_atom::value, true).receive([](int64_t) {}, [](caf::error& e) {
    FAIL(caf::to_string(e));
  });
  f.self->request(deleted, 10s, delete_atom::value).receive([](bool) {}, [](caf::error& e) {
    FAIL(caf::to_string(e));
  });
  f.self->send_exit(exited, caf::exit_reason::user_shutdown);
  f.self->wait_for(exited);
  answers a;
  append_direct(f.sys,
                {a.make(sealed, batch_of(1, "s"), true, "sealed"), a.make(deleted, batch_of(1, "d"), true, "deleted"),
                 a.make(exited, batch_of(1, "e"), false, "exited")},
                10s);
  REQUIRE(a.wait_for(3));
  CHECK(a.bases.empty());
  REQUIRE(a.errors.size() == 3);
  CHECK(static_cast<errc>(a.errors["sealed"].code()) == errc::partition_moved);
  CHECK(a.errors["deleted"]);
  CHECK(a.errors["exited"]);
  CHECK(f.values(sealed).empty());
}

TEST_CASE("read_loads answers every partition in order from its worker, and an error for a gone one",
          "[partition][direct_append]") {
  fixture f;
  std::vector<partition_actor> parts;
  for (int i = 0; i < 6; ++i) {
    parts.push_back(f.spawn("loads", -1, i));
    if (i > 0)
      CHECK(f.ask_int(parts.back(), append_atom::value, batch_of(i, "l"), true) == 0);
  }
  auto deleted = f.spawn("loads", -1, 6);
  f.self->request(deleted, 10s, delete_atom::value).receive([](bool) {}, [](caf::error& e) {
    FAIL(caf::to_string(e));
  });
  auto exited = f.spawn("loads", -1, 7);
  f.self->send_exit(exited, caf::exit_reason::user_shutdown);
  f.self->wait_for(exited);
  auto asked = parts;
  asked.push_back(deleted);
  asked.push_back(exited);
  std::promise<std::vector<partition_load>> got;
  read_loads(f.sys, asked, 10s, [&got](std::vector<partition_load>& loads) { got.set_value(std::move(loads)); });
  auto answer = got.get_future();
  REQUIRE(answer.wait_for(10s) == std::future_status::ready);
  auto loads = answer.get();
  REQUIRE(loads.size() == 8);
  for (size_t i = 0; i < 6; ++i) {
    INFO("partition " << i);
    CHECK(loads[i].error.empty());
    CHECK(loads[i].log_start == 0);
    CHECK(loads[i].log_end == static_cast<int64_t>(i));
    CHECK(loads[i].records_in == i);
    CHECK((loads[i].size_bytes > 0) == (i > 0));  // partition 0 never took a record
  }
  CHECK(loads[6].error == "the partition stopped");
  CHECK(loads[7].error == "the partition stopped");
}

TEST_CASE("a direct append to an actor that is no pool partition goes as one request", "[partition][direct_append]") {
  fixture f;
  auto fake = f.sys.spawn([]() -> partition_actor::behavior_type {
    return {
      [](append_atom, std::string&, bool) -> int64_t { return 42; },
      [](copy_atom, std::string&, bool) -> int64_t { return 0; },
      [](copy_atom, int64_t, std::string&, bool) -> int64_t { return 0; },
      [](reset_atom, int64_t) -> int64_t { return 0; },
      [](seal_atom, bool) -> int64_t { return 0; },
      [](seal_atom, bool, bool) -> int64_t { return 0; },
      [](read_atom, int64_t, int32_t) { return caf::make_result(std::string{}, int64_t{0}, int64_t{0}); },
      [](read_atom, int64_t, int32_t, bool) { return caf::make_result(std::string{}, int64_t{0}, int64_t{0}); },
      [](read_atom, int64_t, int32_t, bool, bool) {
        return caf::make_result(std::string{}, int64_t{0}, int64_t{0}, int64_t{0}, std::vector<int64_t>{});
      },
      [](lso_atom) { return caf::make_result(int64_t{0}, int64_t{0}, int64_t{0}); },
      [](marker_atom, int64_t, int16_t, bool, int32_t) { return int64_t{0}; },
      [](bounds_atom) { return caf::make_result(int64_t{0}, int64_t{0}, int64_t{0}); },
      [](time_lookup_atom, int64_t, bool) { return caf::make_result(int64_t{-1}, int64_t{-1}); },
      [](delete_atom) { return true; },
      [](repair_atom) { return std::string{}; },
      [](delete_records_atom, int64_t, bool) { return int64_t{0}; },
      [](config_atom, int64_t, int64_t, int64_t) { return true; },
      [](status_atom) { return std::string{"{}"}; },
    };
  });
  answers a;
  append_direct(f.sys, {a.make(fake, batch_of(1, "f"), true, "fake")}, 10s);
  REQUIRE(a.wait_for(1));
  CHECK(a.bases["fake"] == 42);
  caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
}

TEST_CASE("a direct append callback that throws does not stop its worker, a null destination fails at once",
          "[partition][direct_append]") {
  fixture f;
  auto p = f.spawn("throws", -1, 0);
  answers a;
  std::vector<direct_append> appends;
  appends.push_back(direct_append{p, batch_of(1, "t"), true, [](int64_t) { throw std::runtime_error("callback"); },
                                  [](const caf::error&) { throw std::runtime_error("callback"); }});
  appends.push_back(a.make(p, batch_of(1, "after"), true, "after"));
  appends.push_back(a.make(partition_actor{}, batch_of(1, "null"), true, "null"));
  append_direct(f.sys, std::move(appends), 10s);
  REQUIRE(a.wait_for(2));
  CHECK(a.bases["after"] == 1);  // the throwing append was appended first, at 0
  CHECK(a.errors.count("null") == 1);
  // The worker still serves.
  answers b;
  append_direct(f.sys, [&] {
    std::vector<direct_append> v;
    v.push_back(b.make(p, batch_of(1, "later"), true, "later"));
    return v;
  }(), 10s);
  REQUIRE(b.wait_for(1));
  CHECK(b.bases["later"] == 2);
  CHECK(f.values(p) == std::vector<std::string>{"t0", "after0", "later0"});
}

// The I/O workers' write-ahead log (storage/wal.hpp, docs/storage.md
// "Write-ahead log").

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

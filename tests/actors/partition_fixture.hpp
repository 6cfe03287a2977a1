#pragma once
// What the partition and I/O worker tests share (partition.test.cpp,
// partition_wal.test.cpp): a fixture with an actor system, a pool and a
// scratch dir, batches, and the answers of direct appends.

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

namespace moonmq::test::partitions {

using namespace std::chrono_literals;

/// I/O settings with `threads` workers and `max_open_files`, the rest as configured by default.
inline io_settings io_of(int threads, int64_t max_open_files) {
  io_settings s;
  s.threads = threads;
  s.max_open_files = max_open_files;
  return s;
}

inline std::string batch_of(int n, const std::string& prefix) {
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

}  // namespace moonmq::test::partitions

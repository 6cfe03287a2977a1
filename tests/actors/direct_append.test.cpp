// append_direct (actors/direct_append.hpp): appends handed straight to the
// I/O workers keep each partition's order across calls, are answered once
// durable, and fail (never acknowledged) on a partition that is gone.

#include <catch2/catch.hpp>

#include <condition_variable>
#include <map>
#include <mutex>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/direct_append.hpp"
#include "actors/errors.hpp"
#include "actors/partition.hpp"
#include "actors/system.hpp"
#include "storage/record_batch.hpp"
#include "tests/support/process.hpp"

using namespace moonmq;
using namespace std::chrono_literals;

namespace {

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
  ~fixture() {
    for (auto& p : spawned)
      caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
  }
  partition_actor spawn(const std::string& topic, int32_t partition) {
    auto p = spawn_partition(sys, io, partition_settings{dir.path(), topic, partition, {}, 0});
    spawned.push_back(p);
    return p;
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
  std::shared_ptr<io_pool> io = spawn_io_pool(sys, io_settings{2, 0});
  std::vector<partition_actor> spawned;
};

}  // namespace

TEST_CASE("direct appends of consecutive calls reach every partition in call order", "[partition][direct_append]") {
  fixture f;
  constexpr int partitions = 12;
  constexpr int calls = 40;
  std::vector<partition_actor> parts;
  for (int i = 0; i < partitions; ++i)
    parts.push_back(f.spawn("spread", i));
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
  auto p = f.spawn("durable", 0);
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
  auto sealed = f.spawn("gone", 0);
  auto deleted = f.spawn("gone", 1);
  auto exited = f.spawn("gone", 2);
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

TEST_CASE("a direct append to an actor that is no pool partition goes as one request", "[partition][direct_append]") {
  fixture f;
  auto fake = f.sys.spawn([]() -> partition_actor::behavior_type {
    return {
      [](append_atom, std::string&, bool) -> int64_t { return 42; },
      [](copy_atom, std::string&, bool) -> int64_t { return 0; },
      [](reset_atom, int64_t) -> int64_t { return 0; },
      [](seal_atom, bool) -> int64_t { return 0; },
      [](seal_atom, bool, bool) -> int64_t { return 0; },
      [](read_atom, int64_t, int32_t) { return caf::make_result(std::string{}, int64_t{0}, int64_t{0}); },
      [](read_atom, int64_t, int32_t, bool) { return caf::make_result(std::string{}, int64_t{0}, int64_t{0}); },
      [](bounds_atom) { return caf::make_result(int64_t{0}, int64_t{0}, int64_t{0}); },
      [](time_lookup_atom, int64_t) { return caf::make_result(int64_t{-1}, int64_t{-1}); },
      [](delete_atom) { return true; },
      [](repair_atom) { return std::string{}; },
      [](status_atom) { return std::string{"{}"}; },
    };
  });
  answers a;
  append_direct(f.sys, {a.make(fake, batch_of(1, "f"), true, "fake")}, 10s);
  REQUIRE(a.wait_for(1));
  CHECK(a.bases["fake"] == 42);
  caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
}

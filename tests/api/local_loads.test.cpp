#include <catch2/catch.hpp>

#include <future>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/partition.hpp"
#include "actors/system.hpp"
#include "storage/record_batch.hpp"
#include "tests/support/process.hpp"
#include "api/local_loads.hpp"

using namespace moonmq;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

/// I/O settings with `threads` workers and `max_open_files`, the rest as configured by default.
io_settings io_of(int threads, int64_t max_open_files) {
  io_settings s;
  s.threads = threads;
  s.max_open_files = max_open_files;
  return s;
}

/// Takes bounds and status requests and never answers them: a partition actor
/// that is not on an I/O worker (read_loads finds no route for it).
caf::behavior stuck_partition(caf::event_based_actor* self, std::shared_ptr<std::vector<caf::response_promise>> held) {
  return {
    [self, held](bounds_atom) {
      held->push_back(self->make_response_promise());
      return caf::delegated<int64_t, int64_t, int64_t>{};
    },
    [self, held](status_atom) {
      held->push_back(self->make_response_promise());
      return caf::delegated<std::string>{};
    },
  };
}

json collect(caf::actor_system& sys, std::shared_ptr<const topic_map> topics, std::shared_ptr<const owner_map> owners,
             std::chrono::milliseconds timeout) {
  std::promise<json> got;
  transport::collect_local_loads(sys, std::move(topics), std::move(owners), "b1", timeout,
                                 [&got](json body) { got.set_value(std::move(body)); });
  auto f = got.get_future();
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  return f.get();
}

}  // namespace

TEST_CASE("local loads list every partition with owner bounds and counters and a stuck one with an error",
          "[transport][loads]") {
  test::temp_dir dir;
  auto cfg = make_system_config({});
  caf::actor_system sys{*cfg};
  auto real = spawn_partition(sys, spawn_io_pool(sys, io_of(1, 0)), partition_settings{dir.path(), "t", 0, {}, 0});
  {
    caf::scoped_actor self{sys};
    auto batch = storage::encode_batch({{std::string("k"), "v1", {}, 1}, {std::string("k"), "v2", {}, 2}}).value();
    self->request(real, 5s, append_atom::value, batch, true).receive([](int64_t) {}, [](caf::error&) {});
  }
  auto held = std::make_shared<std::vector<caf::response_promise>>();
  auto stuck = sys.spawn(stuck_partition, held);
  auto topics = std::make_shared<topic_map>();
  (*topics)["t"] = topic_handles{"t", {}, {real, caf::actor_cast<partition_actor>(stuck)}};
  auto owners = std::make_shared<owner_map>();
  (*owners)[cluster::topic_partition{"t", 0}] = "b1";
  (*owners)[cluster::topic_partition{"t", 1}] = "b9";

  auto t0 = std::chrono::steady_clock::now();
  auto body = collect(sys, topics, owners, 300ms);
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);
  CHECK(body["broker_id"] == "b1");
  CHECK(body["topics"] == json::parse(R"([{"name":"t","partitions":2}])"));
  REQUIRE(body["partitions"].size() == 2);
  auto p0 = body["partitions"][0];
  CHECK(p0["owner"] == "b1");
  CHECK(p0["log_start_offset"] == 0);
  CHECK(p0["log_end_offset"] == 2);
  CHECK(p0["size_bytes"].get<int64_t>() > 0);
  CHECK(p0["records_in"] == 2);
  CHECK(p0["bytes_in"].get<int64_t>() > 0);
  CHECK(p0["records_out"] == 0);
  CHECK(p0["bytes_out"] == 0);
  CHECK_FALSE(p0.contains("error"));
  auto p1 = body["partitions"][1];
  CHECK(p1["partition"] == 1);
  CHECK(p1["owner"] == "b9");
  CHECK(p1.contains("error"));
  CHECK_FALSE(p1.contains("log_end_offset"));
  // A partition the image names no owner for is nobody's (null), never this
  // broker's; without an image (a standalone broker) every partition is its own.
  owners->erase(cluster::topic_partition{"t", 0});
  auto unnamed = collect(sys, topics, owners, 300ms);
  CHECK(unnamed["partitions"][0]["owner"].is_null());
  auto standalone = collect(sys, topics, nullptr, 300ms);
  CHECK(standalone["partitions"][0]["owner"] == "b1");

  // No partition at all: answered at once.
  auto empty = collect(sys, std::make_shared<topic_map>(), nullptr, 300ms);
  // Without traits: no rack, weight 1; with them, as given (Cluster.Rack, Cluster.Weight).
  CHECK(empty["rack"] == "");
  CHECK(empty["weight"] == 1.0);
  std::promise<json> traits;
  transport::collect_local_loads(sys, std::make_shared<topic_map>(), nullptr, "b1", 300ms,
                                 [&traits](json answer) { traits.set_value(std::move(answer)); }, {"ra", 2.5});
  auto with_traits = traits.get_future().get();
  CHECK(with_traits["rack"] == "ra");
  CHECK(with_traits["weight"] == 2.5);
  // Every answer carries this process's latency windows (docs/balancer.md
  // "Slow brokers"); the appends above were answered after syncs.
  const auto latency = empty["latency"];
  CHECK(latency["window_seconds"] == 30);
  for (const char* w : {"sync", "produce"}) {
    INFO(w);
    CHECK(latency[w]["count"].get<uint64_t>() >= 1);
    CHECK(latency[w]["p99_ms"].get<double>() >= latency[w]["p50_ms"].get<double>());
    CHECK(latency[w]["max_ms"].get<double>() >= latency[w]["p99_ms"].get<double>());
  }
  empty.erase("latency");
  // "topic_placement": this version reads placed topic entries (docs/metadata.md).
  CHECK(empty == json::parse(R"({"broker_id":"b1","partitions":[],"topics":[],"rack":"","weight":1.0,
                                 "topic_placement":1})"));
  caf::anon_send_exit(real, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(stuck, caf::exit_reason::user_shutdown);
}

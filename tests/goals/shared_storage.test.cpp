// The planner with shared storage (cluster_model::shared_storage,
// docs/balancer.md "Shared storage: cost model"): a move copies no byte, so
// the DISK goals are off, the band is tighter and a new broker is filled in
// one pass; local storage is unchanged.

#include <catch2/catch.hpp>

#include <map>

#include "goals/band.hpp"
#include "goals/builtin_goals.hpp"
#include "goals/detector.hpp"
#include "tests/goals/model_builder.hpp"

using namespace moonmq::goals;
using moonmq::test::broker;
using moonmq::test::builtin_goals;
using moonmq::test::replica;

namespace {

std::map<std::string, goal_config> configs(const cluster_model& m) {
  std::map<std::string, goal_config> out;
  for (const auto& b : bind_goals(m, builtin_goals())) out[b.impl->name()] = b.config;
  return out;
}

/// b1..b3 with 60 partitions each (NW_IN 1 MiB/s, NW_OUT 2 MiB/s, DISK
/// 1 GiB apiece), and b4 just joined, empty.
cluster_model new_broker(bool shared) {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3"), broker("b4")};
  for (int b = 1; b <= 3; ++b)
    for (int p = 0; p < 60; ++p)
      m.replicas.push_back(replica("t" + std::to_string(b), p, "b" + std::to_string(b), 1048576.0, 2097152.0,
                                   1073741824.0));
  m.max_actions = 20;
  m.shared_storage = shared;
  return m;
}

std::map<std::string, int> counts_after(const cluster_model& m, const plan& p) {
  std::map<std::string, int> out;
  for (const auto& r : moonmq::test::applied(m, p).replicas) ++out[r.owner];
  return out;
}

}  // namespace

TEST_CASE("shared storage: DISK goals off, a tighter default band, overrides still win", "[goals][shared]") {
  cluster_model local;
  auto l = configs(local);
  CHECK(l.count("DISK") == 1);
  CHECK(l.count("DISK_CAPACITY") == 1);
  CHECK(l.at("NW_IN").avg_deviation == Approx(0.2));

  cluster_model shared;
  shared.shared_storage = true;
  auto s = configs(shared);
  CHECK(s.count("DISK") == 0);  // disabled goals are not bound
  CHECK(s.count("DISK_CAPACITY") == 0);
  for (const char* name : {"NW_IN", "NW_OUT", "PARTITION_COUNT"}) {
    INFO(name);
    CHECK(s.at(name).avg_deviation == Approx(kSharedStorageAvgDeviation));
  }
  CHECK(s.at("NW_IN_CAPACITY").capacity_threshold == Approx(0.8));

  goal_overrides disk_on;
  disk_on.enabled = true;
  goal_overrides wide;
  wide.avg_deviation = 0.3;
  shared.goals["DISK"] = disk_on;
  shared.goals["NW_IN"] = wide;
  auto o = configs(shared);
  CHECK(o.count("DISK") == 1);
  CHECK(o.at("NW_IN").avg_deviation == Approx(0.3));
}

TEST_CASE("shared storage: a new broker gets its share in one pass, local storage stays at MaxActionsPerDetect",
          "[goals][shared]") {
  const auto local = new_broker(false);
  auto lp = make_plan(local, builtin_goals());
  REQUIRE(lp.ok());
  CHECK(lp.value().actions.size() == 20);
  CHECK(counts_after(local, lp.value())["b4"] == 20);

  const auto shared = new_broker(true);
  auto frozen = snapshot::freeze(shared);
  REQUIRE(frozen.ok());
  CHECK(shared_storage_cap(shared, frozen.value()) == 45);  // mean 45: b4 lacks 45
  CHECK(shared_storage_cap(local, frozen.value()) == 20);
  auto sp = make_plan(shared, builtin_goals());
  REQUIRE(sp.ok());
  auto counts = counts_after(shared, sp.value());
  INFO(sp.value().summary);
  // Inside PARTITION_COUNT's band, 45·(1 ± kSharedStorageAvgDeviation), after one pass.
  for (const auto& [b, n] : counts) {
    INFO(b << " " << n);
    CHECK(n >= 45.0 * (1.0 - kSharedStorageAvgDeviation));
    CHECK(n <= 45.0 * (1.0 + kSharedStorageAvgDeviation));
  }
  CHECK(sp.value().actions.size() <= 45);
  CHECK(sp.value().balancedness_after == Approx(100.0));

  // The next pass on the applied plan has nothing to do.
  auto next = make_plan(moonmq::test::applied(shared, sp.value()), builtin_goals());
  REQUIRE(next.ok());
  CHECK(next.value().actions.empty());
}

TEST_CASE("shared storage: the cap never drops below MaxActionsPerDetect and 0 stays 0", "[goals][shared]") {
  cluster_model m;
  m.shared_storage = true;
  m.max_actions = 50;
  m.brokers = {broker("b1"), broker("b2")};
  for (int p = 0; p < 10; ++p) m.replicas.push_back(replica("t", p, "b1"));
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  CHECK(shared_storage_cap(m, s.value()) == 50);
  m.max_actions = 1;
  CHECK(shared_storage_cap(m, s.value()) == 5);  // b2 lacks 5
  m.max_actions = 0;  // MaxActionsPerDetect 0 stops every move
  CHECK(shared_storage_cap(m, s.value()) == 0);
  cluster_model none;
  none.shared_storage = true;
  auto e = snapshot::freeze(none);
  REQUIRE(e.ok());
  CHECK(shared_storage_cap(none, e.value()) == 50);
}

// replica_load_index (goals/load_index.hpp): the nearest-load search.

#include <catch2/catch.hpp>

#include <vector>

#include "goals/load_index.hpp"
#include "tests/goals/model_builder.hpp"

using namespace moonmq::goals;
using moonmq::test::broker;
using moonmq::test::replica;

TEST_CASE("nearest skips replicas lighter than min_load even when the target is below it", "[load_index]") {
  // 40 replicas of 1 and 3 of 5 on b1. Aiming at 0.5 with min_load 2, the
  // ones of 1 lie between target and floor: the search starts at the floor.
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2")};
  for (int p = 0; p < 40; ++p) m.replicas.push_back(replica("light", p, "b1", 1));
  for (int p = 0; p < 3; ++p) m.replicas.push_back(replica("heavy", p, "b1", 5));
  auto s = snapshot::freeze(m);
  REQUIRE(s.ok());
  replica_load_index idx(s.value(), resource::nw_in);
  std::vector<double> seen;
  const bool hit = idx.nearest(broker_index{0}, 0.5, 4, [&](replica_index, double x) {
    seen.push_back(x);
    return false;
  }, 2.0);
  CHECK_FALSE(hit);
  CHECK(seen == std::vector<double>{5, 5, 5});

  // A target above min_load still visits both sides, nearest first.
  seen.clear();
  idx.nearest(broker_index{0}, 4.0, 5, [&](replica_index, double x) {
    seen.push_back(x);
    return false;
  }, 0.0);
  CHECK(seen == std::vector<double>{5, 5, 5, 1, 1});
}

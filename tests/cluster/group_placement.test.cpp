#include <catch2/catch.hpp>

#include <map>

#include "cluster/group_placement.hpp"

using moonmq::cluster::fnv1a_32;
using moonmq::cluster::group_coordinator;

TEST_CASE("fnv1a_32 matches the published test vectors", "[cluster][group_placement]") {
  // Test vectors of the FNV reference (draft-eastlake-fnv, section 8).
  CHECK(fnv1a_32("") == 0x811c9dc5u);
  CHECK(fnv1a_32("a") == 0xe40c292cu);
  CHECK(fnv1a_32("foobar") == 0xbf9cf968u);
}

TEST_CASE("group coordinator is the sorted broker at fnv1a mod n", "[cluster][group_placement]") {
  std::vector<std::string> brokers{"b1", "b2", "b3"};
  auto h = fnv1a_32("orders-app");
  CHECK(group_coordinator("orders-app", brokers) == brokers[h % 3]);
}

TEST_CASE("group coordinator does not depend on the order or repeats of broker ids", "[cluster][group_placement]") {
  for (std::string g : {"a", "g1", "payments", "x.y-z_1", "group-42"}) {
    auto expected = group_coordinator(g, {"b1", "b2", "b3"});
    CHECK(group_coordinator(g, {"b3", "b1", "b2"}) == expected);
    CHECK(group_coordinator(g, {"b2", "b3", "b1", "b2"}) == expected);
  }
}

TEST_CASE("group coordinator of a single broker is that broker", "[cluster][group_placement]") {
  CHECK(group_coordinator("anything", {"solo"}) == "solo");
  CHECK(group_coordinator("anything", {}).empty());
}

TEST_CASE("group coordinators spread over every broker", "[cluster][group_placement]") {
  std::map<std::string, int> per_broker;
  for (int i = 0; i < 300; ++i)
    ++per_broker[group_coordinator("group-" + std::to_string(i), {"b1", "b2", "b3"})];
  REQUIRE(per_broker.size() == 3);
  for (const auto& [id, n] : per_broker)
    CHECK(n > 50);  // about 100 each
}

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "groups/range_assignor.hpp"

using namespace moonmq::groups;
using parts = std::vector<int32_t>;

TEST_CASE("range: 3 members x 7 partitions gives 3,2,2 contiguous ranges in member-id order", "[groups]") {
  subscriptions subs{{"c", {"t"}}, {"a", {"t"}}, {"b", {"t"}}};
  auto out = assign_range(subs, {{"t", 7}});
  CHECK(out["a"]["t"] == parts{0, 1, 2});
  CHECK(out["b"]["t"] == parts{3, 4});
  CHECK(out["c"]["t"] == parts{5, 6});
}

TEST_CASE("range: an even split gives equal ranges", "[groups]") {
  auto out = assign_range({{"a", {"t"}}, {"b", {"t"}}}, {{"t", 4}});
  CHECK(out["a"]["t"] == parts{0, 1});
  CHECK(out["b"]["t"] == parts{2, 3});
}

TEST_CASE("range: each topic is split among its own subscribers only", "[groups]") {
  subscriptions subs{{"a", {"orders", "payments"}}, {"b", {"orders"}}, {"c", {"payments"}}};
  auto out = assign_range(subs, {{"orders", 3}, {"payments", 4}});
  CHECK(out["a"]["orders"] == parts{0, 1});
  CHECK(out["b"]["orders"] == parts{2});
  CHECK(out["a"]["payments"] == parts{0, 1});
  CHECK(out["c"]["payments"] == parts{2, 3});
  CHECK(out["b"].count("payments") == 0);
  CHECK(out["c"].count("orders") == 0);
}

TEST_CASE("range: with more members than partitions the last members get empty lists", "[groups]") {
  auto out = assign_range({{"a", {"t"}}, {"b", {"t"}}, {"c", {"t"}}, {"d", {"t"}}}, {{"t", 2}});
  CHECK(out["a"]["t"] == parts{0});
  CHECK(out["b"]["t"] == parts{1});
  REQUIRE(out.count("c") == 1);
  CHECK(out["c"]["t"].empty());
  CHECK(out["d"]["t"].empty());
}

TEST_CASE("range: a topic without a known partition count assigns nothing", "[groups]") {
  auto out = assign_range({{"a", {"known", "gone"}}}, {{"known", 1}});
  CHECK(out["a"]["known"] == parts{0});
  CHECK(out["a"]["gone"].empty());
}

TEST_CASE("range: every partition is assigned exactly once", "[groups]") {
  subscriptions subs;
  for (int i = 0; i < 5; ++i)
    subs["m" + std::to_string(i)] = {"t"};
  for (int32_t n : {1, 4, 5, 11, 64}) {
    auto out = assign_range(subs, {{"t", n}});
    std::vector<int32_t> all;
    for (auto& [member, a] : out)
      all.insert(all.end(), a["t"].begin(), a["t"].end());
    std::sort(all.begin(), all.end());
    REQUIRE(all.size() == static_cast<size_t>(n));
    for (int32_t p = 0; p < n; ++p)
      CHECK(all[static_cast<size_t>(p)] == p);
  }
}

TEST_CASE("range: no members gives an empty assignment", "[groups]") {
  CHECK(assign_range({}, {{"t", 3}}).empty());
}

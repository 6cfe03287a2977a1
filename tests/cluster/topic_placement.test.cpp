// Where a new topic's partitions start (cluster/topic_placement.hpp): by
// rack weight over racks, by broker weight within a rack, emptier brokers
// first on ties, independent of the input order.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "cluster/topic_placement.hpp"

using moonmq::cluster::place_partitions;
using moonmq::cluster::placement_candidate;

namespace {

std::map<std::string, int> counts(const std::vector<std::string>& owners) {
  std::map<std::string, int> n;
  for (const auto& o : owners)
    ++n[o];
  return n;
}

}  // namespace

TEST_CASE("partitions of a new topic spread by broker weight", "[cluster][placement]") {
  auto owners = place_partitions({{"b1", "", 1, 0, 0}, {"b2", "", 1, 0, 0}, {"b3", "", 2, 0, 0}}, 8);
  REQUIRE(owners.size() == 8);
  CHECK(counts(owners) == std::map<std::string, int>{{"b1", 2}, {"b2", 2}, {"b3", 4}});
  // Equal weights: one each, every broker used before any gets a second.
  std::vector<placement_candidate> twenty;
  for (int i = 0; i < 20; ++i)
    twenty.push_back({"b" + std::to_string(100 + i), "", 1, 0, 0});
  auto spread = place_partitions(twenty, 30);
  auto first20 = counts({spread.begin(), spread.begin() + 20});
  CHECK(first20.size() == 20);
  for (const auto& [id, n] : counts(spread))
    CHECK((n == 1 || n == 2));
}

TEST_CASE("partitions of a new topic spread over racks by rack weight, then within a rack", "[cluster][placement]") {
  // Rack r1 weighs 2 (two brokers), r2 weighs 1: 2/3 and 1/3 of the topic.
  auto owners = place_partitions({{"b1", "r1", 1, 0, 0}, {"b2", "r1", 1, 0, 0}, {"b3", "r2", 1, 0, 0}}, 6);
  CHECK(counts(owners) == std::map<std::string, int>{{"b1", 2}, {"b2", 2}, {"b3", 2}});
  // Two partitions over those racks: one in each, not both in the heavier rack.
  owners = place_partitions({{"b1", "r1", 1, 0, 0}, {"b2", "r1", 1, 0, 0}, {"b3", "r2", 1, 0, 0}}, 2);
  CHECK(owners == std::vector<std::string>{"b1", "b3"});
  // One heavy broker alone in r2 (weight 3) against two light ones in r1
  // (1 + 1): r2 takes 3/5, r1 2/5, split evenly inside.
  owners = place_partitions({{"a", "r1", 1, 0, 0}, {"b", "r1", 1, 0, 0}, {"c", "r2", 3, 0, 0}}, 10);
  CHECK(counts(owners) == std::map<std::string, int>{{"a", 2}, {"b", 2}, {"c", 6}});
  // Three brokers in r1, one in r2, equal weights: r1 takes 3/4.
  owners = place_partitions({{"a", "r1", 1, 0, 0}, {"b", "r1", 1, 0, 0}, {"c", "r1", 1, 0, 0}, {"d", "r2", 1, 0, 0}}, 8);
  CHECK(counts(owners) == std::map<std::string, int>{{"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}});
  // Brokers without a rack count as one rack (of weight 2 here: 3 of 4).
  owners = place_partitions({{"a", "", 1, 0, 0}, {"b", "", 1, 0, 0}, {"c", "r2", 1, 0, 0}}, 4);
  CHECK(counts(owners) == std::map<std::string, int>{{"a", 2}, {"b", 1}, {"c", 1}});
}

TEST_CASE("a growth places by the topic's partitions already held, ties go to the emptier broker",
          "[cluster][placement]") {
  // b1 holds 3 of the topic: the 3 new ones go to b2 and b3 first.
  auto owners = place_partitions({{"b1", "", 1, 3, 3}, {"b2", "", 1, 0, 0}, {"b3", "", 1, 0, 0}}, 3);
  auto n = counts(owners);
  CHECK(n.count("b1") == 0);
  CHECK(n["b2"] + n["b3"] == 3);
  // Equal shares of the topic: fewer partitions of every topic per unit of weight first.
  owners = place_partitions({{"b1", "", 1, 10, 0}, {"b2", "", 1, 0, 0}, {"b3", "", 1, 5, 0}}, 1);
  CHECK(owners == std::vector<std::string>{"b2"});
  owners = place_partitions({{"b1", "", 1, 10, 0}, {"b2", "", 1, 0, 0}, {"b3", "", 1, 5, 0}}, 3);
  CHECK(owners == std::vector<std::string>{"b2", "b3", "b1"});
  // Decimal weights that sum to the same share still tie and fall to the id.
  owners = place_partitions({{"b2", "", 0.3, 0, 0}, {"b1", "", 0.1 + 0.2, 0, 0}}, 1);
  CHECK(owners == std::vector<std::string>{"b1"});
}

TEST_CASE("placement depends on the brokers, not on their order", "[cluster][placement]") {
  std::vector<placement_candidate> brokers{{"a", "r1", 1, 4, 1},  {"b", "r1", 2, 0, 0}, {"c", "r2", 1, 7, 0},
                                           {"d", "r2", 0.5, 1, 0}, {"e", "", 1, 0, 2},  {"f", "r3", 3, 9, 0}};
  auto expected = place_partitions(brokers, 17);
  REQUIRE(expected.size() == 17);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::shuffle(brokers.begin(), brokers.end(), rng);
    CHECK(place_partitions(brokers, 17) == expected);
  }
  CHECK(place_partitions({}, 3).empty());
  CHECK(place_partitions(brokers, 0).empty());
}

#pragma once
// What a broker says about placing a new topic's partitions, and the owners
// its own image holds, read through its admin listener (docs/metadata.md
// "Placing a new topic's partitions"): for the scenarios that create
// topics with TopicPlacement spread.

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/node/move_cluster.hpp"

namespace moonmq::test::placement_checks {

using nlohmann::json;
using namespace std::chrono_literals;
using move::call;
using move::move_cluster;

/// The cluster_state row's "topic_placement" in /admin/actors on `admin`
/// (an empty object when not found).
inline json topic_placement_state(uint16_t admin) {
  auto a = call(admin, "GET", "/admin/actors");
  if (a.status == 200 && a.body.is_object() && a.body["actors"].is_array())
    for (const auto& row : a.body["actors"])
      if (row.value("kind", "") == "cluster_state" && row["state"].is_object())
        if (auto t = row["state"].value("topic_placement", json{}); t.is_object())
          return t;
  return json::object();
}

/// topic's partition -> owner in the image of the broker behind `admin`
/// (its cluster_state row in /admin/actors), once that broker has applied
/// all `partitions` of it (10 s at most: a broker applies an entry within a
/// heartbeat of the one that proposed it).
inline std::map<int, std::string> image_owners(uint16_t admin, const std::string& topic, int partitions) {
  std::map<int, std::string> out;
  for (int tries = 0; tries < 100; ++tries) {
    out.clear();
    auto a = call(admin, "GET", "/admin/actors");
    if (a.status == 200 && a.body.is_object() && a.body["actors"].is_array())
      for (const auto& row : a.body["actors"])
        if (row.value("kind", "") == "cluster_state" && row["state"].is_object() && row["state"]["owners"].is_array())
          for (const auto& o : row["state"]["owners"])
            if (o.value("topic", "") == topic && o["owner"].is_string())
              out[o.value("partition", -1)] = o["owner"].get<std::string>();
    if (static_cast<int>(out.size()) >= partitions)
      break;
    std::this_thread::sleep_for(100ms);
  }
  return out;
}

/// Partitions of `topic` per owner in the image of the broker behind `admin`.
inline std::map<std::string, int> image_owner_counts(uint16_t admin, const std::string& topic, int partitions) {
  std::map<std::string, int> out;
  for (const auto& row : image_owners(admin, topic, partitions))
    ++out[row.second];
  return out;
}

/// Waits (20 s at most) until every broker of `c` would spread a create
/// over all of `ids`.
inline void wait_spreading(move_cluster& c, size_t brokers, const std::vector<std::string>& ids) {
  for (size_t i = 0; i < brokers; ++i) {
    json state;
    for (int tries = 0; tries < 200; ++tries) {
      state = topic_placement_state(c.admin(i));
      if (state.value("spreads", false) && state.value("candidates", json::array()) == json(ids))
        break;
      std::this_thread::sleep_for(100ms);
    }
    INFO("broker " << i << " " << state.dump());
    REQUIRE(state.value("spreads", false));
    REQUIRE(state.value("candidates", json::array()) == json(ids));
  }
}


}  // namespace moonmq::test::placement_checks

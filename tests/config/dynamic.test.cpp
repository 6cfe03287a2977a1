// The dynamic balancer settings (config/dynamic.hpp): strict patch checks,
// and the settings applied on top of the configured Autobalance section.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "config/dynamic.hpp"

using namespace moonmq::config;
using nlohmann::json;

TEST_CASE("a balancer settings patch is checked key by key", "[config][dynamic]") {
  CHECK(check_balancer_patch(json::parse(R"({"Enabled":true,"DryRun":false,"IntervalSeconds":30,
    "MaxActionsPerDetect":0,"ExcludedTopics":["a"],"ExcludedBrokers":[],"MoveThrottleBytesPerSec":1048576})")) == "");
  CHECK(check_balancer_patch(json::parse(R"({"DryRun":null})")) == "");
  for (const char* bad : {R"({})", R"([])", R"("x")", R"({"DryRun":1})", R"({"Enabled":"true"})",
                          R"({"IntervalSeconds":0})", R"({"IntervalSeconds":86401})", R"({"IntervalSeconds":1.5})",
                          R"({"MaxActionsPerDetect":-1})", R"({"MoveThrottleBytesPerSec":-1})",
                          R"({"ExcludedTopics":"a"})", R"({"ExcludedTopics":[1]})", R"({"ExcludedBrokers":[""]})",
                          R"({"Goals":[]})", R"({"Bogus":null})"}) {
    INFO(bad);
    CHECK_FALSE(check_balancer_patch(json::parse(bad)).empty());
  }
  CHECK(check_balancer_patch(json::parse(R"({"Bogus":1})")).find("Bogus") != std::string::npos);
}

TEST_CASE("dynamic settings apply on top of the configured section", "[config][dynamic]") {
  autobalance_config base;
  base.enabled = false;
  base.dry_run = true;
  base.interval_seconds = 60;
  base.excluded_topics = {"x"};
  auto c = apply_balancer_settings(base, json::parse(R"({"Enabled":true,"DryRun":false,"ExcludedBrokers":["b3"]})"));
  CHECK(c.enabled);
  CHECK_FALSE(c.dry_run);
  CHECK(c.interval_seconds == 60);
  CHECK(c.excluded_topics == std::vector<std::string>{"x"});
  CHECK(c.excluded_brokers == std::vector<std::string>{"b3"});
  CHECK(throttle_with(500, json::object()) == 500);
  CHECK(throttle_with(500, json::parse(R"({"MoveThrottleBytesPerSec":0})")) == 0);
  auto shown = effective_balancer_settings(c, 7);
  CHECK(shown["Enabled"] == true);
  CHECK(shown["MoveThrottleBytesPerSec"] == 7);
  CHECK(shown["ExcludedBrokers"] == json::array({"b3"}));
}

TEST_CASE("dynamic goal settings are checked with the configuration's ranges and override per key",
          "[config][dynamic]") {
  CHECK(check_balancer_patch(json::parse(R"({"Goals":{"NW_IN":{"Enabled":false,"AvgDeviation":0.2,
    "DetectThreshold":16384,"Priority":3,"CapacityThreshold":0.8,"Bogus":null}}})")) == "");
  CHECK(check_balancer_patch(json::parse(R"({"Goals":null})")) == "");
  CHECK(check_balancer_patch(json::parse(R"({"Goals":{}})")) == "");  // no dynamic override left
  for (const char* bad : {R"({"Goals":{"NW_IN":true}})", R"({"Goals":{"NW_IN":{"Enabled":1}}})",
                          R"({"Goals":{"NW_IN":{"AvgDeviation":11}}})", R"({"Goals":{"NW_IN":{"AvgDeviation":-0.1}}})",
                          R"({"Goals":{"NW_IN":{"CapacityThreshold":1.5}}})", R"({"Goals":{"NW_IN":{"Priority":0.5}}})",
                          R"({"Goals":{"NW_IN":{"Priority":2000000}}})", R"({"Goals":{"NW_IN":{"Weight":1}}})",
                          R"({"Goals":{"":{}}})"}) {
    INFO(bad);
    auto why = check_balancer_patch(json::parse(bad));
    CHECK_FALSE(why.empty());
    CHECK(why.find("Goals") != std::string::npos);
  }
  autobalance_config base;
  base.goals["NW_IN"].detect_threshold = 1024;
  base.goals["NW_IN"].priority = 2;
  base.goals["DISK"].enabled = false;
  auto c = apply_balancer_settings(base, json::parse(R"({"Goals":{"NW_IN":{"Enabled":false,"Priority":7},
                                                                  "PARTITION_COUNT":{"AvgDeviation":0.3}}})"));
  CHECK(c.goals.at("NW_IN").enabled == false);
  CHECK(c.goals.at("NW_IN").priority == 7);
  CHECK(c.goals.at("NW_IN").detect_threshold == 1024.0);  // the configured key stays
  CHECK(c.goals.at("DISK").enabled == false);             // a goal the patch does not name stays
  CHECK(c.goals.at("PARTITION_COUNT").avg_deviation == 0.3);
  auto shown = effective_balancer_settings(c, 0)["Goals"];
  CHECK(shown["NW_IN"] == json::parse(R"({"Enabled":false,"DetectThreshold":1024.0,"Priority":7})"));
  CHECK(shown["PARTITION_COUNT"] == json::parse(R"({"AvgDeviation":0.3})"));
  CHECK(shown["DISK"] == json::parse(R"({"Enabled":false})"));
}

TEST_CASE("NumPartitions is Kafka's num.partitions: checked, and the log's value overrides the configured one",
          "[config][dynamic]") {
  CHECK(check_balancer_patch(json::parse(R"({"NumPartitions":3})")) == "");
  CHECK(check_balancer_patch(json::parse(R"({"NumPartitions":null})")) == "");
  for (const char* bad : {R"({"NumPartitions":0})", R"({"NumPartitions":10001})", R"({"NumPartitions":"3"})",
                          R"({"NumPartitions":2.5})"}) {
    INFO(bad);
    CHECK(check_balancer_patch(json::parse(bad)).find("NumPartitions") != std::string::npos);
  }
  CHECK(num_partitions_with(2, json::parse(R"({"NumPartitions":6})")) == 6);
  CHECK(num_partitions_with(2, json::parse(R"({"DryRun":true})")) == 2);
  CHECK(num_partitions_with(2, json::parse(R"({})")) == 2);
  CHECK(num_partitions_with(5, json(nullptr)) == 5);
}

TEST_CASE("TopicPlacement is checked, and the log's value overrides the configured one", "[config][dynamic]") {
  CHECK(check_balancer_patch(json::parse(R"({"TopicPlacement":"spread"})")) == "");
  CHECK(check_balancer_patch(json::parse(R"({"TopicPlacement":"proposer"})")) == "");
  CHECK(check_balancer_patch(json::parse(R"({"TopicPlacement":null})")) == "");
  for (const char* bad : {R"({"TopicPlacement":"round-robin"})", R"({"TopicPlacement":1})"}) {
    INFO(bad);
    CHECK(check_balancer_patch(json::parse(bad)).find("TopicPlacement") != std::string::npos);
  }
  CHECK(topic_placement_with("proposer", json::parse(R"({"TopicPlacement":"spread"})")) == "spread");
  CHECK(topic_placement_with("spread", json::parse(R"({"DryRun":true})")) == "spread");
  CHECK(topic_placement_with("proposer", json(nullptr)) == "proposer");
}

TEST_CASE("the topic defaults LogSegmentBytes, LogRetentionBytes and LogRetentionMs are checked with the ranges of "
          "the topic keys they default, naming the key",
          "[config][dynamic]") {
  CHECK(check_balancer_patch(json::parse(R"({"LogSegmentBytes":1024,"LogRetentionBytes":-1,"LogRetentionMs":0})"))
        == "");
  CHECK(check_balancer_patch(json::parse(R"({"LogRetentionMs":null})")) == "");
  CHECK(check_balancer_patch(json::parse(R"({"LogSegmentBytes":100})")) == "LogSegmentBytes: must be at least 1024");
  CHECK(check_balancer_patch(json::parse(R"({"LogSegmentBytes":4294967296})")) == "LogSegmentBytes: must be below 2 GiB");
  CHECK(check_balancer_patch(json::parse(R"({"LogRetentionBytes":-5})")) == "LogRetentionBytes: must be at least -1");
  CHECK(check_balancer_patch(json::parse(R"({"LogRetentionMs":"1d"})")) == "LogRetentionMs: expected an integer");
  CHECK(check_balancer_patch(json::parse(R"({"LogRetentionHours":1})")).find("LogRetentionMs") != std::string::npos);
}

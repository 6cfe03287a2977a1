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
                          R"({"Goals":{}})", R"({"Bogus":null})"}) {
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

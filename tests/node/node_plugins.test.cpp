#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/node/node_harness.hpp"
#include "net/blocking_client.hpp"

using namespace moonmq::test;
using moonmq::transport::http_call;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

#ifdef MOONMQ_FIXTURE_DIR

namespace {
std::set<std::string> goal_names(const json& j) {
  std::set<std::string> out;
  for (const auto& g : j["goals"])
    out.insert(g["name"].get<std::string>());
  return out;
}
}  // namespace

TEST_CASE("GET /admin/plugins lists the goals a node loaded and names refused files", "[node][plugins]") {
  temp_dir dir;
  auto goals = dir.path() + "/goals";
  fs::create_directories(goals);
  fs::copy_file(std::string(MOONMQ_PLUGIN_DIR) + "/nw_in.so", goals + "/nw_in.so");
  fs::copy_file(std::string(MOONMQ_FIXTURE_DIR) + "/wrong_abi.so", goals + "/wrong_abi.so");
  node_process node{dir, {"Autobalance.GoalsDir=" + goals}};
  auto port = node.wait_ready();
  REQUIRE(port);
  auto res = http_call(*port, "GET", "/admin/plugins");
  REQUIRE(res.status == 200);
  auto j = json::parse(res.body);
  CHECK(goal_names(j) == std::set<std::string>{"NW_IN"});
  CHECK(j["goals"][0]["abi"].is_number());
  CHECK(j["goals"][0]["path"] == goals + "/nw_in.so");
  REQUIRE(j["errors"].size() == 1);
  CHECK(j["errors"][0]["path"] == goals + "/wrong_abi.so");
  CHECK(j["errors"][0].dump().find("ABI") != std::string::npos);

  // Drop more plugins in, one of them broken and one a duplicate name: reload
  // picks up the good one, names the bad ones, and the node stays up.
  fs::copy_file(std::string(MOONMQ_PLUGIN_DIR) + "/disk.so", goals + "/disk.so");
  fs::copy_file(std::string(MOONMQ_FIXTURE_DIR) + "/no_entry.so", goals + "/no_entry.so");
  fs::copy_file(std::string(MOONMQ_PLUGIN_DIR) + "/nw_in.so", goals + "/z_nw_in_again.so");
  auto reloaded = http_call(*port, "POST", "/admin/plugins/reload");
  REQUIRE(reloaded.status == 200);
  auto r = json::parse(reloaded.body);
  CHECK(goal_names(r) == std::set<std::string>{"DISK", "NW_IN"});
  CHECK(r["errors"].size() == 3);
  CHECK(reloaded.body.find("z_nw_in_again.so") != std::string::npos);
  CHECK(reloaded.body.find("no_entry.so") != std::string::npos);
  CHECK(http_call(*port, "GET", "/health").status == 200);
  CHECK(goal_names(json::parse(http_call(*port, "GET", "/admin/plugins").body)) == std::set<std::string>{"DISK", "NW_IN"});
  node.process().signal(SIGTERM);
  CHECK(node.process().wait(5s) == 0);
}

TEST_CASE("a node with the default goals dir loads every built-in goal", "[node][plugins]") {
  temp_dir dir;
  node_process node{dir};
  auto port = node.wait_ready();
  REQUIRE(port);
  auto j = json::parse(http_call(*port, "GET", "/admin/plugins").body);
  CHECK(goal_names(j) == std::set<std::string>{"DISK", "DISK_CAPACITY", "NW_IN", "NW_IN_CAPACITY", "NW_OUT",
                                                "NW_OUT_CAPACITY", "PARTITION_COUNT", "SLOW_BROKER", "TOPIC_SPREAD"});
  CHECK(j["errors"].empty());
  node.process().signal(SIGTERM);
  CHECK(node.process().wait(5s) == 0);
}

#endif

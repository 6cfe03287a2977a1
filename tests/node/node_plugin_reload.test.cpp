// POST /admin/plugins/reload on real brokers: one broker's reload reaches
// every peer (POST /cluster/plugins/reload), each loading the goal plugins
// of its own GoalsDir; a peer that does not answer is named (502).

#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "tests/node/move_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

// --- plugin reload reaches every broker -----------------------------------------

#ifdef MOONMQ_FIXTURE_DIR

TEST_CASE("POST /admin/plugins/reload at one broker reloads the goals of every broker", "[node][plugins][scenario]") {
  // Each broker has its own goals directory; an operator drops the new
  // plugin into each, then asks one broker to reload.
  temp_dir goals1, goals2;
  namespace fs = std::filesystem;
  for (auto* d : {&goals1, &goals2})
    fs::copy_file(std::string(MOONMQ_PLUGIN_DIR) + "/nw_in.so", d->path() + "/nw_in.so");
  move_cluster c{{"b1", "b2"}};
  c.start(0, {"Autobalance.GoalsDir=" + goals1.path()});
  c.start(1, {"Autobalance.GoalsDir=" + goals2.path()});
  auto names = [](const json& goals) {
    std::set<std::string> out;
    for (const auto& g : goals)
      out.insert(g.value("name", ""));
    return out;
  };
  for (auto* d : {&goals1, &goals2})
    fs::copy_file(std::string(MOONMQ_PLUGIN_DIR) + "/disk.so", d->path() + "/disk.so");
  fs::copy_file(std::string(MOONMQ_FIXTURE_DIR) + "/wrong_abi.so", goals2.path() + "/wrong_abi.so");

  auto a = call(c.admin(0), "POST", "/admin/plugins/reload");
  INFO(a.raw);
  REQUIRE(a.status == 200);
  CHECK(names(a.body["goals"]) == std::set<std::string>{"DISK", "NW_IN"});
  REQUIRE(a.body["brokers"].size() == 2);
  auto b2 = a.body["brokers"][1];
  CHECK(b2.value("id", "") == "b2");
  CHECK(b2.value("ok", false) == true);
  CHECK(names(b2["goals"]) == std::set<std::string>{"DISK", "NW_IN"});
  REQUIRE(b2["errors"].size() == 1);
  CHECK(b2["errors"][0].dump().find("wrong_abi.so") != std::string::npos);
  // b2 really runs the new set.
  CHECK(names(call(c.admin(1), "GET", "/admin/plugins").body["goals"]) == std::set<std::string>{"DISK", "NW_IN"});

  // A peer that cannot be reached is named, and the answer says not all reloaded.
  c.kill(1);
  auto partial = call(c.admin(0), "POST", "/admin/plugins/reload");
  INFO(partial.raw);
  CHECK(partial.status == 502);
  REQUIRE(partial.body["brokers"].size() == 2);
  CHECK(partial.body["brokers"][0].value("ok", false) == true);
  CHECK(partial.body["brokers"][1].value("ok", true) == false);
  CHECK(partial.body["brokers"][1].contains("error"));
}

#endif

#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/node/node_harness.hpp"
#include "tests/support/raw_http.hpp"
#include "net/blocking_client.hpp"

using namespace moonmq::test;
using moonmq::transport::http_call;
using namespace std::chrono_literals;
using nlohmann::json;

TEST_CASE("moonmq-node starts, answers /health and lists its actors", "[node]") {
  temp_dir dir;
  node_process node{dir};
  auto port = node.wait_ready();
  REQUIRE(port);
  auto health = http_call(*port, "GET", "/health");
  CHECK(health.status == 200);
  CHECK(json::parse(health.body)["broker_id"] == "local");
  auto actors = json::parse(http_call(*port, "GET", "/admin/actors").body)["actors"];
  std::set<std::string> kinds;
  for (auto& a : actors) {
    kinds.insert(a["kind"].get<std::string>());
    CHECK(a["status"] == "ok");
  }
  CHECK(kinds.count("node"));
  CHECK(kinds.count("registry"));
  node.process().signal(SIGTERM);
  CHECK(node.process().wait(5s) == 0);
}

TEST_CASE("SIGTERM under concurrent requests exits 0 within 5 seconds", "[node]") {
  temp_dir dir;
  node_process node{dir};
  auto port = node.wait_ready();
  REQUIRE(port);
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0}, ok{0}, refused{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&] {
      while (!stop) {
        auto r = http_call(*port, "GET", "/admin/actors", {}, {}, 2s);
        ++answered;
        // An answer is a full 200, a 503 shutting_down while draining, or
        // none at all (connection refused or closed).
        if (r.status == 200 && json::parse(r.body, nullptr, false).is_object())
          ++ok;
        else if (r.status == 503 && r.body.find("shutting_down") != std::string::npos)
          ++refused;
        else if (r.status != 0)
          FAIL_CHECK("unexpected status " << r.status << " " << r.body);
      }
    });
  REQUIRE(wait_until([&] { return ok.load() >= 20; }, 10s));
  auto t0 = std::chrono::steady_clock::now();
  node.process().signal(SIGTERM);
  auto rc = node.process().wait(5s);
  auto took = std::chrono::steady_clock::now() - t0;
  stop = true;
  for (auto& c : clients)
    c.join();
  CHECK(rc == 0);
  CHECK(took < 5s);
  CHECK(node.log().find("node.stopped") != std::string::npos);
}

TEST_CASE("SIGINT is a clean shutdown too", "[node]") {
  temp_dir dir;
  node_process node{dir};
  REQUIRE(node.wait_ready());
  node.process().signal(SIGINT);
  CHECK(node.process().wait(5s) == 0);
}

TEST_CASE("invalid configuration exits 2 naming the key or line", "[node]") {
  temp_dir dir;
  {
    std::ofstream{dir.path() + "/wrong-type.json"} << R"({"Server": {"Port": "eighty"}})";
    std::ofstream{dir.path() + "/negative.json"} << R"({"Server": {"Admin": {"Port": -1}}})";
    std::ofstream{dir.path() + "/malformed.json"} << "{\n  \"Server\": {\n    \"Port\": 8080,\n  }\n";
  }
  auto [rc1, out1] = run_node(dir, {"--config", dir.path() + "/wrong-type.json"});
  CHECK(rc1 == 2);
  CHECK(out1.find("Server.Port: expected an integer") != std::string::npos);
  auto [rc2, out2] = run_node(dir, {"--config", dir.path() + "/negative.json"});
  CHECK(rc2 == 2);
  CHECK(out2.find("Server.Admin.Port") != std::string::npos);
  auto [rc3, out3] = run_node(dir, {"--config", dir.path() + "/malformed.json"});
  CHECK(rc3 == 2);
  CHECK(out3.find("malformed.json:4:") != std::string::npos);
  auto [rc4, out4] = run_node(dir, {"--set", "Admin.Port=99999"});
  CHECK(rc4 == 2);
  CHECK(out4.find("Server.Admin.Port") != std::string::npos);
}

TEST_CASE("version and help flags exit 0", "[node]") {
  temp_dir dir;
  auto [rc, out] = run_node(dir, {"--version"});
  CHECK(rc == 0);
  CHECK(out.find("moonmq-node ") == 0);
  auto [hrc, hout] = run_node(dir, {"--help"});
  CHECK(hrc == 0);
  CHECK(hout.find("--config") != std::string::npos);
}

TEST_CASE("an unusable data dir is a runtime failure (exit 1) naming the path", "[node]") {
  expected_log_errors expected{{"node.data_dir_failed"}};
  temp_dir dir;
  std::ofstream{dir.path() + "/plain-file"} << "x";
  auto bad = dir.path() + "/plain-file/data";
  auto [rc, out] = run_node(dir, {"--set", "DataDir=" + bad, "--set", "Admin.Port=0"});
  CHECK(rc == 1);
  CHECK(out.find(bad) != std::string::npos);
}

TEST_CASE("an admin port already in use is a runtime failure (exit 1)", "[node]") {
  expected_log_errors expected{{"node.listen_failed"}};
  temp_dir dir;
  node_process first{dir};
  auto port = first.wait_ready();
  REQUIRE(port);
  auto [rc, out] = run_node(dir, {"--set", "Admin.Port=" + std::to_string(*port), "--set",
                                  "DataDir=" + dir.path() + "/data2"});
  CHECK(rc == 1);
  CHECK(out.find("cannot listen") != std::string::npos);
  first.process().signal(SIGTERM);
  CHECK(first.process().wait(5s) == 0);
}

TEST_CASE("the admin token is enforced on a running node", "[node]") {
  temp_dir dir;
  node_process node{dir, {"Admin.Token=tok"}};
  auto port = node.wait_ready();
  REQUIRE(port);
  CHECK(http_call(*port, "GET", "/admin/actors").status == 401);
  CHECK(http_call(*port, "GET", "/admin/actors", {}, {{"Authorization", "Bearer tok"}}).status == 200);
  CHECK(node.log().find("tok") == std::string::npos);  // never logged
  node.process().signal(SIGTERM);
  CHECK(node.process().wait(5s) == 0);
}

TEST_CASE("a node with a Cluster section serves the cluster listener behind its token", "[node][cluster]") {
  temp_dir dir;
  node_process node{dir, {"Cluster.BrokerId=b1", "Cluster.Port=0", "Cluster.Token=t0ken"}};
  auto admin = node.wait_ready();
  REQUIRE(admin);
  std::smatch m;
  auto log = node.log();
  static const std::regex cluster_addr{R"(node\.ready .*cluster=[0-9.]+:([0-9]+))"};
  REQUIRE(std::regex_search(log, m, cluster_addr));
  auto port = static_cast<uint16_t>(std::stoi(m[1]));
  CHECK(http_call(port, "GET", "/cluster/owners").status == 401);
  auto owners = http_call(port, "GET", "/cluster/owners", {}, {{"X-Cluster-Token", "t0ken"}});
  CHECK(owners.status == 200);
  CHECK(json::parse(owners.body)["broker_id"] == "b1");
  // A one-voter Raft quorum: b1 elects itself; at its term only it may act
  // as the controller.
  json controller;
  REQUIRE(wait_until(
    [&] {
      auto c = http_call(*admin, "GET", "/admin/cluster");
      controller = json::parse(c.body, nullptr, false)["controller"];
      return c.status == 200 && controller["id"] == "b1";
    },
    10s));
  auto term = std::to_string(controller["epoch"].get<int64_t>());
  auto claim = http_call(port, "POST", "/cluster/controller", {},
                         {{"X-Cluster-Token", "t0ken"}, {"X-Controller-Epoch", term}, {"X-Controller-Id", "b1"}});
  CHECK(claim.status == 200);
  auto conflict = http_call(port, "POST", "/cluster/controller", {},
                            {{"X-Cluster-Token", "t0ken"}, {"X-Controller-Epoch", term}, {"X-Controller-Id", "b3"}});
  CHECK(conflict.status == 409);
  CHECK(json::parse(conflict.body, nullptr, false).value("error", "") == "epoch_conflict");
  CHECK(log.find("t0ken") == std::string::npos);
  node.process().signal(SIGTERM);
  CHECK(node.process().wait(5s) == 0);
}

TEST_CASE("a data dir whose ownership file names owners from the retired mode without Raft does not boot",
          "[node][cluster]") {
  expected_log_errors expected{{"node.cluster_state_failed"}};
  auto boot = [](const std::string& file_text) {
    temp_dir dir;
    std::filesystem::create_directories(dir.path() + "/data");
    std::ofstream{dir.path() + "/data/cluster-assignments.json"} << file_text;
    return run_node(dir, {"--set", "Cluster.BrokerId=b1", "--set", "Cluster.Port=0", "--set", "Admin.Port=0", "--set",
                          "Port=0", "--set", "DataDir=" + dir.path() + "/data", "--set", "Kafka.Enabled=false"});
  };
  // Rows: the boot stops before any listener, naming the file and the way out.
  auto [rc, out] = boot(R"({"version":1,"floor_epoch":0,"entries":[{"topic":"orders","partition":3,"owner":"b2","epoch":5}]})");
  CHECK(rc == 1);
  CHECK(out.find("cluster-assignments.json") != std::string::npos);
  CHECK(out.find("Upgrading") != std::string::npos);
  // Torn: refused too, naming the file.
  auto [torn_rc, torn_out] = boot(R"({"version":1,"entr)");
  CHECK(torn_rc == 1);
  CHECK(torn_out.find("cluster-assignments.json") != std::string::npos);
  // Empty (what a Raft broker of an earlier version left): ignored, the
  // broker starts and elects itself.
  temp_dir dir;
  std::filesystem::create_directories(dir.path() + "/data");
  std::ofstream{dir.path() + "/data/cluster-assignments.json"} << R"({"version":1,"floor_epoch":0,"entries":[]})";
  node_process node{dir, {"Cluster.BrokerId=b1", "Cluster.Port=0"}};
  auto admin = node.wait_ready();
  INFO(node.log());
  REQUIRE(admin);
  CHECK(wait_until(
    [&] { return json::parse(http_call(*admin, "GET", "/admin/cluster").body, nullptr, false)["controller"]["id"] == "b1"; },
    10s));
  node.process().signal(SIGTERM);
  CHECK(node.process().wait(5s) == 0);
}

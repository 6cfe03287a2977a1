// moonmqctl's cluster, broker, balancer and reassign commands against three
// real moonmq-node processes with the metadata log, as an operator runs them:
// text tables for people, `--format json` for scripts, and `reassign
// execute --wait` following its move to the end.

#include <catch2/catch.hpp>

#include <fstream>

#include "tests/node/metadata_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;

namespace {

/// The lines of `text` that contain `needle`.
size_t lines_containing(const std::string& text, const std::string& needle) {
  size_t n = 0;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("moonmqctl cluster info, broker list, balancer status and dry-run, and reassign execute --wait on three "
          "brokers",
          "[node][metadata][raft][ctl][scenario]") {
  // The balance loop runs in DryRun: it plans passes and moves nothing, so
  // the only move is the operator's.
  auto config = raft_config();
  for (auto& a : autobalance(true, 1))
    config.push_back(a);
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  const size_t leader = elected->first;
  create_topic(c.client(0), "skew", 4);  // every partition on b1
  REQUIRE(wait_until([&] { return owned_by(c, 2, "skew") == std::map<std::string, int>{{"b1", 4}}; }, 5s));

  SECTION("cluster info and broker list") {
    auto [rc, out] = moonmqctl(c.admin(1), "cluster info --format json");
    INFO(out);
    REQUIRE(rc == 0);
    auto info = json::parse(out, nullptr, false);
    REQUIRE(info.is_object());
    CHECK(info["partitions"] == 4);
    CHECK(info["topics"].get<int>() >= 1);
    CHECK(info["controller"]["id"] == c.id(leader));
    REQUIRE(info["brokers"].size() == 3);
    for (const auto& b : info["brokers"]) {
      CHECK(b["alive"] == true);
      CHECK(b["state"] == "active");
      CHECK(b["fenced"] == false);
      CHECK(b["partitions"] == (b["id"] == "b1" ? 4 : 0));
    }
    auto [trc, text] = moonmqctl(c.admin(1), "cluster info");
    INFO(text);
    CHECK(trc == 0);
    CHECK(text.find("CONTROLLER  " + c.id(leader)) != std::string::npos);
    CHECK(lines_containing(text, "active") == 3);
    CHECK(lines_containing(text, "b2*") == 1);  // the broker asked

    auto [lrc, list] = moonmqctl(c.admin(2), "broker list");
    INFO(list);
    CHECK(lrc == 0);
    CHECK(list.rfind("BROKER  STATE   FENCED  PARTITIONS\n", 0) == 0);
    CHECK(lines_containing(list, "active  no") == 3);
  }

  SECTION("balancer status and dry-run explain the plan per goal") {
    // The leader's loop plans the skew away in DryRun once every broker's
    // load window is complete.
    json plan;
    REQUIRE(wait_until(
      [&] {
        auto [rc, out] = moonmqctl(c.admin(leader), "balancer dry-run --format json");
        auto pass = json::parse(out, nullptr, false);
        if (rc != 0 || !pass.is_object() || !pass.contains("plan"))
          return false;
        plan = pass["plan"];
        return !plan.value("actions", json::array()).empty();
      },
      20s));
    CHECK(owned_by(c, 0, "skew") == std::map<std::string, int>{{"b1", 4}});  // a dry run moves nothing
    auto [rc, text] = moonmqctl(c.admin(leader), "balancer dry-run");
    INFO(text);
    CHECK(rc == 0);
    CHECK(text.find("BALANCEDNESS") != std::string::npos);
    CHECK(lines_containing(text, "PARTITION_COUNT") >= 1);
    CHECK(lines_containing(text, "MOVE  skew") >= 1);
    // Each broker's rack and weight as the pass read them: none configured
    // here, so no rack and weight 1.
    CHECK(text.find("BROKER  RACK  WEIGHT  ALIVE") != std::string::npos);
    CHECK(text.find("\nb1      -     1       yes") != std::string::npos);

    auto [src, status] = moonmqctl(c.admin(leader), "balancer status");
    INFO(status);
    CHECK(src == 0);
    CHECK(status.find("DRY-RUN       yes") != std::string::npos);
    CHECK(status.find("GOALS") != std::string::npos);
    auto [frc, follower] = moonmqctl(c.admin((leader + 1) % 3), "balancer status --format json");
    INFO(follower);
    CHECK(frc == 0);
    CHECK(json::parse(follower, nullptr, false).value("dry_run", false) == true);
  }

  SECTION("reassign execute --wait follows the move to done") {
    temp_dir dir{"moonmq-ctl-plan"};
    auto plan_file = dir.path() + "/plan.json";
    std::ofstream(plan_file) << R"({"version":1,"partitions":[{"topic":"skew","partition":0,"replicas":["b2"]}]})";
    auto [rc, out] = moonmqctl(c.admin(0), "reassign execute --plan " + plan_file
                                             + " --reason OPS-18 --wait --interval-ms 200");
    INFO(out);
    CHECK(rc == 0);
    CHECK(out.find("accepted  skew/0  b1 -> b2") != std::string::npos);
    CHECK(out.find("skew/0  b1 -> b2  done  [####################] 100%") != std::string::npos);
    CHECK(owned_by(c, 1, "skew").at("b2") == 1);

    auto [vrc, verify] = moonmqctl(c.admin(2), "reassign verify --format json");
    INFO(verify);
    CHECK(vrc == 0);
    auto rows = json::parse(verify, nullptr, false).value("reassignments", json::array());
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]["state"] == "done");
    CHECK(rows[0]["to"] == "b2");
    CHECK(rows[0].value("reason", "") == "OPS-18");  // --reason, journaled with the move

    // --wait --format json: one document, the submission with the moves
    // as they ended.
    std::ofstream(plan_file) << R"({"version":1,"partitions":[{"topic":"skew","partition":0,"replicas":["b1"]}]})";
    auto [brc, back] = moonmqctl(c.admin(1), "reassign execute --plan " + plan_file
                                                 + " --wait --interval-ms 200 --format json");
    INFO(back);
    CHECK(brc == 0);
    auto doc = json::parse(back, nullptr, false);
    REQUIRE(doc.is_object());
    CHECK(doc["accepted"].size() == 1);
    REQUIRE(doc["reassignments"].size() == 1);
    CHECK(doc["reassignments"][0]["state"] == "done");
    CHECK(doc["reassignments"][0]["to"] == "b1");
  }
}

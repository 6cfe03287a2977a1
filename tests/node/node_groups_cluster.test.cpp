// Cluster-wide consumer groups on three real moonmq-node processes on
// loopback (issue 8, docs/groups.md "Cluster-wide groups"):
//  - every broker names the same coordinator for every group;
//  - members joined through different brokers share a topic's partitions
//    with no overlap and no gap, also for partitions that live on other
//    brokers and across a partition move;
//  - a commit through a broker that owns nothing lands on the owners and
//    reads back through any broker; an owner fences older generations;
//  - with the coordinator killed, membership through another broker gets
//    503 coordinator_unavailable.

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "cluster/group_placement.hpp"
#include "tests/node/move_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

const std::vector<std::string> broker_ids{"b1", "b2", "b3"};

/// Starts the three brokers at once.
void start_all(move_cluster& c) {
  for (size_t i = 0; i < 3; ++i)
    c.launch(i);
  for (size_t i = 0; i < 3; ++i)
    c.wait_ready(i);
}

/// The first group name "<prefix>-<n>" coordinated by broker `id`.
std::string group_on(const std::string& id, const std::string& prefix) {
  for (int n = 0; n < 1000; ++n) {
    auto g = prefix + "-" + std::to_string(n);
    if (moonmq::cluster::group_coordinator(g, broker_ids) == id)
      return g;
  }
  FAIL("no group name for " << id);
  return {};
}

size_t index_of(const std::string& id) {
  return static_cast<size_t>(std::find(broker_ids.begin(), broker_ids.end(), id) - broker_ids.begin());
}

/// Moves topic/partition from broker index `from` to broker `to` and waits
/// until the move is done.
void move_partition(move_cluster& c, size_t from, const std::string& topic, int partition, const std::string& to) {
  submit_move(c.admin(from), topic, partition, to);
  auto row = wait_move(c.admin(from), topic, partition, c.id(from), {"done"}, 30s);
  INFO(row.dump() << "\n" << c.all_logs().substr(0, 20000));
  REQUIRE(row.is_object());
  REQUIRE(row["state"] == "done");
}

/// A member's answer to a join or heartbeat (REQUIRE 200).
json member_call(uint16_t client, const std::string& target, const json& body = nullptr) {
  auto a = call(client, "POST", target, body.is_null() ? std::string{} : body.dump());
  INFO(target << " -> " << a.status << " " << a.raw);
  REQUIRE(a.status == 200);
  REQUIRE(a.body.is_object());
  return a.body;
}

/// REQUIREs that the assignments of `answers` (all at one generation)
/// cover partitions 0..n-1 of `topic` exactly once.
void require_exact_cover(const std::vector<json>& answers, const std::string& topic, int n) {
  std::multiset<int> seen;
  for (const auto& a : answers) {
    INFO(a.dump());
    REQUIRE(a["generation"] == answers.front()["generation"]);
    for (const auto& p : a["assignment"][topic])
      seen.insert(p.get<int>());
  }
  std::multiset<int> all;
  for (int p = 0; p < n; ++p)
    all.insert(p);
  CHECK(seen == all);
}

std::optional<int64_t> offset_in(const json& body, const std::string& topic, int partition) {
  if (!body.is_object() || !body["offsets"].is_array())
    return std::nullopt;
  for (const auto& o : body["offsets"])
    if (o["topic"] == topic && o["partition"] == partition)
      return o["offset"].get<int64_t>();
  return std::nullopt;
}

}  // namespace

TEST_CASE("every broker names the same coordinator for every group", "[node][groups][cluster]") {
  move_cluster c{broker_ids};
  start_all(c);
  std::set<std::string> used;
  for (int n = 0; n < 20; ++n) {
    auto g = "agree-" + std::to_string(n);
    auto expected = moonmq::cluster::group_coordinator(g, broker_ids);
    used.insert(expected);
    for (size_t i = 0; i < 3; ++i) {
      auto a = call(c.client(i), "GET", "/v1/groups/" + g + "/coordinator");
      INFO(c.id(i) << " " << g << " " << a.raw);
      REQUIRE(a.status == 200);
      CHECK(a.body["group"] == g);
      CHECK(a.body["coordinator"] == expected);
      CHECK(a.body["url"] == c.url(index_of(expected)));
    }
  }
  CHECK(used.size() == 3);  // 20 names spread over all three brokers
  CHECK(call(c.client(0), "GET", "/v1/groups/bad%20id/coordinator").status == 400);
}

TEST_CASE("members joined through different brokers share partitions across a move", "[node][groups][cluster]") {
  move_cluster c{broker_ids};
  start_all(c);
  create_topic(c.client(0), "orders", 6);
  move_partition(c, 0, "orders", 5, "b2");  // the topic now lives on b1 and b2; b3 holds nothing
  auto g = group_on("b3", "share");
  const auto members = "/v1/groups/" + g + "/members";

  auto a = member_call(c.client(0), members, json{{"topics", {"orders"}}});
  auto b = member_call(c.client(1), members, json{{"topics", {"orders"}}});
  CHECK(a["coordinator"] == "b3");
  CHECK(a["coordinator_url"] == c.url(2));
  CHECK(a["recommended_url"].is_string());
  auto ma = a["member_id"].get<std::string>();
  auto mb = b["member_id"].get<std::string>();
  a = member_call(c.client(0), members + "/" + ma + "/heartbeat");
  b = member_call(c.client(1), members + "/" + mb + "/heartbeat");
  require_exact_cover({a, b}, "orders", 6);

  // Partition 0 moves to b3, the coordinator; a third member joins there.
  move_partition(c, 0, "orders", 0, "b3");
  auto m3 = member_call(c.client(2), members, json{{"topics", {"orders"}}});
  a = member_call(c.client(1), members + "/" + ma + "/heartbeat");  // any broker reaches the coordinator
  b = member_call(c.client(0), members + "/" + mb + "/heartbeat");
  m3 = member_call(c.client(2), members + "/" + m3["member_id"].get<std::string>() + "/heartbeat");
  require_exact_cover({a, b, m3}, "orders", 6);

  // Leaving through a non-coordinator is forwarded too.
  auto left = call(c.client(0), "DELETE", members + "/" + mb);
  INFO(left.raw);
  CHECK(left.status == 200);
  a = member_call(c.client(0), members + "/" + ma + "/heartbeat");
  m3 = member_call(c.client(2), members + "/" + m3["member_id"].get<std::string>() + "/heartbeat");
  require_exact_cover({a, m3}, "orders", 6);
}

TEST_CASE("a join naming a topic no broker holds is unknown_topic", "[node][groups][cluster]") {
  move_cluster c{broker_ids};
  start_all(c);
  auto g = group_on("b2", "nowhere");
  auto a = call(c.client(0), "POST", "/v1/groups/" + g + "/members", json{{"topics", {"ghost"}}}.dump());
  INFO(a.raw);
  CHECK(a.status == 404);
  CHECK(a.body["error"] == "unknown_topic");
}

TEST_CASE("a commit through a non owner lands on the owner and reads back through any broker",
          "[node][groups][cluster]") {
  move_cluster c{broker_ids};
  start_all(c);
  create_topic(c.client(0), "orders", 4);
  move_partition(c, 0, "orders", 3, "b2");
  auto g = group_on("b1", "commit");  // coordinated by b1: b2 fences by the generations it has seen

  // Through b3, which holds no partition of the topic.
  json commit{{"offsets", {{{"topic", "orders"}, {"partition", 0}, {"offset", 5}},
                           {{"topic", "orders"}, {"partition", 3}, {"offset", 7}}}}};
  auto r = call(c.client(2), "POST", "/v1/groups/" + g + "/offsets", commit.dump());
  INFO(r.raw);
  REQUIRE(r.status == 200);

  for (size_t i = 0; i < 3; ++i) {
    auto got = call(c.client(i), "GET", "/v1/groups/" + g + "/offsets?topic=orders");
    INFO(c.id(i) << " " << got.raw);
    REQUIRE(got.status == 200);
    CHECK(offset_in(got.body, "orders", 0) == 5);
    CHECK(offset_in(got.body, "orders", 3) == 7);
    CHECK(got.body["offsets"].size() == 2);
  }
  // Each part is stored on its owner only.
  auto on_b1 = cluster_call(c.cluster_port(0), "GET", "/cluster/groups/" + g + "/offsets?topic=orders");
  auto on_b2 = cluster_call(c.cluster_port(1), "GET", "/cluster/groups/" + g + "/offsets?topic=orders");
  INFO(on_b1.raw << "\n" << on_b2.raw);
  CHECK(offset_in(on_b1.body, "orders", 0) == 5);
  CHECK(!offset_in(on_b1.body, "orders", 3));
  CHECK(offset_in(on_b2.body, "orders", 3) == 7);
  CHECK(!offset_in(on_b2.body, "orders", 0));
  CHECK(cluster_call(c.cluster_port(1), "GET", "/cluster/groups/" + g + "/offsets").status == 200);
  CHECK(call(c.cluster_port(1), "GET", "/cluster/groups/" + g + "/offsets").status == 401);

  // b2 is not the coordinator: it refuses a generation older than the newest it saw.
  json newer{{"offsets", {{{"topic", "orders"}, {"partition", 3}, {"offset", 9}}}}, {"generation", 4}};
  json older{{"offsets", {{{"topic", "orders"}, {"partition", 3}, {"offset", 8}}}}, {"generation", 2}};
  auto ok = call(c.client(0), "POST", "/v1/groups/" + g + "/offsets", newer.dump());
  INFO(ok.raw);
  CHECK(ok.status == 200);
  auto stale = call(c.client(2), "POST", "/v1/groups/" + g + "/offsets", older.dump());
  INFO(stale.raw);
  CHECK(stale.status == 409);
  CHECK(stale.body["error"] == "stale_generation");
  auto after = call(c.client(1), "GET", "/v1/groups/" + g + "/offsets?topic=orders");
  CHECK(offset_in(after.body, "orders", 3) == 9);
}

TEST_CASE("a join through another broker gets 503 while the coordinator is down", "[node][groups][cluster]") {
  move_cluster c{broker_ids};
  start_all(c);
  create_topic(c.client(0), "orders", 2);
  auto g = group_on("b3", "down");
  auto joined = member_call(c.client(0), "/v1/groups/" + g + "/members", json{{"topics", {"orders"}}});
  c.kill(2);
  auto a = call(c.client(0), "POST", "/v1/groups/" + g + "/members", json{{"topics", {"orders"}}}.dump());
  INFO(a.raw);
  CHECK(a.status == 503);
  CHECK(a.body["error"] == "coordinator_unavailable");
  CHECK(a.body["coordinator"] == "b3");
  CHECK(a.body["message"].is_string());
  auto hb = call(c.client(1), "POST", "/v1/groups/" + g + "/members/" + joined["member_id"].get<std::string>()
                                        + "/heartbeat");
  CHECK(hb.status == 503);
  CHECK(hb.body["error"] == "coordinator_unavailable");
  // Groups coordinated by live brokers keep working.
  auto live = group_on("b1", "down");
  member_call(c.client(1), "/v1/groups/" + live + "/members", json{{"topics", {"orders"}}});
}

TEST_CASE("moonmqctl consume with a group follows partition owners across brokers", "[node][groups][cluster][ctl]") {
  move_cluster c{broker_ids};
  start_all(c);
  create_topic(c.client(0), "work", 4);
  for (int p = 0; p < 4; ++p)
    fill(c.client(0), "work", p, 50, 50, 16, "w" + std::to_string(p));
  move_partition(c, 0, "work", 3, "b2");  // partition 3 now answers 421 on b1
  auto g = group_on("b3", "ctl");  // membership forwarded to b3

  temp_dir dir{"moonmq-ctl-groups"};
  auto out = dir.path() + "/out.txt";
  auto log = dir.path() + "/ctl.log";
  child_process p;
  auto cmd = program("moonmqctl") + " --url 127.0.0.1:" + std::to_string(c.client(0)) + " consume work -g " + g
             + " --format kv < /dev/null > " + out;
  REQUIRE(p.start("/bin/sh", {"-c", cmd}, log, dir.path()));
  auto rc = p.wait(60s);
  INFO(cmd << "\n" << read_text(log));
  REQUIRE(rc);
  CHECK(*rc == 0);
  std::set<std::string> keys;
  std::istringstream lines{read_text(out)};
  for (std::string line; std::getline(lines, line);)
    keys.insert(line.substr(0, line.find('\t')));
  CHECK(keys.size() == 200);
  CHECK(keys.count("w3-49") == 1);  // read from b2, the owner b1 named
  // The committed offsets landed with their owners and add up.
  auto got = call(c.client(2), "GET", "/v1/groups/" + g + "/offsets?topic=work");
  INFO(got.raw);
  REQUIRE(got.status == 200);
  for (int part = 0; part < 4; ++part)
    CHECK(offset_in(got.body, "work", part) == 50);
  auto on_b2 = cluster_call(c.cluster_port(1), "GET", "/cluster/groups/" + g + "/offsets?topic=work");
  CHECK(offset_in(on_b2.body, "work", 3) == 50);
}

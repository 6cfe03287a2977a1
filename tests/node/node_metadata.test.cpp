// Cluster metadata on three real moonmq-node processes with the metadata
// log (Cluster.Raft.Enabled; docs/metadata.md):
//  - a topic created on one broker is known to every broker: listed,
//    produced to and fetched through another;
//  - the balancer's settings change at runtime, cluster-wide, and survive a
//    restart (PATCH /admin/balancer, moonmqctl balancer);
//  - a killed broker is fenced and its partitions shown offline; restarted,
//    it is unfenced.

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <optional>
#include <sstream>

#include "tests/node/metadata_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;

// --- a topic created on one broker is visible on the others ----------------------------

TEST_CASE("a topic created on b1 is visible on b2", "[node][metadata][raft][scenario]") {
  // A topic is cluster metadata: once b1 answered its creation, every broker
  // lists it, takes produce for each of its partitions (forwarding it to the
  // owner) and sends fetches to the owner.
  constexpr int partitions = 3;
  move_cluster c{{"b1", "b2", "b3"}, raft_config()};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "seen", partitions);

  for (size_t via : {size_t{1}, size_t{2}}) {
    INFO("through " << c.id(via));
    json listed;
    bool visible = wait_until([&] {
      auto a = call(c.client(via), "GET", "/v1/topics");
      listed = a.body;
      if (a.status != 200 || !a.body.is_object() || !a.body["topics"].is_array())
        return false;
      for (auto& t : a.body["topics"])
        if (t.value("name", "") == "seen")
          return t.value("partitions", -1) == partitions;
      return false;
    }, 5s);
    INFO("GET /v1/topics: " << listed.dump());
    CHECK(visible);

    for (int p = 0; p < partitions; ++p) {
      std::map<int64_t, sent_record> acked;
      auto a = produce_one(c.client(via), "seen", p, "seen-" + c.id(via) + "-p" + std::to_string(p), acked, 2s);
      INFO("produce to seen/" << p << ": " << a.status << " " << a.raw);
      CHECK(a.status == 200);
      if (a.status != 200)
        continue;
      // Fetch through the same broker, following a 421 to the owner it names.
      auto target = "/v1/topics/seen/partitions/" + std::to_string(p) + "/records?offset="
                    + std::to_string(acked.begin()->first) + "&max_records=1";
      auto f = call(c.client(via), "GET", target);
      if (f.status == 421 && f.body.is_object() && f.body["owner"].is_string()) {
        auto owner = index_of(c, f.body["owner"].get<std::string>());
        INFO("421 names " << f.raw);
        REQUIRE(owner);
        f = call(c.client(*owner), "GET", target);
      }
      INFO("fetch of seen/" << p << " at " << acked.begin()->first << ": " << f.status << " " << f.raw);
      CHECK(f.status == 200);
      if (f.status == 200) {
        REQUIRE(f.body["records"].is_array());
        REQUIRE(f.body["records"].size() == 1);
        CHECK(f.body["records"][0]["offset"] == acked.begin()->first);
        CHECK(as_sent(f.body["records"][0]).key == acked.begin()->second.key);
        CHECK(as_sent(f.body["records"][0]).value == acked.begin()->second.value);
      }
    }
  }
}

TEST_CASE("a topic listed by a broker takes produce through it at once, before its local copy exists",
          "[node][metadata][raft][scenario]") {
  // The image, not the local copy, says a topic exists: b2 lists the topic
  // once it applied the entry and forwards produce to the owner straight
  // away, while its own 300 partition logs may still be opening.
  constexpr int partitions = 300;
  move_cluster c{{"b1", "b2", "b3"}, raft_config()};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "wide", partitions);
  auto created = clock_type::now();
  bool listed = wait_until([&] {
    auto a = call(c.client(1), "GET", "/v1/topics");
    return a.raw.find("\"wide\"") != std::string::npos;
  }, 5s);
  REQUIRE(listed);
  auto listed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - created).count();
  for (int p : {0, partitions / 2, partitions - 1}) {
    json body{{"records", {{{"key", "k"}, {"value", "v"}, {"partition", p}}}}};
    auto a = call(c.client(1), "POST", "/v1/topics/wide/records?acks=leader", body.dump());
    INFO("produce to wide/" << p << " through b2: " << a.raw);
    CHECK(a.status == 200);
  }
  WARN("b2 listed the topic " << listed_ms << " ms after the create returned on b1");
}

// --- balancer settings at runtime, cluster-wide ------------------------------------------

namespace {

json balancer_settings(move_cluster& c, size_t i) {
  auto a = call(c.admin(i), "GET", "/admin/balancer");
  return a.body.is_object() ? a.body.value("settings", json::object()) : json::object();
}

}  // namespace

TEST_CASE("a DryRun balance loop goes live at runtime on every broker through the metadata log, and stays live "
          "across a restart",
          "[node][metadata][raft][balancer][scenario]") {
  // Every broker runs the loop in DryRun (configured); only the Raft leader
  // plans. PATCH /admin/balancer at a follower commits the change; every
  // broker shows it, the leader's next passes move, a restarted broker reads
  // it back from the log.
  auto config = raft_config();
  for (auto& a : autobalance(true, 1))
    config.push_back(a);
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "skew", 6);  // all six on b1
  std::this_thread::sleep_for(3s);       // passes run, in DryRun: nothing moves
  CHECK(owned_by(c, 0, "skew") == std::map<std::string, int>{{"b1", 6}});
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(balancer_settings(c, i).value("DryRun", false) == true);
  }

  size_t follower = (elected->first + 1) % 3;
  // A goal switched off at runtime: every broker shows it, and the leader's
  // next pass plans nothing (PARTITION_COUNT is what wants the six spread).
  auto planned_since = [&](int64_t since_ms) -> std::optional<size_t> {
    auto a = call(c.admin(elected->first), "GET", "/admin/balancer");
    const auto& last = a.body.is_object() ? a.body["last_pass"] : json();
    if (!last.is_object() || last.value("started_ms", int64_t{0}) <= since_ms || !last.contains("plan"))
      return std::nullopt;
    return last["plan"].value("actions", json::array()).size();
  };
  auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
  };
  REQUIRE(wait_until([&] { return planned_since(0).value_or(0) > 0; }, 10s));
  auto off_at = now_ms();
  auto off = call(c.admin(follower), "PATCH", "/admin/balancer", R"({"Goals":{"PARTITION_COUNT":{"Enabled":false}}})");
  INFO(off.raw);
  REQUIRE(off.status == 200);
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    // A broker that has not applied the entry yet may not list the goal at
    // all: read without creating keys, and look again.
    CHECK(wait_until(
      [&] {
        auto goals = balancer_settings(c, i).value("Goals", json::object());
        auto goal = goals.is_object() ? goals.value("PARTITION_COUNT", json::object()) : json::object();
        return goal.is_object() && goal.value("Enabled", true) == false;
      },
      5s));
  }
  CHECK(wait_until([&] { return planned_since(off_at + 100) == std::optional<size_t>{0}; }, 10s));
  auto on_at = now_ms();
  REQUIRE(call(c.admin(follower), "PATCH", "/admin/balancer", R"({"Goals":null})").status == 200);
  CHECK(wait_until([&] { return planned_since(on_at).value_or(0) > 0; }, 10s));  // planned again

  // Bad patches change nothing.
  for (const char* bad : {R"({"DryRun":"no"})", R"({"Bogus":1})", R"({})", R"([1])", R"({"IntervalSeconds":0})",
                          "not json"}) {
    auto a = call(c.admin(follower), "PATCH", "/admin/balancer", bad);
    INFO(bad << " -> " << a.raw);
    CHECK(a.status == 400);
  }

  auto live = call(c.admin(follower), "PATCH", "/admin/balancer", R"({"DryRun":false,"MoveThrottleBytesPerSec":0})");
  INFO(live.raw << "\n" << log_tails(c));
  REQUIRE(live.status == 200);
  CHECK(live.body["settings"]["DryRun"] == false);
  // Every broker applies it from the log, none restarted.
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return balancer_settings(c, i).value("DryRun", true) == false; }, 5s));
  }
  // The leader's loop now moves partitions off b1.
  bool moved = wait_until(
    [&] {
      auto counts = owned_by(c, 0, "skew");
      return counts["b1"] <= 3;
    },
    30s);
  INFO("owners " << json(owned_by(c, 0, "skew")).dump());
  CHECK(moved);

  // A broker restarted reads the settings back from the log.
  auto other = (elected->first + 2) % 3;
  c.stop(other);
  c.restart(other);
  CHECK(wait_until([&] { return balancer_settings(c, other).value("DryRun", true) == false; }, 10s));
  auto s = balancer_settings(c, other);
  INFO(s.dump());
  CHECK(s.value("Enabled", false) == true);
  CHECK(s.value("MoveThrottleBytesPerSec", int64_t{-1}) == 0);

  // Back to DryRun and a throttle, cluster-wide, through the restarted
  // broker once it knows the leader again (until then a proposal there is
  // 503 no_controller); a null removes a setting (the configured value
  // applies again).
  REQUIRE(agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound));
  // Through moonmqctl, as an operator would.
  auto ctl = [&](const std::string& args) { return moonmqctl(c.admin(other), args); };
  auto [bad_rc, bad_out] = ctl("balancer set Bogus=1");
  INFO(bad_out);
  CHECK(bad_rc == 1);
  auto [set_rc, set_out] = ctl("balancer set DryRun=true MoveThrottleBytesPerSec=4096 --format json");
  INFO(set_out);
  REQUIRE(set_rc == 0);
  CHECK(json::parse(set_out, nullptr, false).value("MoveThrottleBytesPerSec", 0) == 4096);
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until(
      [&] {
        auto st = balancer_settings(c, i);
        return st.value("DryRun", false) == true && st.value("MoveThrottleBytesPerSec", 0) == 4096;
      },
      5s));
  }
  auto reset = call(c.admin(follower), "PATCH", "/admin/balancer", R"({"MoveThrottleBytesPerSec":null})");
  REQUIRE(reset.status == 200);
  CHECK_FALSE(reset.body["settings"].contains("MoveThrottleBytesPerSec"));
  // Applied on the broker asked when the PATCH answers; `balancer show`
  // asks `other`, which may apply it a moment later.
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return balancer_settings(c, i).value("MoveThrottleBytesPerSec", -1) == 0; }, 5s));
  }
  auto [show_rc, show_out] = ctl("balancer show --format json");
  INFO(show_out);
  CHECK(show_rc == 0);
  auto shown = json::parse(show_out, nullptr, false);
  CHECK(shown["settings"].value("DryRun", false) == true);
  CHECK(shown["settings"].value("MoveThrottleBytesPerSec", -1) == 0);
}

// --- liveness: a silent broker is fenced, its partitions offline; back, unfenced ---

namespace {

json admin_cluster(move_cluster& c, size_t i) { return call(c.admin(i), "GET", "/admin/cluster").body; }

}  // namespace

TEST_CASE("a killed broker is fenced within SessionTimeoutMs plus a heartbeat, its partitions show offline, and "
          "restarted it is unfenced",
          "[node][metadata][raft][scenario]") {
  constexpr int session_timeout_ms = 2000;
  move_cluster c{{"b1", "b2", "b3"}, raft_config({"Cluster.Raft.SessionTimeoutMs=" + std::to_string(session_timeout_ms)})};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  auto victim = (elected->first + 1) % 3;
  auto watcher = (elected->first + 2) % 3;
  create_topic(c.client(victim), "lv", 3);  // every partition owned by the victim
  std::this_thread::sleep_for(std::chrono::milliseconds(session_timeout_ms + 500));
  auto view = admin_cluster(c, watcher);
  INFO(view.dump());
  CHECK(view["offline_partitions"].empty());  // a live broker is never fenced

  c.kill(victim);
  auto t0 = clock_type::now();
  json seen;
  bool fenced = wait_until(
    [&] {
      seen = admin_cluster(c, watcher);
      if (!seen.is_object() || seen["offline_partitions"].size() != 3)
        return false;
      // The broker list and the offline partitions are read from the
      // node's view one after the other: wait for both to show the fence.
      for (const auto& b : seen["brokers"])
        if (b["id"] == c.id(victim))
          return b.value("fenced", false);
      return false;
    },
    std::chrono::milliseconds(session_timeout_ms + 100 + 3000));
  auto took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
  INFO(seen.dump() << "\n" << log_tails(c));
  REQUIRE(fenced);
  WARN(c.id(victim) << " fenced and its 3 partitions offline " << took_ms << " ms after the kill (SessionTimeoutMs "
                    << session_timeout_ms << ", heartbeat 100 ms)");
  CHECK(took_ms <= session_timeout_ms + 100 + 1500);  // + one heartbeat, + slack for a loaded machine
  CHECK(seen["fenced_brokers"] == json::array({c.id(victim)}));
  for (const auto& b : seen["brokers"])
    if (b["id"] == c.id(victim))
      CHECK(b["fenced"] == true);
  auto text = call(c.admin(elected->first), "GET", "/metrics").raw;
  CHECK(text.find("\nmoonmq_cluster_offline_partitions 3") != std::string::npos);
  // Produce for a fenced owner's partition fails; nothing is acknowledged.
  auto p = call(c.client(watcher), "POST", "/v1/topics/lv/records?acks=leader",
                R"({"records":[{"value":"x","partition":0}]})");
  INFO(p.raw);
  CHECK(p.status >= 500);

  c.restart(victim);
  bool back = wait_until(
    [&] {
      auto j = admin_cluster(c, watcher);
      return j.is_object() && j["offline_partitions"].empty() && j["fenced_brokers"].empty();
    },
    10s);
  CHECK(back);
  auto after = call(c.client(watcher), "POST", "/v1/topics/lv/records?acks=leader",
                    R"({"records":[{"value":"y","partition":0}]})");
  INFO(after.raw);
  CHECK(after.status == 200);
}

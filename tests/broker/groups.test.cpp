// Consumer groups through the client API of a real moonmq-node: joins and
// rebalances, heartbeats, leave, eviction after the session timeout, commit
// fencing by generation, committed offsets across a restart.

#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "tests/broker/broker_client.hpp"

using namespace moonmq::test;
using namespace moonmq::test::broker;
using namespace std::chrono_literals;

namespace {

constexpr int partitions = 7;

std::string members_of(const std::string& g) {
  return "/v1/groups/" + g + "/members";
}

answer join(uint16_t port, const std::string& g, const std::string& member = {}) {
  json body{{"topics", {"events"}}};
  if (!member.empty())
    body["member_id"] = member;
  return call(port, "POST", members_of(g), body);
}

answer beat(uint16_t port, const std::string& g, const std::string& member) {
  return call(port, "POST", members_of(g) + "/" + member + "/heartbeat");
}

std::vector<int> assigned(const answer& a) {
  INFO(a.raw);
  REQUIRE(a.status == 200);
  return a.body["assignment"]["events"].get<std::vector<int>>();
}

/// The assignments of all members cover every partition exactly once.
void check_partitioned(const std::vector<std::vector<int>>& parts) {
  std::multiset<int> all;
  for (const auto& p : parts) {
    CHECK(!p.empty());
    all.insert(p.begin(), p.end());
  }
  std::multiset<int> want;
  for (int p = 0; p < partitions; ++p)
    want.insert(p);
  CHECK(all == want);
}

answer commit(uint16_t port, const std::string& g, const json& offsets, std::optional<int64_t> gen,
              const std::string& member = {}) {
  json body{{"offsets", offsets}};
  if (gen)
    body["generation"] = *gen;
  if (!member.empty())
    body["member_id"] = member;
  return call(port, "POST", "/v1/groups/" + g + "/offsets", body);
}

json committed(uint16_t port, const std::string& g, const std::string& topic = {}) {
  auto a = call(port, "GET", "/v1/groups/" + g + "/offsets" + (topic.empty() ? "" : "?topic=" + topic));
  INFO(a.raw);
  REQUIRE(a.status == 200);
  return a.body["offsets"];
}

}  // namespace

TEST_CASE("group members rebalance on join and leave and commits are fenced by generation", "[broker][groups]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  auto port = n.client;
  create_topic(port, "events", partitions);
  create_topic(port, "other", 2);

  auto a = join(port, "g1");
  REQUIRE(a.status == 200);
  auto ma = a.body["member_id"].get<std::string>();
  auto gen1 = a.body["generation"].get<int64_t>();
  CHECK(assigned(a).size() == partitions);

  auto b = join(port, "g1");
  REQUIRE(b.status == 200);
  auto mb = b.body["member_id"].get<std::string>();
  CHECK(mb != ma);
  auto gen2 = b.body["generation"].get<int64_t>();
  CHECK(gen2 > gen1);
  // A's heartbeat reports the new generation and A's new share.
  auto hb = beat(port, "g1", ma);
  CHECK(hb.body["generation"] == gen2);
  CHECK(hb.body["member_id"] == ma);
  check_partitioned({assigned(hb), assigned(b)});
  // Re-joining with the same id and topics changes nothing.
  auto same = join(port, "g1", ma);
  CHECK(same.body["generation"] == gen2);
  CHECK(assigned(same) == assigned(hb));

  // Commits: the current generation is accepted, an old one is 409.
  json offs{{{"topic", "events"}, {"partition", 0}, {"offset", 42}}, {{"topic", "events"}, {"partition", 3}, {"offset", 7}}};
  auto stale = commit(port, "g1", offs, gen1, ma);
  INFO(stale.raw);
  CHECK(stale.status == 409);
  CHECK(stale.body["error"] == "illegal_generation");
  auto ok = commit(port, "g1", offs, gen2, ma);
  INFO(ok.raw);
  CHECK(ok.status == 200);
  CHECK(commit(port, "g1", offs, gen2, "m-nobody").status == 404);
  CHECK(commit(port, "g1", json{{{"topic", "events"}, {"partition", 7}, {"offset", 1}}}, gen2).status == 404);
  CHECK(commit(port, "g1", json{{{"topic", "nope"}, {"partition", 0}, {"offset", 1}}}, gen2).status == 404);
  CHECK(commit(port, "g1", json{{{"topic", "events"}, {"partition", 0}, {"offset", -1}}}, gen2).status == 400);
  CHECK(commit(port, "g1", json::array(), gen2).status == 400);
  // A plain commit (no generation, no member) on another topic.
  CHECK(commit(port, "g1", json{{{"topic", "other"}, {"partition", 1}, {"offset", 5}}}, std::nullopt).status == 200);
  auto events = committed(port, "g1", "events");
  CHECK(events == json{{{"topic", "events"}, {"partition", 0}, {"offset", 42}, {"metadata", ""}},
                       {{"topic", "events"}, {"partition", 3}, {"offset", 7}, {"metadata", ""}}});
  CHECK(committed(port, "g1").size() == 3);

  // B leaves: a rebalance gives A everything.
  CHECK(call(port, "DELETE", members_of("g1") + "/" + mb).status == 200);
  auto after = beat(port, "g1", ma);
  auto gen3 = after.body["generation"].get<int64_t>();
  CHECK(gen3 > gen2);
  CHECK(assigned(after).size() == partitions);
  CHECK(beat(port, "g1", mb).status == 404);
  CHECK(call(port, "DELETE", members_of("g1") + "/" + mb).status == 404);
  CHECK(commit(port, "g1", offs, gen2, ma).status == 409);

  // Errors.
  CHECK(call(port, "POST", members_of("g1"), json{{"topics", {"nope"}}}).status == 404);
  CHECK(call(port, "POST", members_of("g1"), json{{"topic", "events"}}).status == 400);
  CHECK(call(port, "POST", members_of("g1"), std::string("{")).status == 400);
  CHECK(join(port, "g1", "m-unknown").status == 404);
  CHECK(join(port, "bad%20id").status == 400);
  CHECK(beat(port, "never", "m-1").status == 404);
  CHECK(call(port, "GET", "/v1/groups/never/offsets").status == 404);
  n.stop();
}

TEST_CASE("a member that stops heartbeating is evicted after the session timeout", "[broker][groups]") {
  temp_dir dir;
  auto n = running_node::start(dir, {"Groups.SessionTimeoutMs=1000"});
  auto port = n.client;
  create_topic(port, "events", partitions);
  auto a = join(port, "g2");
  auto ma = a.body["member_id"].get<std::string>();
  auto b = join(port, "g2");
  auto mb = b.body["member_id"].get<std::string>();
  auto gen = b.body["generation"].get<int64_t>();
  check_partitioned({assigned(beat(port, "g2", ma)), assigned(b)});
  // A keeps its session; B goes silent.
  auto t0 = std::chrono::steady_clock::now();
  answer last;
  bool evicted = wait_until(
    [&] {
      last = beat(port, "g2", ma);
      return last.status == 200 && last.body["generation"].get<int64_t>() > gen;
    },
    6s);
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(evicted);
  CHECK(took >= 900ms);
  CHECK(took < 4s);
  CHECK(assigned(last).size() == partitions);
  CHECK(beat(port, "g2", mb).status == 404);
  // A still holds its session well past the timeout while it heartbeats.
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(300ms);
    CHECK(beat(port, "g2", ma).status == 200);
  }
  // The evicted member rejoins as a new member.
  auto back = join(port, "g2");
  CHECK(back.status == 200);
  CHECK(back.body["generation"].get<int64_t>() > last.body["generation"].get<int64_t>());
  n.stop();
}

TEST_CASE("committed offsets survive a restart and members must rejoin", "[broker][groups]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "events", partitions);
  auto a = join(n.client, "g3");
  auto ma = a.body["member_id"].get<std::string>();
  auto gen = a.body["generation"].get<int64_t>();
  json offs = json::array();
  // Each offset with its metadata (Kafka's committed metadata).
  for (int p = 0; p < partitions; ++p)
    offs.push_back(json{{"topic", "events"}, {"partition", p}, {"offset", 100 + p}, {"metadata", "m" + std::to_string(p)}});
  REQUIRE(commit(n.client, "g3", offs, gen, ma).status == 200);
  // A later commit of one partition replaces only that partition, metadata
  // included (none given: "").
  REQUIRE(commit(n.client, "g3", json{{{"topic", "events"}, {"partition", 2}, {"offset", 5}}}, gen, ma).status == 200);
  offs[2]["offset"] = 5;
  offs[2]["metadata"] = "";
  CHECK(committed(n.client, "g3") == offs);
  n.stop();

  auto again = running_node::start(dir);
  CHECK(committed(again.client, "g3") == offs);
  CHECK(beat(again.client, "g3", ma).status == 404);
  auto re = join(again.client, "g3");
  REQUIRE(re.status == 200);
  auto gen_after = re.body["generation"].get<int64_t>();
  auto ahead = commit(again.client, "g3", json{{{"topic", "events"}, {"partition", 0}, {"offset", 1}}}, gen_after + 1);
  CHECK(ahead.status == 409);
  CHECK(commit(again.client, "g3", json{{{"topic", "events"}, {"partition", 0}, {"offset", 1}}}, gen_after,
               re.body["member_id"].get<std::string>())
          .status == 200);
  offs[0]["offset"] = 1;
  offs[0]["metadata"] = "";  // a commit replaces the metadata with its own
  CHECK(committed(again.client, "g3") == offs);
  again.stop();
}

#include <catch2/catch.hpp>

#include <regex>

#include "groups/group_state.hpp"

using namespace moonmq::groups;
using parts = std::vector<int32_t>;

namespace {

group_state make_group(partition_counts counts = {{"orders", 7}, {"payments", 2}}, int64_t session_ms = 10'000) {
  group_config cfg;
  cfg.session_timeout_ms = session_ms;
  cfg.id_seed = 42;
  return group_state{"g", cfg, lookup_from(std::move(counts))};
}

std::string join_new(group_state& g, std::vector<std::string> topics, int64_t now) {
  auto r = g.join(std::nullopt, topics, now);
  REQUIRE(r.ok());
  return r->member_id;
}

}  // namespace

TEST_CASE("a new group is empty at generation 0", "[groups]") {
  auto g = make_group();
  CHECK(g.phase() == group_phase::empty);
  CHECK(g.current_generation() == generation{0});
  CHECK(g.member_count() == 0);
}

TEST_CASE("the first join creates a member that gets every partition at generation 1", "[groups]") {
  auto g = make_group();
  auto r = g.join(std::nullopt, {"orders"}, 1000);
  REQUIRE(r.ok());
  CHECK(std::regex_match(r->member_id, std::regex{"m-1-[0-9a-f]{16}"}));
  CHECK(r->gen == generation{1});
  CHECK(r->assigned.at("orders") == parts{0, 1, 2, 3, 4, 5, 6});
  CHECK(g.phase() == group_phase::stable);
}

TEST_CASE("generated member ids are deterministic for a seed and unique per join", "[groups]") {
  auto a = make_group();
  auto b = make_group();
  auto a1 = join_new(a, {"orders"}, 0);
  auto a2 = join_new(a, {"orders"}, 0);
  CHECK(a1 == join_new(b, {"orders"}, 0));
  CHECK(a1 != a2);
  CHECK(a2.rfind("m-2-", 0) == 0);
  group_state other{"g", group_config{10'000, 7}, lookup_from({{"orders", 1}})};
  CHECK(join_new(other, {"orders"}, 0) != a1);
}

TEST_CASE("each new member bumps the generation and the range assignment is recomputed", "[groups]") {
  auto g = make_group();
  auto m1 = join_new(g, {"orders"}, 0);
  auto m2 = join_new(g, {"orders"}, 0);
  auto m3 = join_new(g, {"orders"}, 0);
  CHECK(g.current_generation() == generation{3});
  // m-1-..., m-2-..., m-3-... sort in join order: 3, 2, 2.
  CHECK(g.heartbeat(m1, 1)->assigned.at("orders") == parts{0, 1, 2});
  CHECK(g.heartbeat(m2, 1)->assigned.at("orders") == parts{3, 4});
  CHECK(g.heartbeat(m3, 1)->assigned.at("orders") == parts{5, 6});
}

TEST_CASE("members subscribed to different topics share only their own topics", "[groups]") {
  auto g = make_group();
  auto m1 = join_new(g, {"orders", "payments"}, 0);
  auto m2 = join_new(g, {"payments"}, 0);
  auto a1 = g.heartbeat(m1, 0)->assigned;
  auto a2 = g.heartbeat(m2, 0)->assigned;
  CHECK(a1.at("orders") == parts{0, 1, 2, 3, 4, 5, 6});
  CHECK(a1.at("payments") == parts{0});
  CHECK(a2.at("payments") == parts{1});
  CHECK(a2.count("orders") == 0);
}

TEST_CASE("a rejoin with the same topics keeps the generation, a changed subscription bumps it", "[groups]") {
  auto g = make_group();
  auto m1 = join_new(g, {"orders"}, 0);
  auto same = g.join(m1, {"orders", "orders"}, 5);
  REQUIRE(same.ok());
  CHECK(same->member_id == m1);
  CHECK(same->gen == generation{1});
  auto changed = g.join(m1, {"orders", "payments"}, 6);
  REQUIRE(changed.ok());
  CHECK(changed->gen == generation{2});
  CHECK(changed->assigned.at("payments") == parts{0, 1});
  CHECK(g.last_rebalance() == rebalance_reason::subscription_changed);
}

TEST_CASE("heartbeat answers the current generation and assignment after a rebalance", "[groups]") {
  auto g = make_group();
  auto m1 = join_new(g, {"orders"}, 0);
  auto before = g.heartbeat(m1, 100);
  REQUIRE(before.ok());
  CHECK(before->gen == generation{1});
  join_new(g, {"orders"}, 200);
  auto after = g.heartbeat(m1, 300);
  REQUIRE(after.ok());
  CHECK(after->gen == generation{2});
  CHECK(after->assigned.at("orders") == parts{0, 1, 2, 3});
}

TEST_CASE("leave bumps the generation and hands the partitions to the remaining members", "[groups]") {
  auto g = make_group();
  auto m1 = join_new(g, {"orders"}, 0);
  auto m2 = join_new(g, {"orders"}, 0);
  REQUIRE(g.leave(m1).ok());
  CHECK(g.current_generation() == generation{3});
  CHECK(g.heartbeat(m2, 1)->assigned.at("orders") == parts{0, 1, 2, 3, 4, 5, 6});
  REQUIRE(g.leave(m2).ok());
  CHECK(g.phase() == group_phase::empty);
  CHECK(g.current_generation() == generation{4});
}

TEST_CASE("unknown members get unknown_member on heartbeat, leave and rejoin", "[groups]") {
  auto g = make_group();
  auto hb = g.heartbeat("m-9-0000000000000000", 0);
  REQUIRE_FALSE(hb.ok());
  CHECK(hb.err().code == errc::unknown_member);
  CHECK(g.leave("nobody").err().code == errc::unknown_member);
  auto rejoin = g.join(std::string{"nobody"}, {"orders"}, 0);
  REQUIRE_FALSE(rejoin.ok());
  CHECK(rejoin.err().code == errc::unknown_member);
  auto m1 = join_new(g, {"orders"}, 0);
  REQUIRE(g.leave(m1).ok());
  CHECK(g.heartbeat(m1, 1).err().code == errc::unknown_member);
  CHECK(g.leave(m1).err().code == errc::unknown_member);
}

TEST_CASE("a join naming an unknown topic fails with unknown_topic and changes nothing", "[groups]") {
  auto g = make_group();
  auto m1 = join_new(g, {"orders"}, 0);
  auto r = g.join(std::nullopt, {"orders", "nope"}, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.err().code == errc::unknown_topic);
  CHECK(r.err().message.find("nope") != std::string::npos);
  CHECK(g.member_count() == 1);
  CHECK(g.current_generation() == generation{1});
  CHECK(g.join(m1, {"nope"}, 1).err().code == errc::unknown_topic);
  CHECK(g.heartbeat(m1, 2)->assigned.count("orders") == 1);
}

TEST_CASE("a join without topics is invalid", "[groups]") {
  auto g = make_group();
  CHECK(g.join(std::nullopt, {}, 0).err().code == errc::invalid_argument);
  CHECK(g.join(std::nullopt, {""}, 0).err().code == errc::invalid_argument);
}

TEST_CASE("expire evicts members whose session ran out and rebalances once", "[groups]") {
  auto g = make_group({{"orders", 7}}, 10'000);
  auto m1 = join_new(g, {"orders"}, 0);
  auto m2 = join_new(g, {"orders"}, 0);
  auto m3 = join_new(g, {"orders"}, 0);
  REQUIRE(g.heartbeat(m2, 5'000).ok());
  CHECK(g.expire(9'999).empty());
  CHECK(g.current_generation() == generation{3});
  auto evicted = g.expire(10'000);  // deadline = last_seen + session timeout
  CHECK(evicted == std::vector<std::string>{m1, m3});
  CHECK(g.current_generation() == generation{4});
  CHECK(g.last_rebalance() == rebalance_reason::member_evicted);
  CHECK(g.heartbeat(m1, 10'001).err().code == errc::unknown_member);
  CHECK(g.heartbeat(m2, 10'001)->assigned.at("orders") == parts{0, 1, 2, 3, 4, 5, 6});
  CHECK(g.expire(14'999).empty());
  CHECK(g.expire(20'001) == std::vector<std::string>{m2});
  CHECK(g.phase() == group_phase::empty);
}

TEST_CASE("the session timeout is configurable", "[groups]") {
  auto g = make_group({{"orders", 1}}, 500);
  auto m1 = join_new(g, {"orders"}, 1'000);
  CHECK(g.expire(1'499).empty());
  CHECK(g.expire(1'500) == std::vector<std::string>{m1});
}

TEST_CASE("a grown topic rebalances subscribed groups only", "[groups]") {
  auto g = make_group({{"orders", 2}, {"payments", 2}});
  auto m1 = join_new(g, {"orders"}, 0);
  auto m2 = join_new(g, {"orders"}, 0);
  auto unrelated = g.set_partition_count("payments", 8);
  REQUIRE(unrelated.ok());
  CHECK_FALSE(*unrelated);
  auto same = g.set_partition_count("orders", 2);
  CHECK_FALSE(*same);
  auto grown = g.set_partition_count("orders", 5);
  REQUIRE(grown.ok());
  CHECK(*grown);
  CHECK(g.current_generation() == generation{3});
  CHECK(g.last_rebalance() == rebalance_reason::partitions_changed);
  CHECK(g.heartbeat(m1, 0)->assigned.at("orders") == parts{0, 1, 2});
  CHECK(g.heartbeat(m2, 0)->assigned.at("orders") == parts{3, 4});
  CHECK(g.set_partition_count("orders", 0).err().code == errc::invalid_argument);
}

TEST_CASE("a join sees a partition count from the lookup that changed since the last rebalance", "[groups]") {
  partition_counts counts{{"orders", 2}};
  group_state g{"g", group_config{}, [&counts](const std::string& t) -> std::optional<int32_t> {
                  auto it = counts.find(t);
                  return it == counts.end() ? std::nullopt : std::optional<int32_t>{it->second};
                }};
  auto m1 = join_new(g, {"orders"}, 0);
  counts["orders"] = 3;
  auto r = g.join(m1, {"orders"}, 1);
  REQUIRE(r.ok());
  CHECK(r->gen == generation{2});
  CHECK(r->assigned.at("orders") == parts{0, 1, 2});
}

TEST_CASE("check_commit fences stale generations and unknown members", "[groups]") {
  auto g = make_group();
  auto m1 = join_new(g, {"orders"}, 0);
  join_new(g, {"orders"}, 0);
  CHECK(g.check_commit(std::nullopt, std::nullopt).ok());
  CHECK(g.check_commit(m1, generation{2}).ok());
  CHECK(g.check_commit(m1, generation{1}).err().code == errc::illegal_generation);
  CHECK(g.check_commit(std::string{"ghost"}, generation{2}).err().code == errc::unknown_member);
}

TEST_CASE("describe lists members with subscriptions, last heartbeat and assignment", "[groups]") {
  auto g = make_group();
  auto m1 = join_new(g, {"payments"}, 10);
  REQUIRE(g.heartbeat(m1, 25).ok());
  auto d = g.describe();
  REQUIRE(d.size() == 1);
  CHECK(d[0].member_id == m1);
  CHECK(d[0].topics == std::set<std::string>{"payments"});
  CHECK(d[0].last_seen_ms == 25);
  CHECK(d[0].assigned.at("payments") == parts{0, 1});
}

// The Kafka groups' membership (groups/kafka_membership.hpp: Kafka's
// JoinGroup/SyncGroup protocol, pure, on a clock the test holds) and the
// Kafka listener's kafka_producer_table (idempotent producer sequences).

#include <catch2/catch.hpp>

#include <optional>

#include "api/kafka_groups.hpp"
#include "groups/kafka_membership.hpp"

using namespace moonmq;
using namespace moonmq::transport;
namespace ec = kafka::error_code;

namespace {

kafka::join_group_request join_req(const std::string& member, const std::string& protocol = "range") {
  kafka::join_group_request r;
  r.group_id = "g";
  r.session_timeout_ms = 10000;
  r.rebalance_timeout_ms = 30000;
  r.member_id = member;
  r.protocol_type = "consumer";
  r.protocols = {{protocol, "meta-" + protocol}};
  return r;
}

/// A JoinGroup v5 of the static member `instance` (KIP-345).
kafka::join_group_request static_req(const std::string& member, const std::string& instance,
                                     const std::string& metadata = "meta-range") {
  auto r = join_req(member);
  r.group_instance_id = instance;
  r.protocols = {{"range", metadata}};
  return r;
}

kafka::sync_group_request sync_req(const std::string& member, int32_t gen,
                                   std::vector<kafka::sync_group_assignment> a = {}) {
  kafka::sync_group_request r;
  r.group_id = "g";
  r.generation_id = gen;
  r.member_id = member;
  r.assignments = std::move(a);
  return r;
}

kafka::heartbeat_request beat(const std::string& member, int32_t gen,
                              std::optional<std::string> instance = std::nullopt) {
  kafka::heartbeat_request r;
  r.group_id = "g";
  r.generation_id = gen;
  r.member_id = member;
  r.group_instance_id = std::move(instance);
  return r;
}

/// The membership as the group actor drives it: the replies a call
/// completes run when it returns. Requests are at `now` (fixed unless a
/// test moves it); tick() runs at the time it is given.
struct table {
  explicit table(int64_t initial_delay_ms = 0) : m(initial_delay_ms) {}

  void join(const kafka::join_group_request& r, const std::string& client_id, int16_t version,
            groups::kafka_membership::join_reply reply, const std::string& host = {}) {
    groups::kafka_membership::actions out;
    m.join(r, client_id, version, host, std::move(reply), now, out);
    run(out);
  }
  void sync(const kafka::sync_group_request& r, groups::kafka_membership::sync_reply reply) {
    groups::kafka_membership::actions out;
    m.sync(r, std::move(reply), now, out);
    run(out);
  }
  int16_t heartbeat(const kafka::heartbeat_request& r) { return m.heartbeat(r, now); }
  int16_t leave(const std::string& group, const std::string& member,
                const std::optional<std::string>& instance = std::nullopt) {
    groups::kafka_membership::actions out;
    auto code = m.leave(group, member, instance, now, out);
    run(out);
    return code;
  }
  int16_t check_commit(const std::string& group, const std::string& member, const std::optional<std::string>& instance,
                       int32_t generation) const {
    return m.check_commit({group, member, instance, generation});
  }
  void tick(int64_t at) {
    groups::kafka_membership::actions out;
    m.tick(at, out);
    run(out);
  }
  std::vector<kafka::listed_group> list() const { return m.list(); }
  kafka::described_group describe_group(const std::string& id) const { return m.describe_group(id); }
  groups::kafka_subscription subscribed(const std::string& group) const { return m.subscribed(group); }
  int16_t remove_if_empty(const std::string& group, bool& existed) { return m.remove_if_empty(group, existed); }

  static void run(groups::kafka_membership::actions& out) {
    for (auto& f : out)
      f();
  }
  groups::kafka_membership m;
  int64_t now = 1'000'000;
};

using join_answer = std::optional<kafka::join_group_response>;

/// Static members "a" (the leader) and "b" of a Stable group "g" in
/// generation 2, assigned "pa" and "pb".
std::pair<kafka::join_group_response, kafka::join_group_response> two_static_members(table& t) {
  join_answer a, a2, b;
  t.join(static_req("", "a"), "ca", 5, [&](kafka::join_group_response r) { a = r; });
  REQUIRE(a);
  t.join(static_req("", "b"), "cb", 5, [&](kafka::join_group_response r) { b = r; });
  t.join(static_req(a->member_id, "a"), "ca", 5, [&](kafka::join_group_response r) { a2 = r; });
  REQUIRE(a2);
  REQUIRE(b);
  REQUIRE(a2->generation_id == 2);
  REQUIRE(a2->leader == a->member_id);
  REQUIRE(a2->members.size() == 2);
  for (const auto& m : a2->members)
    CHECK(m.group_instance_id == (m.member_id == a->member_id ? "a" : "b"));
  std::optional<kafka::sync_group_response> sa, sb;
  t.sync(sync_req(b->member_id, 2), [&](kafka::sync_group_response r) { sb = r; });
  t.sync(sync_req(a->member_id, 2, {{a->member_id, "pa"}, {b->member_id, "pb"}}),
         [&](kafka::sync_group_response r) { sa = r; });
  REQUIRE(sa);
  REQUIRE(sb);
  REQUIRE(sb->assignment == "pb");
  REQUIRE(t.describe_group("g").group_state == "Stable");
  return {*a2, *b};
}

}  // namespace

TEST_CASE("kafka groups: one member joins, leads and syncs its own assignment", "[kafka_state]") {
  table t;
  std::optional<kafka::join_group_response> j;
  t.join(join_req(""), "c1", 5, [&](kafka::join_group_response r) { j = r; });
  REQUIRE(j);
  CHECK(j->error_code == 0);
  CHECK(j->generation_id == 1);
  CHECK(j->leader == j->member_id);
  REQUIRE(j->members.size() == 1);
  CHECK(j->members[0].metadata == "meta-range");
  std::optional<kafka::sync_group_response> s;
  t.sync(sync_req(j->member_id, 1, {{j->member_id, "A"}}), [&](kafka::sync_group_response r) { s = r; });
  REQUIRE(s);
  CHECK(s->error_code == 0);
  CHECK(s->assignment == "A");
  CHECK(t.heartbeat(beat(j->member_id, 1)) == 0);
  CHECK(t.heartbeat(beat(j->member_id, 7)) == ec::illegal_generation);
  CHECK(t.heartbeat(beat("nobody", 1)) == ec::unknown_member_id);
  CHECK(t.check_commit("g", j->member_id, std::nullopt, 1) == 0);
  CHECK(t.check_commit("g", "", std::nullopt, -1) == 0);
  CHECK(t.check_commit("g", j->member_id, std::nullopt, 0) == ec::illegal_generation);
}

TEST_CASE("kafka groups: a second member triggers a rebalance, only the leader gets the members", "[kafka_state]") {
  table t;
  std::optional<kafka::join_group_response> a;
  t.join(join_req(""), "c1", 5, [&](kafka::join_group_response r) { a = r; });
  REQUIRE(a);
  std::optional<kafka::sync_group_response> sa;
  t.sync(sync_req(a->member_id, 1, {{a->member_id, "all"}}), [&](kafka::sync_group_response r) { sa = r; });
  std::optional<kafka::join_group_response> b;
  t.join(join_req(""), "c2", 5, [&](kafka::join_group_response r) { b = r; });
  CHECK(!b);  // parked until the first member rejoins
  CHECK(t.heartbeat(beat(a->member_id, 1)) == ec::rebalance_in_progress);
  std::optional<kafka::join_group_response> a2;
  t.join(join_req(a->member_id), "c1", 5, [&](kafka::join_group_response r) { a2 = r; });
  REQUIRE(a2);
  REQUIRE(b);
  CHECK(a2->generation_id == 2);
  CHECK(b->generation_id == 2);
  CHECK(a2->leader == a->member_id);
  CHECK(a2->members.size() == 2);
  CHECK(b->members.empty());
  // The follower's SyncGroup waits for the leader's assignments.
  std::optional<kafka::sync_group_response> sb;
  t.sync(sync_req(b->member_id, 2), [&](kafka::sync_group_response r) { sb = r; });
  CHECK(!sb);
  std::optional<kafka::sync_group_response> sa2;
  t.sync(sync_req(a->member_id, 2, {{a->member_id, "p0"}, {b->member_id, "p1"}}),
         [&](kafka::sync_group_response r) { sa2 = r; });
  REQUIRE(sb);
  REQUIRE(sa2);
  CHECK(sa2->assignment == "p0");
  CHECK(sb->assignment == "p1");
  // Leaving rebalances the rest; an incompatible protocol is refused.
  CHECK(t.leave("g", b->member_id) == 0);
  CHECK(t.heartbeat(beat(a->member_id, 2)) == ec::rebalance_in_progress);
  std::optional<kafka::join_group_response> c;
  t.join(join_req("", "other"), "c3", 5, [&](kafka::join_group_response r) { c = r; });
  REQUIRE(c);
  CHECK(c->error_code == ec::inconsistent_group_protocol);
}

TEST_CASE("kafka groups: a silent member is expired and the round closes without it", "[kafka_state]") {
  table t;
  std::optional<kafka::join_group_response> a;
  t.join(join_req(""), "c1", 5, [&](kafka::join_group_response r) { a = r; });
  REQUIRE(a);
  t.sync(sync_req(a->member_id, 1, {{a->member_id, "x"}}), [](kafka::sync_group_response) {});
  std::optional<kafka::join_group_response> b;
  t.join(join_req(""), "c2", 5, [&](kafka::join_group_response r) { b = r; });
  CHECK(!b);
  // a never rejoins: after its session timeout it is removed and b's join completes.
  t.tick(t.now + 11000);
  REQUIRE(b);
  CHECK(b->error_code == 0);
  CHECK(b->leader == b->member_id);
  CHECK(t.heartbeat(beat(a->member_id, 1)) == ec::unknown_member_id);
}

TEST_CASE("kafka groups: ListGroups and DescribeGroups show each group as Kafka's summary does", "[kafka_state]") {
  table t;
  CHECK(t.list().empty());
  // A refused join (a member id the group never gave out) leaves no group.
  std::optional<kafka::join_group_response> stale;
  t.join(join_req("old-member"), "c0", 5, [&](kafka::join_group_response r) { stale = r; });
  REQUIRE(stale);
  CHECK(stale->error_code == ec::unknown_member_id);
  CHECK(t.list().empty());
  auto dead = t.describe_group("g");
  CHECK(dead.error_code == 0);
  CHECK(dead.group_state == "Dead");
  CHECK(dead.members.empty());

  std::optional<kafka::join_group_response> a;
  t.join(join_req(""), "c1", 5, [&](kafka::join_group_response r) { a = r; }, "/10.0.0.1");
  REQUIRE(a);
  // Joined, not synced: CompletingRebalance, members without metadata or
  // assignment, no protocol (only a Stable group shows them).
  auto completing = t.describe_group("g");
  CHECK(completing.group_state == "CompletingRebalance");
  CHECK(completing.protocol_type == "consumer");
  CHECK(completing.protocol_data.empty());
  REQUIRE(completing.members.size() == 1);
  CHECK(completing.members[0].member_id == a->member_id);
  CHECK(completing.members[0].client_id == "c1");
  CHECK(completing.members[0].client_host == "/10.0.0.1");
  CHECK(completing.members[0].member_metadata.empty());

  std::optional<kafka::sync_group_response> s;
  t.sync(sync_req(a->member_id, 1, {{a->member_id, "A"}}), [&](kafka::sync_group_response r) { s = r; });
  REQUIRE(s);
  auto stable = t.describe_group("g");
  CHECK(stable.group_state == "Stable");
  CHECK(stable.protocol_data == "range");
  REQUIRE(stable.members.size() == 1);
  CHECK(stable.members[0].member_metadata == "meta-range");
  CHECK(stable.members[0].member_assignment == "A");
  auto listed = t.list();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].group_id == "g");
  CHECK(listed[0].protocol_type == "consumer");

  // DeleteGroups is refused while a member is in the group.
  bool existed = false;
  CHECK(t.remove_if_empty("g", existed) == ec::non_empty_group);
  CHECK(existed);
  CHECK(t.list().size() == 1);

  // The last member leaves: the group stays, Empty, without members, until
  // it is deleted.
  CHECK(t.leave("g", a->member_id) == 0);
  auto empty = t.describe_group("g");
  CHECK(empty.group_state == "Empty");
  CHECK(empty.members.empty());
  CHECK(t.list().size() == 1);
  CHECK(t.remove_if_empty("g", existed) == 0);
  CHECK(existed);
  CHECK(t.list().empty());
  CHECK(t.describe_group("g").group_state == "Dead");
  CHECK(t.remove_if_empty("g", existed) == 0);
  CHECK_FALSE(existed);
}

TEST_CASE("kafka groups: the first round of an empty group waits the initial rebalance delay for more members",
          "[kafka_state]") {
  table t{3000};
  const auto t0 = t.now;
  std::optional<kafka::join_group_response> a, b;
  t.join(join_req(""), "c1", 5, [&](kafka::join_group_response r) { a = r; });
  t.tick(t0 + 1000);
  CHECK(!a);  // still waiting for others
  t.join(join_req(""), "c2", 5, [&](kafka::join_group_response r) { b = r; });
  CHECK(!a);  // every member joined, but the delay has not passed
  CHECK(!b);
  t.tick(t0 + 2900);
  CHECK(!a);
  t.tick(t0 + 3100);
  REQUIRE(a);
  REQUIRE(b);
  // Both start in the same, first generation: no rebalance follows.
  CHECK(a->error_code == 0);
  CHECK(a->generation_id == 1);
  CHECK(b->generation_id == 1);
  CHECK(a->leader == a->member_id);
  CHECK(a->members.size() == 2);

  // Later rounds of a group with members do not wait: a third member's
  // round closes as soon as every member rejoined.
  std::optional<kafka::join_group_response> c, a2, b2;
  t.join(join_req(""), "c3", 5, [&](kafka::join_group_response r) { c = r; });
  t.join(join_req(a->member_id), "c1", 5, [&](kafka::join_group_response r) { a2 = r; });
  t.join(join_req(b->member_id), "c2", 5, [&](kafka::join_group_response r) { b2 = r; });
  REQUIRE(c);
  CHECK(c->generation_id == 2);
}

TEST_CASE("kafka groups: a static member rejoining without its member id takes its assignment over, no rebalance",
          "[kafka_state][static]") {
  table t;
  auto [a, b] = two_static_members(t);
  // "a" restarts: a JoinGroup with no member id and its instance id.
  join_answer a2;
  t.join(static_req("", "a"), "ca", 5, [&](kafka::join_group_response r) { a2 = r; });
  REQUIRE(a2);  // answered at once, no round
  CHECK(a2->error_code == 0);
  CHECK(a2->generation_id == 2);
  CHECK(a2->member_id != a.member_id);
  CHECK(a2->protocol_name == "range");
  // It was the leader: the answer names the old leader id, so it follows
  // and gets no member list (Kafka's rule for a stable group).
  CHECK(a2->leader == a.member_id);
  CHECK(a2->members.empty());
  CHECK(t.heartbeat(beat(b.member_id, 2)) == 0);  // no rebalance for b
  CHECK(t.describe_group("g").group_state == "Stable");
  std::optional<kafka::sync_group_response> s;
  t.sync(sync_req(a2->member_id, 2), [&](kafka::sync_group_response r) { s = r; });
  REQUIRE(s);
  CHECK(s->error_code == 0);
  CHECK(s->assignment == "pa");
  // The old member id is fenced wherever it names the instance, unknown
  // where it does not.
  CHECK(t.heartbeat(beat(a.member_id, 2, "a")) == ec::fenced_instance_id);
  CHECK(t.heartbeat(beat(a.member_id, 2)) == ec::unknown_member_id);
  CHECK(t.heartbeat(beat(a2->member_id, 2, "a")) == 0);
  CHECK(t.check_commit("g", a.member_id, std::string("a"), 2) == ec::fenced_instance_id);
  CHECK(t.check_commit("g", a2->member_id, std::string("a"), 2) == 0);
  CHECK(t.check_commit("g", "", std::string("a"), -1) == ec::fenced_instance_id);
  CHECK(t.leave("g", a.member_id, std::string("a")) == ec::fenced_instance_id);
  auto stale_sync = sync_req(a.member_id, 2);
  stale_sync.group_instance_id = "a";
  std::optional<kafka::sync_group_response> fenced;
  t.sync(stale_sync, [&](kafka::sync_group_response r) { fenced = r; });
  REQUIRE(fenced);
  CHECK(fenced->error_code == ec::fenced_instance_id);
  join_answer stale_join;
  t.join(static_req(a.member_id, "a"), "ca", 5, [&](kafka::join_group_response r) { stale_join = r; });
  REQUIRE(stale_join);
  CHECK(stale_join->error_code == ec::fenced_instance_id);
  CHECK(t.describe_group("g").group_state == "Stable");
  // The rejoined member stays the group's leader under its new id: the next
  // round (b leaves) gives it the member list.
  CHECK(t.leave("g", b.member_id, std::string("b")) == 0);
  join_answer a3;
  t.join(static_req(a2->member_id, "a"), "ca", 5, [&](kafka::join_group_response r) { a3 = r; });
  REQUIRE(a3);
  CHECK(a3->generation_id == 3);
  CHECK(a3->leader == a2->member_id);
  REQUIRE(a3->members.size() == 1);
  CHECK(a3->members[0].group_instance_id == "a");
}

TEST_CASE("kafka groups: a static member rejoining with other metadata, or during a rebalance, rebalances",
          "[kafka_state][static]") {
  table t;
  auto [a, b] = two_static_members(t);
  // b restarts subscribing to something else: a new round.
  join_answer b2;
  t.join(static_req("", "b", "other-topics"), "cb", 5, [&](kafka::join_group_response r) { b2 = r; });
  CHECK(!b2);
  CHECK(t.heartbeat(beat(a.member_id, 2, "a")) == ec::rebalance_in_progress);
  // b restarts again while that round is open: the parked JoinGroup of its
  // previous process is fenced, the new one takes its place in the round.
  join_answer b3, a2;
  t.join(static_req("", "b", "other-topics"), "cb", 5, [&](kafka::join_group_response r) { b3 = r; });
  REQUIRE(b2);
  CHECK(b2->error_code == ec::fenced_instance_id);
  CHECK(!b3);
  t.join(static_req(a.member_id, "a"), "ca", 5, [&](kafka::join_group_response r) { a2 = r; });
  REQUIRE(a2);
  REQUIRE(b3);
  CHECK(b3->error_code == 0);
  CHECK(b3->generation_id == 3);
  CHECK(a2->leader == a.member_id);
  REQUIRE(a2->members.size() == 2);
  // In CompletingRebalance (the leader's assignments not yet in) a
  // restart opens another round: the old id's parked SyncGroup is fenced.
  std::optional<kafka::sync_group_response> sb;
  t.sync(sync_req(b3->member_id, 3), [&](kafka::sync_group_response r) { sb = r; });
  CHECK(!sb);
  join_answer b4;
  t.join(static_req("", "b", "other-topics"), "cb", 5, [&](kafka::join_group_response r) { b4 = r; });
  REQUIRE(sb);
  CHECK(sb->error_code == ec::fenced_instance_id);
  CHECK(!b4);
  CHECK(t.describe_group("g").group_state == "PreparingRebalance");
}

TEST_CASE("kafka groups: static members expire with their session, leave by instance id, show it in DescribeGroups",
          "[kafka_state][static]") {
  table t;
  auto [a, b] = two_static_members(t);
  auto described = t.describe_group("g");
  REQUIRE(described.members.size() == 2);
  for (const auto& m : described.members)
    CHECK(m.group_instance_id == (m.member_id == a.member_id ? "a" : "b"));
  // A request naming an instance no member has: unknown member.
  CHECK(t.heartbeat(beat(a.member_id, 2, "nobody")) == ec::unknown_member_id);
  CHECK(t.leave("g", "", std::string("nobody")) == ec::unknown_member_id);
  CHECK(t.leave("other-group", "", std::string("a")) == ec::unknown_member_id);
  // LeaveGroup v3 by instance id only: b goes, a rebalance starts.
  CHECK(t.leave("g", "", std::string("b")) == 0);
  CHECK(t.heartbeat(beat(b.member_id, 2, "b")) == ec::unknown_member_id);
  CHECK(t.heartbeat(beat(a.member_id, 2, "a")) == ec::rebalance_in_progress);
  join_answer a2;
  t.join(static_req(a.member_id, "a"), "ca", 5, [&](kafka::join_group_response r) { a2 = r; });
  REQUIRE(a2);
  t.sync(sync_req(a.member_id, 3, {{a.member_id, "all"}}), [](kafka::sync_group_response) {});
  // A static member that stays silent past its session timeout is removed;
  // its instance id is free again and joins as a new member.
  t.tick(t.now + 11000);
  CHECK(t.describe_group("g").group_state == "Empty");
  CHECK(t.heartbeat(beat(a.member_id, 3, "a")) == ec::unknown_member_id);
  join_answer again;
  t.join(static_req("", "a"), "ca", 5, [&](kafka::join_group_response r) { again = r; });
  REQUIRE(again);
  CHECK(again->error_code == 0);
  CHECK(again->generation_id == 4);
  CHECK(again->leader == again->member_id);
}

TEST_CASE("kafka producers: ids differ across calls, brokers and restarts", "[kafka_state]") {
  kafka_producer_ids b1{1}, b2{2};
  auto a = b1.allocate();
  auto b = b1.allocate();
  CHECK(b - a == 1024);
  CHECK(a > 0);
  CHECK(a % 1024 == 1);
  CHECK(b2.allocate() % 1024 == 2);
  // A restarted broker starts elsewhere in the id space: its first ids do
  // not repeat the last run's (the logs keep those producers' state).
  kafka_producer_ids restarted{1};
  auto r = restarted.allocate();
  CHECK(r > 0);
  CHECK(r != a);
  CHECK(r != b);
}

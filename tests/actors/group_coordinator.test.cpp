// The group coordinator's cluster-wide messages (docs/groups.md
// "Cluster-wide groups"): joins with partition counts learned from other
// brokers, the owner-side commit fence by the newest generation seen, and
// the Kafka groups' membership it owns (groups/kafka_membership.hpp).

#include <catch2/catch.hpp>

#include <optional>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/system.hpp"
#include "tests/support/process.hpp"

using namespace moonmq;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

struct fixture {
  explicit fixture(std::map<std::string, int> topics = {})
      : cfg(make_system_config({})), sys(*cfg), self(sys), view(std::make_shared<catalog_view>()) {
    auto map = std::make_shared<topic_map>();
    for (const auto& [name, n] : topics) {
      topic_handles t;
      t.name = name;
      t.partitions.resize(static_cast<size_t>(n));  // only the count matters here
      (*map)[name] = std::move(t);
    }
    view->set(map);
    reg = spawn_registry(sys, 1s);
    groups = spawn_group_coordinator(sys, group_settings{dir.path() + "/data", 10000}, view, reg);
  }
  ~fixture() {
    caf::anon_send_exit(groups, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
  }

  /// The join answer as JSON, or {"error": code}.
  template <class... Ts>
  json join(Ts... xs) {
    json out;
    self->request(groups, 10s, join_atom::value, xs...)
      .receive([&](std::string& body) { out = json::parse(body); },
               [&](caf::error& e) { out = json{{"error", error_code_of(e)}}; });
    return out;
  }

  /// "" when the owner-side commit is stored, else the error code.
  std::string owner_commit(const std::string& group, int32_t gen, int64_t offset) {
    std::string out = "no answer";
    json offsets = json::array({{{"topic", "orders"}, {"partition", 1}, {"offset", offset}}});
    self->request(groups, 10s, commit_atom::value, group, offsets.dump(), gen, std::string{}, owner_fence_atom::value)
      .receive([&](bool) { out.clear(); }, [&](caf::error& e) { out = error_code_of(e); });
    return out;
  }

  test::temp_dir dir;
  std::unique_ptr<caf::actor_system_config> cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  std::shared_ptr<catalog_view> view;
  registry_actor reg;
  group_actor groups;
};

}  // namespace

TEST_CASE("a join with learned partition counts assigns a topic not held here", "[groups][coordinator]") {
  fixture f;
  auto a = f.join(std::string{"g"}, std::string{}, std::vector<std::string>{"remote"}, std::string{R"({"remote":5})"});
  INFO(a.dump());
  REQUIRE(a.contains("assignment"));
  CHECK(a["assignment"]["remote"] == json::array({0, 1, 2, 3, 4}));
  // Learned counts are kept: a later plain join of another group knows the topic too.
  auto b = f.join(std::string{"h"}, std::string{}, std::vector<std::string>{"remote"});
  CHECK(b["assignment"]["remote"].size() == 5);
  // Nobody knows "ghost": the same answer as on a single broker.
  auto c = f.join(std::string{"g"}, std::string{}, std::vector<std::string>{"ghost"}, std::string{"{}"});
  CHECK(c["error"] == "unknown_topic");
}

TEST_CASE("a topic count is the larger of the catalogue count and the learned count", "[groups][coordinator]") {
  fixture f{{{"orders", 3}}};
  auto a = f.join(std::string{"g"}, std::string{}, std::vector<std::string>{"orders"}, std::string{R"({"orders":2})"});
  CHECK(a["assignment"]["orders"] == json::array({0, 1, 2}));
  auto b = f.join(std::string{"g"}, std::string{}, std::vector<std::string>{"orders"}, std::string{R"({"orders":6})"});
  CHECK(b["assignment"]["orders"].size() == 3);  // two members share six partitions
  // 1: the first join; 2: the learned count 6 rebalanced the group; 3: the second join.
  CHECK(b["generation"].get<int>() == 3);
}

TEST_CASE("an owner that is not the coordinator refuses generations older than the newest seen",
          "[groups][coordinator]") {
  fixture f{{{"orders", 2}}};
  CHECK(f.owner_commit("g", 3, 10).empty());
  CHECK(f.owner_commit("g", 2, 11) == "stale_generation");
  CHECK(f.owner_commit("g", 3, 12).empty());
  CHECK(f.owner_commit("g", 5, 13).empty());
  caf::anon_send(f.groups, observe_atom::value, std::string{"g"}, int32_t{7});
  CHECK(f.owner_commit("g", 6, 14) == "stale_generation");
  CHECK(f.owner_commit("g", -1, 15).empty());  // no generation: a plain commit
  CHECK(f.owner_commit("other", 1, 16).empty());  // per group
}

namespace {

kafka::join_group_request kafka_join(const std::string& member) {
  kafka::join_group_request r;
  r.group_id = "kg";
  r.session_timeout_ms = 10000;
  r.rebalance_timeout_ms = 10000;
  r.member_id = member;
  r.protocol_type = "consumer";
  r.protocols = {{"range", "meta"}};
  return r;
}

/// A JoinGroup v5 through the group actor, from its own requester: the
/// answer once the round completed.
kafka::join_group_response join_kafka(caf::actor_system& sys, const group_actor& groups, const std::string& member,
                                      const std::string& client) {
  caf::scoped_actor requester{sys};
  kafka::join_group_response out;
  out.error_code = -1;
  requester->request(groups, 20s, kafka_group_atom::value, kafka_join(member), client, int16_t{5}, std::string{"/h"})
    .receive([&](kafka::join_group_response& r) { out = std::move(r); }, [](caf::error& e) { FAIL(caf::to_string(e)); });
  return out;
}

}  // namespace

TEST_CASE("the Kafka membership is the group actor's: a JoinGroup parks until its round completes, the leader's "
          "SyncGroup assigns, and a group with members is not deleted",
          "[groups][kafka]") {
  fixture f;
  auto a = join_kafka(f.sys, f.groups, "", "c1");
  REQUIRE(a.error_code == 0);
  CHECK(a.generation_id == 1);
  CHECK(a.leader == a.member_id);
  // A second member's join waits for the first to rejoin the new round.
  std::optional<kafka::join_group_response> b;
  std::thread second([&] { b = join_kafka(f.sys, f.groups, "", "c2"); });
  int16_t beat = 0;
  for (int i = 0; i < 200 && beat != kafka::error_code::rebalance_in_progress; ++i) {
    kafka::heartbeat_request h;
    h.group_id = "kg";
    h.generation_id = 1;
    h.member_id = a.member_id;
    f.self->request(f.groups, 10s, kafka_group_atom::value, h)
      .receive([&](int16_t code) { beat = code; }, [](caf::error& e) { FAIL(caf::to_string(e)); });
    if (beat != kafka::error_code::rebalance_in_progress)
      std::this_thread::sleep_for(5ms);
  }
  CHECK(beat == kafka::error_code::rebalance_in_progress);
  CHECK_FALSE(b);
  auto a2 = join_kafka(f.sys, f.groups, a.member_id, "c1");
  second.join();
  REQUIRE(b);
  CHECK(a2.generation_id == 2);
  CHECK(b->generation_id == 2);
  CHECK(a2.members.size() == 2);  // only the leader gets the member list
  CHECK(b->members.empty());
  // The leader's SyncGroup brings the assignments.
  kafka::sync_group_request s;
  s.group_id = "kg";
  s.generation_id = 2;
  s.member_id = a.member_id;
  s.assignments = {{a.member_id, "pa"}, {b->member_id, "pb"}};
  std::string assigned;
  f.self->request(f.groups, 10s, kafka_group_atom::value, s)
    .receive([&](kafka::sync_group_response& r) { assigned = r.assignment; }, [](caf::error& e) { FAIL(caf::to_string(e)); });
  CHECK(assigned == "pa");
  // Commits are fenced by the Kafka generation.
  int16_t fence = -1;
  f.self->request(f.groups, 10s, kafka_group_atom::value, groups::kafka_commit_check{"kg", a.member_id, {}, 1})
    .receive([&](int16_t code) { fence = code; }, [](caf::error& e) { FAIL(caf::to_string(e)); });
  CHECK(fence == kafka::error_code::illegal_generation);
  // The group shows Stable in the actor's status, and is not deleted while
  // members are in it.
  json status;
  f.self->request(f.groups, 10s, status_atom::value)
    .receive([&](std::string& text) { status = json::parse(text); }, [](caf::error& e) { FAIL(caf::to_string(e)); });
  REQUIRE(status["kafka_groups"].size() == 1);
  CHECK(status["kafka_groups"][0]["state"] == "Stable");
  CHECK(status["kafka_groups"][0]["members"] == 2);
  // DeleteGroups is refused while Kafka members are in the group, and
  // deletes nothing then; once they left it forgets the group.
  auto delete_group = [&] {
    std::string out;
    f.self->request(f.groups, 10s, delete_atom::value, std::string{"kg"})
      .receive([&](bool held) { out = held ? "deleted" : "unknown"; }, [&](caf::error& e) { out = error_code_of(e); });
    return out;
  };
  CHECK(delete_group() == "non_empty_group");
  kafka::leave_group_request leave;
  leave.group_id = "kg";
  leave.members = {{a.member_id, std::nullopt}, {b->member_id, std::nullopt}};
  kafka::leave_group_response left;
  f.self->request(f.groups, 10s, kafka_group_atom::value, leave, int16_t{3})
    .receive([&](kafka::leave_group_response& r) { left = std::move(r); }, [](caf::error& e) { FAIL(caf::to_string(e)); });
  REQUIRE(left.members.size() == 2);
  CHECK(left.members[0].error_code == 0);
  CHECK(left.members[1].error_code == 0);
  CHECK(delete_group() == "deleted");
  std::vector<kafka::listed_group> listed{{"x", "y"}};
  f.self->request(f.groups, 10s, kafka_group_atom::value, list_atom::value)
    .receive([&](std::vector<kafka::listed_group>& l) { listed = std::move(l); },
             [](caf::error& e) { FAIL(caf::to_string(e)); });
  CHECK(listed.empty());
  CHECK(delete_group() == "unknown");
}

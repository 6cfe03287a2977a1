// The group coordinator's cluster-wide messages (docs/groups.md
// "Cluster-wide groups"): joins with partition counts learned from other
// brokers, and the owner-side commit fence by the newest generation seen.

#include <catch2/catch.hpp>

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

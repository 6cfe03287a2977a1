#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include "actors/registry.hpp"
#include "actors/system.hpp"
#include "tests/actors/test_actors.hpp"
#include "tests/support/process.hpp"

using namespace moonmq;
using namespace std::chrono_literals;

namespace {

std::vector<actor_info> list(caf::actor_system& sys, const registry_actor& reg) {
  caf::scoped_actor self{sys};
  std::vector<actor_info> out;
  self->request(reg, 5s, list_atom::value)
    .receive([&](std::vector<actor_info>& xs) { out = std::move(xs); },
             [&](caf::error& e) { FAIL("list failed: " << caf::to_string(e)); });
  return out;
}

const actor_info* find_kind(const std::vector<actor_info>& xs, const std::string& kind) {
  for (const auto& x : xs)
    if (x.kind == kind)
      return &x;
  return nullptr;
}

}  // namespace

TEST_CASE("registry lists enrolled actors with their own status", "[registry]") {
  auto cfg = make_system_config({});
  caf::actor_system sys{*cfg};
  auto reg = spawn_registry(sys, 200ms);
  auto a = sys.spawn(test::chatty_actor);
  enroll(reg, a, "chatty-1", "chatty");
  auto xs = list(sys, reg);
  REQUIRE(xs.size() == 2);
  auto* chatty = find_kind(xs, "chatty");
  REQUIRE(chatty);
  CHECK(chatty->name == "chatty-1");
  CHECK(chatty->id == a.id());
  CHECK(chatty->responsive);
  CHECK(chatty->state == "{\"ok\":true}");
  CHECK(chatty->spawned_at > 0);
  auto* self_entry = find_kind(xs, "registry");
  REQUIRE(self_entry);
  CHECK(self_entry->state.find("\"actors\":2") != std::string::npos);
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
}

TEST_CASE("an actor that exits disappears from the registry", "[registry]") {
  auto cfg = make_system_config({});
  caf::actor_system sys{*cfg};
  auto reg = spawn_registry(sys, 200ms);
  auto a = sys.spawn(test::chatty_actor);
  enroll(reg, a, "short-lived", "chatty");
  REQUIRE(find_kind(list(sys, reg), "chatty"));
  caf::anon_send_exit(a, caf::exit_reason::kill);
  CHECK(test::wait_until([&] { return find_kind(list(sys, reg), "chatty") == nullptr; }, 5s));
  CHECK(list(sys, reg).size() == 1);
  caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
}

TEST_CASE("an actor that does not answer is listed as unresponsive, not dropped", "[registry]") {
  auto cfg = make_system_config({});
  caf::actor_system sys{*cfg};
  auto reg = spawn_registry(sys, 100ms);
  auto s = sys.spawn(test::silent_actor);
  auto c = sys.spawn(test::chatty_actor);
  enroll(reg, s, "mute", "silent");
  enroll(reg, c, "talker", "chatty");
  auto xs = list(sys, reg);
  REQUIRE(xs.size() == 3);
  auto* mute = find_kind(xs, "silent");
  REQUIRE(mute);
  CHECK_FALSE(mute->responsive);
  CHECK(mute->state.empty());
  CHECK(find_kind(xs, "chatty")->responsive);
  caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
}

TEST_CASE("inspecting an unknown id is an unknown_actor error", "[registry]") {
  auto cfg = make_system_config({});
  caf::actor_system sys{*cfg};
  auto reg = spawn_registry(sys, 100ms);
  caf::scoped_actor self{sys};
  bool failed = false;
  self->request(reg, 5s, inspect_atom::value, uint64_t{999999})
    .receive([&](actor_info&) {}, [&](caf::error& e) { failed = e.category() == caf::atom("moonmq"); });
  CHECK(failed);
  caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
}

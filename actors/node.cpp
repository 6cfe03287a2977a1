#include "actors/node.hpp"

#include <chrono>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "moonmq/version.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace {

struct node_state {
  node_settings settings;
  registry_actor registry;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  static inline const char* name = "node";
};

using self_ptr = node_actor::stateful_pointer<node_state>;

node_actor::behavior_type node_fn(self_ptr self, node_settings settings, registry_actor reg,
                                  std::vector<caf::actor> children) {
  self->state.settings = std::move(settings);
  self->state.registry = reg;
  // The registry and every child live exactly as long as the node.
  self->link_to(reg);
  for (auto& c : children)
    self->link_to(c);
  log::get("node")->info("node.started broker={} data_dir={}", self->state.settings.broker_id,
                         self->state.settings.data_dir);
  return {
    [self](status_atom) {
      auto& s = self->state.settings;
      auto up = std::chrono::duration<double>(std::chrono::steady_clock::now() - self->state.started).count();
      nlohmann::json j{{"broker_id", s.broker_id},   {"version", version_string},
                       {"uptime_seconds", up},       {"data_dir", s.data_dir},
                       {"config_files", s.config_files}, {"listeners", s.listeners}};
      return j.dump();
    },
    [self](stop_atom) {
      log::get("node")->info("node.stopping broker={}", self->state.settings.broker_id);
      self->quit(caf::exit_reason::user_shutdown);
      return true;
    },
  };
}

}  // namespace

node_actor spawn_node(caf::actor_system& sys, node_settings settings, registry_actor reg,
                      std::vector<caf::actor> children) {
  auto n = sys.spawn(node_fn, std::move(settings), reg, std::move(children));
  enroll(reg, caf::actor_cast<caf::actor>(n), "node", "node");
  return n;
}

}  // namespace moonmq

#pragma once
// The admin API (CONTRACT.md §4) as routes on the shared HTTP server.
// Routes that need actors go through actors/ask.hpp with a timeout; the
// actor never sees HTTP.

#include <chrono>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/node.hpp"
#include "actors/registry.hpp"
#include "transport/router.hpp"

namespace moonmq::plugins {
class goal_registry;
}

namespace moonmq::transport {

struct admin_context {
  caf::actor_system* system = nullptr;
  registry_actor registry;
  std::string broker_id;
  /// Bearer token; empty = open. /health never needs it.
  std::string token;
  /// The goal plugins of Autobalance.GoalsDir (GET /admin/plugins,
  /// POST /admin/plugins/reload); null = routes answer 503.
  std::shared_ptr<plugins::goal_registry> goals;
  /// Bound on each request to an actor.
  std::chrono::milliseconds timeout{3000};
};

/// Adds GET /health, GET /metrics, GET /admin/actors, GET /admin/actors/{id},
/// GET /admin/plugins, POST /admin/plugins/reload and the bearer-token guard
/// to `r`.
void add_admin_routes(router& r, const admin_context& ctx);

}  // namespace moonmq::transport

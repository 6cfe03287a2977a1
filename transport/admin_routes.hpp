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

namespace moonmq {
class catalog_view;
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
  /// The local topics and their partition actors (POST
  /// /admin/partitions/{topic}/{partition}/truncate-corrupt); null = that
  /// route answers 503.
  std::shared_ptr<catalog_view> catalog;
  /// Bound on each request to an actor.
  std::chrono::milliseconds timeout{3000};
  /// Bound on a repair (it scans the damaged segment).
  std::chrono::milliseconds repair_timeout{std::chrono::minutes(10)};
};

/// Adds GET /health, GET /metrics, GET /admin/actors, GET /admin/actors/{id},
/// GET /admin/plugins, POST /admin/plugins/reload,
/// POST /admin/partitions/{topic}/{partition}/truncate-corrupt and the
/// bearer-token guard to `r`.
void add_admin_routes(router& r, const admin_context& ctx);

}  // namespace moonmq::transport

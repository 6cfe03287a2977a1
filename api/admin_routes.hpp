#pragma once
// The admin API (CONTRACT.md §4) as routes on the shared HTTP server.
// Routes that need actors go through actors/ask.hpp with a timeout; the
// actor never sees HTTP.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <caf/fwd.hpp>

#include <nlohmann/json_fwd.hpp>

#include "actors/group_coordinator.hpp"
#include "actors/image.hpp"
#include "actors/node.hpp"
#include "actors/reassigner.hpp"
#include "actors/registry.hpp"
#include "peers/peer_directory.hpp"
#include "net/router.hpp"

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
  /// GET /metrics's scrape-time series (api/metrics_scrape.hpp): the
  /// metadata image (null on a standalone broker: every partition is
  /// owned here), the group coordinator (lag) and the reassigner (moves);
  /// a part whose source is missing is left out of the text.
  std::shared_ptr<owner_view> owners;
  std::optional<group_actor> groups;
  std::optional<reassigner_actor> reassigner;
  /// Bound on each request of a scrape.
  std::chrono::milliseconds scrape_timeout{1000};
  /// The cluster's other brokers: POST /admin/plugins/reload reloads
  /// theirs too (POST /cluster/plugins/reload). Empty = this broker alone.
  std::shared_ptr<peer_directory> peers = std::make_shared<peer_directory>();
  /// Deadline of each peer's reload.
  std::chrono::milliseconds peer_timeout{5000};
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

/// Rescans the goals directory of `goals` and logs what changed; returns the
/// GET /admin/plugins body of the new set. Used by POST /admin/plugins/reload
/// and by the cluster route a peer's reload calls.
nlohmann::json reload_goal_plugins(plugins::goal_registry& goals);

}  // namespace moonmq::transport

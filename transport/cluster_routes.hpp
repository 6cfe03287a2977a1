#pragma once
// The inter-broker API on Server.Cluster (docs/cluster-api.md). Every
// request must carry X-Cluster-Token when a token is configured: it is
// compared in constant time before anything else, and a request without it
// gets 401 and changes nothing. Control-plane requests also carry
// X-Controller-Epoch / X-Controller-Id, checked by the durable controller
// fence (409 when stale); data-plane requests carry no epoch.

#include <chrono>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/catalog_view.hpp"
#include "actors/cluster_state.hpp"
#include "transport/router.hpp"

namespace moonmq::transport {

struct cluster_context {
  caf::actor_system* system = nullptr;
  cluster_state_actor state;
  std::shared_ptr<catalog_view> catalog;
  std::shared_ptr<owner_view> owners;
  std::string broker_id;
  /// Cluster.Token; empty = no authentication (a warning is logged at start-up).
  std::string token;
  std::chrono::milliseconds timeout{5000};
};

/// Adds the token guard and the /cluster/* routes to `r`.
void add_cluster_routes(router& r, const cluster_context& ctx);

/// The token guard alone (also used by tests): 401 unless X-Cluster-Token
/// equals `token` (constant-time); no check when `token` is empty.
router::guard cluster_token_guard(std::string token);

}  // namespace moonmq::transport

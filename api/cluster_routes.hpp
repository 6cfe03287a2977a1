#pragma once
// The inter-broker API on Server.Cluster (docs/cluster-api.md). Every
// request must carry X-Cluster-Token when a token is configured: it is
// compared in constant time before anything else, and a request without it
// gets 401 and changes nothing. Control-plane requests also carry
// X-Controller-Epoch / X-Controller-Id, checked against the Raft term and
// leader (409 when stale or not the leader's); data-plane requests carry no
// epoch.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/broker.hpp"
#include "actors/catalog_view.hpp"
#include "actors/cluster_state.hpp"
#include "api/local_loads.hpp"
#include "net/router.hpp"

namespace moonmq {
class session_load_view;
}

namespace moonmq::plugins {
class goal_registry;
}

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
  /// Deadline of each partition's answer in GET /cluster/loads; kept below
  /// the survey deadline of /admin/cluster so a slow partition shows as an
  /// "error" row instead of making the whole broker look dead.
  std::chrono::milliseconds loads_timeout{1000};
  /// Cluster.Rack and Cluster.Weight, reported by GET /cluster/loads.
  broker_traits traits;
  /// The load_meter's latest report: GET /cluster/loads carries it as
  /// "session_load" (docs/placement.md); null = no meter (field absent).
  std::shared_ptr<const session_load_view> session_load;
  /// The goal plugins: POST /cluster/plugins/reload rescans them (a peer's
  /// POST /admin/plugins/reload); null = that route answers 503.
  std::shared_ptr<plugins::goal_registry> goals;
  /// Storage.SharedDir is set (docs/shared-storage.md): POST /cluster/owners
  /// never changes an owned partition's owner (a live owner would keep
  /// acknowledging at its epoch until it applied the change; moves and the
  /// controller's failover hand partitions over safely).
  bool shared_storage = false;
};

/// Adds the token guard and the /cluster/* routes to `r`.
void add_cluster_routes(router& r, const cluster_context& ctx);

/// Runs `then(epoch, controller)` once the request's X-Controller-Epoch /
/// X-Controller-Id passed the controller fence held by `state`; answers 400
/// missing_epoch (absent or malformed headers) or 409 stale_epoch /
/// epoch_conflict otherwise. For every control-plane route.
void with_fence(caf::actor_system& sys, const cluster_state_actor& state, std::chrono::milliseconds timeout,
                const http_request& req, const responder& respond,
                std::function<void(int64_t epoch, const std::string& controller)> then);

/// The token guard alone (also used by tests): 401 unless X-Cluster-Token
/// equals `token` (constant-time); no check when `token` is empty.
router::guard cluster_token_guard(std::string token);

}  // namespace moonmq::transport

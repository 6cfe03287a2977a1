#pragma once
// The partition-move routes: the destination's side of a MOVE on the
// cluster listener (ensure, append, offsets, confirm, cleanup; DESIGN §3),
// the move requests between brokers (/cluster/moves), and the operator's
// /admin/reassignments on the admin listener (CONTRACT §4). Shapes and
// status codes: docs/cluster-api.md and docs/admin-api.md; the protocol:
// docs/cluster.md.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/catalog_view.hpp"
#include "actors/cluster_state.hpp"
#include "actors/move_destination.hpp"
#include "actors/reassigner.hpp"
#include "peers/peer_directory.hpp"
#include "net/router.hpp"

namespace moonmq::transport {

struct move_context {
  caf::actor_system* system = nullptr;
  std::string broker_id;
  cluster_state_actor state;
  reassigner_actor reassigner;
  /// The destination half of this broker's incoming moves (ensure, append,
  /// offsets, confirm, cleanup).
  move_destination_actor destination;
  std::shared_ptr<catalog_view> catalog;
  std::shared_ptr<owner_view> owners;
  std::shared_ptr<peer_directory> peers = std::make_shared<peer_directory>();
  /// Deadline of one local actor request.
  std::chrono::milliseconds timeout{5000};
  /// Deadline of one peer request (Cluster.PeerTimeout).
  std::chrono::milliseconds peer_timeout{5000};
};

/// /cluster/partitions/{t}/{p}/{ensure,append,confirm,cleanup},
/// /cluster/offsets and /cluster/moves, on the cluster listener's router
/// (whose token guard add_cluster_routes installs).
void add_move_routes(router& r, const move_context& ctx);

/// POST/GET /admin/reassignments and DELETE /admin/reassignments/{t}/{p},
/// on the admin listener's router.
void add_reassignment_routes(router& r, const move_context& ctx);

}  // namespace moonmq::transport

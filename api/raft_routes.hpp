#pragma once
// The Raft routes on the cluster listener (docs/cluster-api.md "Raft"):
// POST /cluster/raft/vote, /cluster/raft/append, /cluster/raft/snapshot carry
// one wire message each (raft/messages.hpp) and are answered 202 at once —
// the reply travels back as a POST of its own, so no request waits on a
// peer. POST /cluster/raft/propose asks the leader to commit an owner
// change. Behind the cluster token like every /cluster/* route, but exempt
// from the controller fence: Raft is what establishes it. 503 raft_disabled
// while the Raft node is not running; 400 on a body that is not a valid message for
// the route, or a message addressed to another broker.

#include <chrono>
#include <optional>
#include <string>

#include <caf/fwd.hpp>

#include "actors/raft_node.hpp"
#include "net/router.hpp"

namespace moonmq::transport {

struct raft_context {
  caf::actor_system* system = nullptr;
  std::string broker_id;
  /// Unset when Cluster.Raft.Enabled is false.
  std::optional<raft_actor> node;
  /// Deadline of POST /cluster/raft/propose (commit and apply on the leader).
  std::chrono::milliseconds propose_timeout{5000};
};

void add_raft_routes(router& r, const raft_context& ctx);

}  // namespace moonmq::transport

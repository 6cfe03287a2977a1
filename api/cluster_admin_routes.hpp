#pragma once
// GET /admin/cluster (CONTRACT.md §4): the brokers of the cluster with
// whether each answers now, every partition of the cluster with its owner
// and holders, and the controller fence's highest epoch and holder. Peers
// are surveyed in parallel on their cluster listener (GET /cluster/loads,
// peers/peer_survey.hpp) with a short deadline, so a dead peer shows as
// "alive": false instead of stalling the answer; what the live ones report
// is merged with this broker's own loads by cluster::merge_partition_reports.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/catalog_view.hpp"
#include "actors/balancer.hpp"
#include "actors/cluster_state.hpp"
#include "actors/reassigner.hpp"
#include "actors/txn_coordinator.hpp"
#include "peers/peer_directory.hpp"
#include "net/router.hpp"
#include "api/local_loads.hpp"

namespace moonmq::transport {

/// A transaction coordinator handle set once while routes may already read it.
class txn_handle {
 public:
  void set(txn_actor a) {
    std::lock_guard<std::mutex> g{mtx_};
    actor_ = std::move(a);
  }
  std::optional<txn_actor> get() const {
    std::lock_guard<std::mutex> g{mtx_};
    return actor_;
  }

 private:
  mutable std::mutex mtx_;
  std::optional<txn_actor> actor_;
};

struct cluster_admin_context {
  caf::actor_system* system = nullptr;
  std::string broker_id;
  /// Cluster.Rack and Cluster.Weight (this broker's row of GET /admin/cluster).
  broker_traits traits;
  /// This broker's client API host:port (read when answering: the port is
  /// known once the listener is bound).
  std::function<std::string()> client_address;
  std::shared_ptr<catalog_view> catalog;
  /// Without a Cluster section: no state, no peers, every partition local.
  std::optional<cluster_state_actor> state;
  std::shared_ptr<owner_view> owners;
  std::shared_ptr<peer_directory> peers = std::make_shared<peer_directory>();
  /// The balance loop (a Cluster section is required); /admin/balancer.
  std::optional<balancer_actor> balancer;
  /// This broker's moves: a broker is removable only when no journal of the
  /// cluster holds an unfinished move from or to it.
  std::optional<reassigner_actor> reassigner;
  /// With Cluster.Raft: term, commit index and role for /admin/cluster.
  std::shared_ptr<raft_view> raft;
  /// This broker's transaction coordinator, set once it is spawned (after
  /// the routes are added and served); empty without the metadata log.
  std::shared_ptr<txn_handle> txns = std::make_shared<txn_handle>();
  /// Deadline of the peers' /cluster/loads; local partitions get half of it.
  std::chrono::milliseconds probe_timeout{2000};
};

void add_cluster_admin_routes(router& r, const cluster_admin_context& ctx);

/// GET /cluster/balancer on the cluster listener: this broker's GET
/// /admin/balancer body, for a peer's `GET /admin/balancer?broker=<id>`.
/// Needs `ctx.balancer`.
void add_cluster_balancer_route(router& r, const cluster_admin_context& ctx);

}  // namespace moonmq::transport

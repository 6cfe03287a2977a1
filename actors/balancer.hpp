#pragma once
// The balance loop (DESIGN §4): one pass every Autobalance.IntervalSeconds.
//   1. controllership: the claim is asked again every pass and succeeds
//      only on the Raft leader, at its term, which is then announced to
//      every peer (POST /cluster/controller); a loop refused by a newer term
//      (a peer's 409, or the local Raft view) sits the pass out and is not
//      the controller until Raft elects it again (docs/balancer.md).
//   2. feed the model: this broker's and every peer's GET /cluster/loads
//      (per partition: owner, disk bytes, cumulative bytes in and out); rates
//      are differences between passes (goals::load_model). A peer that does
//      not answer is inactive for the pass and never a destination; a broker
//      holding a partition whose window is incomplete is not a destination
//      either (its low load is not yet known to be real).
//   3. detect: goals::make_plan with the goal plugins loaded from GoalsDir.
//   4. execute: each move is sent to the partition's owner (its reassigner,
//      or POST /cluster/moves) under this loop's epoch; DryRun only logs it.
// With shared storage, a fenced broker silent for failover_wait_ms on the
// Raft leader has its partitions handed to other brokers by conditional
// owner entries (goals/failover_planner.hpp), checked for every second.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <nlohmann/json_fwd.hpp>

#include "actors/atoms.hpp"
#include "actors/broker_traits_view.hpp"
#include "actors/cluster_state.hpp"
#include "actors/reassigner.hpp"
#include "actors/registry.hpp"
#include "config/node_config.hpp"
#include "peers/peer_directory.hpp"

namespace moonmq::cluster {
class takeover_hold;  // cluster/takeover_hold.hpp
}

namespace moonmq::plugins {
class goal_registry;
}

namespace moonmq {

using balancer_actor = caf::typed_actor<
  // Internal: run a pass now (re-armed every interval while enabled).
  caf::reacts_to<tick_atom>,
  // Internal, shared storage: look for a failover due now (every second);
  // runs a pass that makes only the failover when one is.
  caf::reacts_to<tick_atom, owner_atom>,
  // Internal: the inputs of a pass arrived (survey JSON text, execute?).
  caf::reacts_to<step_atom, std::string, bool>,
  // Internal: one executed move's outcome (topic, partition, to, status,
  // whether its source may have queued it without saying so
  // (transport::move_submit_outcome::unknown), message).
  caf::reacts_to<step_atom, std::string, int32_t, std::string, int32_t, bool, std::string>,
  // GET /admin/balancer: status and the last pass (JSON text).
  caf::replies_to<get_atom>::with<std::string>,
  // POST /admin/balancer/plan: a plan from the live model now, nothing
  // moved (JSON text of the pass).
  caf::replies_to<plan_atom>::with<std::string>,
  caf::replies_to<status_atom>::with<std::string>>;

struct balancer_settings {
  std::string broker_id;
  config::autobalance_config config;
  /// The other brokers (configured and registered at runtime).
  std::shared_ptr<transport::peer_directory> peers = std::make_shared<transport::peer_directory>();
  std::chrono::milliseconds peer_timeout{5000};
  /// The GET /cluster/loads body of this broker, delivered to the callback
  /// (on any thread); api/local_loads.hpp.
  std::function<void(std::function<void(nlohmann::json)>)> local_loads;
  /// With the metadata log: the image whose dynamic balancer settings
  /// (PATCH /admin/balancer, config/dynamic.hpp) apply on top of `config`,
  /// read again before every pass. Null = `config` alone.
  std::shared_ptr<owner_view> image;
  /// Cluster.MoveThrottleBytesPerSec as configured (shown with the settings).
  int64_t throttle_bytes_per_sec = 0;
  /// Shared-storage mode (Server.Storage.SharedDir, docs/shared-storage.md):
  /// a fenced broker's partitions get new owners on the Raft leader once it
  /// has been silent for `failover_wait_ms` (docs/balancer.md "Failover
  /// (shared storage)"), whatever Enabled and DryRun say. Off: a fenced
  /// broker's partitions stay offline until it returns (local disks).
  bool shared_storage = false;
  /// How long a fenced broker must have been silent on this Raft leader
  /// before its partitions are handed over, in ms: the caller passes
  /// LeaseMs + LeaseMarginMs (docs/shared-storage.md "The lease").
  int64_t failover_wait_ms = 3500;
  /// Shared storage: a partition its source took back after a move's
  /// cutover is not failed over before this hold ran (null: no hold;
  /// docs/shared-storage.md "Take-back").
  std::shared_ptr<cluster::takeover_hold> takeover_hold;
  /// This broker's Raft status: leadership and the leader's per-peer
  /// silence (raft_status::silent_ms). Without it there is no failover.
  std::shared_ptr<raft_view> raft;
  /// Where each counted pass publishes the brokers it holds slow, for the
  /// placement of a new topic's partitions (null: nowhere).
  std::shared_ptr<broker_traits_view> traits;
};

/// Spawns the balance loop. It runs passes only when config.enabled; the
/// plan-now request works either way.
balancer_actor spawn_balancer(caf::actor_system& sys, balancer_settings settings,
                              std::shared_ptr<plugins::goal_registry> goals, cluster_state_actor state,
                              reassigner_actor reassigner, registry_actor reg);

}  // namespace moonmq

#pragma once
// The raft_node actor's state and the helpers its two halves share
// (private to actors/raft_node.cpp and actors/raft_node_membership.cpp; not
// part of the actors library's interface).
//
//   raft_node.cpp             the behaviour: ticks, messages, proposals and
//                             their outcomes, the published image
//   raft_node_membership.cpp  the cluster's brokers: Raft clients for
//                             registered brokers, fencing of silent ones,
//                             a learner's registration

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "actors/raft_node.hpp"
#include "cluster/lease.hpp"
#include "cluster/lease_gate.hpp"
#include "raft/applied_terms.hpp"
#include "raft/raft_core.hpp"
#include "raft/raft_store.hpp"
#include "util/logging.hpp"
#include "actors/raft_probe.hpp"

namespace moonmq::raft_node_impl {
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using promise = caf::typed_response_promise<int64_t, int64_t>;

/// Messages to one peer still waiting for their 202; more are dropped (the
/// core resends on the next heartbeat), so a dead peer never piles up work.
constexpr int max_in_flight = 4;

inline std::shared_ptr<spdlog::logger> logger() { return log::get("raft"); }

/// A local proposal, or a forwarded one the leader accepted, waiting for
/// its entry to be applied here.
struct waiter {
  int64_t index = 0;
  int64_t term = 0;
  raft::entry_payload entry;
  promise rp;
  clock_type::time_point deadline;
};

/// A proposal sent to the leader, waiting for its answer.
struct forward {
  raft::entry_payload entry;
  promise rp;
  clock_type::time_point deadline;
};

struct raft_peer {
  transport::cluster_peer peer;
  std::shared_ptr<std::atomic<int>> in_flight = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<bool>> reachable = std::make_shared<std::atomic<bool>>(true);
};

struct raft_node_state {
  raft_node_settings settings;
  raft_timing timing;
  std::unique_ptr<raft::raft_store> store;
  std::optional<raft::raft_core> core;
  std::shared_ptr<owner_view> owners;
  std::shared_ptr<raft_view> view;
  std::map<std::string, raft_peer> peers;
  std::vector<waiter> waiters;
  /// Terms of the entries applied here lately, for waiters whose entry a
  /// compaction took out of the log before they were settled.
  raft::applied_terms applied_terms;
  std::map<int64_t, forward> forwards;
  /// Proposals made while no leader was known: each goes to the leader once
  /// one is, or is answered unavailable no_controller at its deadline.
  std::vector<forward> parked;
  int64_t next_forward = 0;
  std::string broken;  ///< why the node stopped taking part (a failed save)
  bool flush_pending = false;  ///< a flush_atom is in the mailbox
  /// Liveness proposals in flight (broker id → log index), so a silent peer
  /// is fenced by one entry, not one per tick.
  std::map<std::string, uint64_t> liveness_pending;
  raft::role last_role = raft::role::follower;
  uint64_t elections = 0, sent = 0, dropped = 0, received = 0, refused = 0;
  /// The node's series (raft_probe.hpp), registered once: publish_status
  /// runs after every tick and message.
  std::optional<raft_probe> probe;
  /// The broker lease (docs/shared-storage.md "The lease") and where its
  /// deadline is published.
  std::optional<cluster::broker_lease> lease;
  cluster::lease_gate* gate = nullptr;
  /// Highest index applied to the published image (owners), which the
  /// lease vouches for; the core's applied index runs ahead of it between
  /// a ready() and its publication.
  raft::log_index published_applied;
  /// This broker's endpoints to register (a learner, once its listeners are bound).
  std::optional<raft::broker_endpoints> own;
  /// When the next registration attempt may go out, and which voter it goes to.
  clock_type::time_point register_after{};
  std::size_t register_turn = 0;
  /// Set at start when the image already named this broker removed: its
  /// restart asks to join again (once).
  bool rejoin = false;
  bool told_removed = false;  ///< the removal was logged
  static inline const char* name = "raft_node";
};

using self_ptr = raft_actor::stateful_pointer<raft_node_state>;

inline caf::error coded(fault kind, const std::string& code, const std::string& message) {
  return make_coded_error(kind, code, message);
}

/// Resolves waiters whose index is now applied: delivered when the applied
/// entry is theirs, refused when another entry took its place
/// (actors/raft_node_waiters.cpp).
void settle_waiters(self_ptr self);

/// Gives registered brokers Raft clients (raft_node_membership.cpp).
void connect_registered(self_ptr self);
/// On the leader, every tick: fences silent peers, unfences returned ones.
void check_liveness(self_ptr self);
/// True for a host:port others can connect to: a port, and a host that is
/// not empty nor a wildcard bind address.
bool reachable_address(const std::string& address);
/// A learner's registration of its endpoints, at most once per election timeout.
void try_register(self_ptr self);

}  // namespace moonmq::raft_node_impl

#pragma once
// The raft_node actor (DESIGN §5, docs/raft.md "The raft_node actor"): drives
// the pure raft_core of this broker when Cluster.Raft.Enabled. One tick every
// tick_ms; received wire messages are stepped in; every ready batch is
// persisted (raft_store, fsynced) before its messages go out and before its
// committed entries are applied. Applying publishes the ownership table to
// the owner_view every request path reads, and the term / leader / commit
// index to the raft_view the controller fence reads.
//
// Messages go out as one-way POSTs (/cluster/raft/vote|append|snapshot,
// answered 202); the reply travels back the same way. Each peer has its own
// keep-alive client and at most a few messages in flight, so an unreachable
// peer costs dropped messages to that peer only, never a delayed heartbeat
// to the others (Raft tolerates loss; the core resends).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/image.hpp"
#include "actors/registry.hpp"
#include "peers/peer_survey.hpp"

namespace moonmq::raft {
class raft_store;
class ownership_state;
}

namespace moonmq {

class owner_view;  // actors/cluster_state.hpp

namespace cluster {
class lease_gate;  // cluster/lease_gate.hpp
}

/// What the rest of the node needs to know about Raft, published after
/// every ready batch.
struct raft_status {
  int64_t term = 0;
  std::string leader;           ///< leader known in `term` ("" when unknown)
  std::string role = "follower";  ///< follower | pre_candidate | candidate | leader
  bool is_leader = false;
  int64_t commit_index = 0;
  int64_t applied_index = 0;
  /// On the leader: how long each peer (voter or learner) has been silent,
  /// in ms (raft_core::silent_ticks × the tick length), by broker id; empty
  /// on a follower. Counted from 0 again when this broker becomes leader, so
  /// a new leader waits anew before it acts on a silence (the shared-storage
  /// failover, docs/balancer.md "Failover (shared storage)"). A late tick
  /// only undercounts.
  std::map<std::string, int64_t> silent_ms;
  /// The broker lease's deadline (docs/shared-storage.md "The lease"), in
  /// steady_clock nanoseconds as cluster::lease_gate holds it: its `none`
  /// (INT64_MIN) without a lease, its `unbounded` (INT64_MAX) for a leader
  /// alone. Compare with the reader's own steady_clock::now().
  int64_t lease_deadline_ns = std::numeric_limits<int64_t>::min();
  int64_t lease_ms = 0;  ///< Cluster.Raft.LeaseMs
};

/// Thread-safe holder of the latest raft_status (read by the fence in
/// cluster_state and by /admin/cluster).
class raft_view {
public:
  raft_status get() const {
    std::lock_guard<std::mutex> g{mtx_};
    return current_;
  }
  void set(raft_status s) {
    std::lock_guard<std::mutex> g{mtx_};
    current_ = std::move(s);
  }

private:
  mutable std::mutex mtx_;
  raft_status current_;
};

using raft_actor = caf::typed_actor<
  // Internal: one logical tick (re-armed every tick_ms).
  caf::reacts_to<tick_atom>,
  // Internal: persists (one fsync) and applies every proposal appended since
  // the last flush: proposals queued in the mailbox meanwhile share it.
  caf::reacts_to<flush_atom>,
  // A wire message received on /cluster/raft/* (JSON text, validated by the route).
  caf::reacts_to<raft_atom, std::string>,
  // Proposes "owner of (topic, partition) = owner". Replies (index, term) once
  // the entry is committed and applied on this broker. A follower forwards
  // the proposal to the leader when `forward` is set (POST
  // /cluster/raft/propose). Errors: unavailable no_controller (no leader known),
  // unavailable proposal_lost (leadership changed and the entry was overwritten),
  // timeout (not committed within the proposal deadline; it may still
  // commit later, in log order).
  caf::replies_to<propose_atom, std::string, int32_t, std::string, bool>::with<int64_t, int64_t>,
  // The same, conditional (docs/metadata.md "Owner epochs"): topic,
  // partition, owner, the owner epoch it expects (>= 1), forward. Applied
  // only while the partition is still at that epoch; otherwise the entry
  // commits as a no-op and the answer is conflict owner_epoch_changed.
  caf::replies_to<propose_atom, owner_atom, std::string, int32_t, std::string, int64_t, bool>::with<int64_t,
                                                                                                    int64_t>,
  // The same with raft::owner_entry::expect_owner_fenced (the last bool):
  // applied only while the partition's current owner is also still fenced
  // at that point of the log (the shared-storage failover).
  caf::replies_to<propose_atom, owner_atom, std::string, int32_t, std::string, int64_t, bool, bool>::with<
    int64_t, int64_t>,
  // Proposes a `topic` entry creating a topic (docs/raft.md): topic, partition count, owner of
  // the partitions it adds, config JSON text ("" = defaults), forward. The
  // same answers and errors as an owner proposal.
  caf::replies_to<propose_atom, create_atom, std::string, int32_t, std::string, std::string, bool>::with<int64_t,
                                                                                                       int64_t>,
  // Proposes a placed create or growth: a `topic` entry as JSON text with
  // "owners", "first" and "checked" (docs/metadata.md "Placing a new
  // topic's partitions"), forward. Error invalid invalid_request for another
  // entry; otherwise the answers of a create.
  caf::replies_to<propose_atom, create_atom, std::string, bool>::with<int64_t, int64_t>,
  // Proposes a growth (`topic` entry with grow): topic, new count, owner of
  // the partitions it adds, forward.
  caf::replies_to<propose_atom, grow_atom, std::string, int32_t, std::string, bool>::with<int64_t, int64_t>,
  // Proposes a topic deletion (`topic` entry with delete): topic, the
  // partition count the proposer saw, proposer id, forward. Errors besides a
  // proposal's: not_found unknown_topic, conflict topic_moving (a move of one of its
  // partitions is unfinished), decided in log order.
  caf::replies_to<propose_atom, delete_atom, std::string, int32_t, std::string, bool>::with<int64_t, int64_t>,
  // Proposes a topic config change (`topic` entry with alter): topic, the
  // partition count the proposer saw, proposer id, the topic's whole new
  // config or (merge true) a patch of it (JSON object text, validated by
  // the caller), merge, forward. Errors besides a proposal's: not_found
  // unknown_topic (refused in log order), conflict config_not_applied (the
  // leader committed another entry in its place: an earlier version).
  caf::replies_to<propose_atom, config_atom, std::string, int32_t, std::string, std::string, bool,
                  bool>::with<int64_t, int64_t>,
  // Proposes a `config` entry: the dynamic balancer settings patch (JSON
  // object text, validated by the caller), forward.
  caf::replies_to<propose_atom, config_atom, std::string, bool>::with<int64_t, int64_t>,
  // Proposes a `broker` entry an operator asked for: broker id, change
  // ("drain", "undrain" or "remove"; fencing is the leader's own), forward.
  // Errors: invalid invalid_request for another change, then as above.
  caf::replies_to<propose_atom, broker_atom, std::string, std::string, bool>::with<int64_t, int64_t>,
  // Proposes a `broker` register entry (docs/metadata.md "Joining"): broker
  // id, cluster, client and Kafka host:port ("" = not served), forward.
  // Errors: invalid invalid_request for an empty cluster address, then as above.
  caf::replies_to<propose_atom, register_atom, std::string, std::string, std::string, std::string,
                  bool>::with<int64_t, int64_t>,
  // Proposes a `move` entry (raft::move_entry as its JSON payload text,
  // docs/cluster.md "Moves in the log"), forward. Errors: invalid
  // invalid_request for a payload that is not a move entry; conflict
  // move_state_changed when it committed as a no-op (the move's state or
  // the partition's owner epoch was not what it expected); unavailable
  // proposal_outcome_unknown when it was compacted before it was settled
  // here (read the image); then as above.
  caf::replies_to<propose_atom, move_atom, std::string, bool>::with<int64_t, int64_t>,
  // Proposes a `txn` entry (raft::txn_entry as its JSON payload text,
  // docs/transactions.md "Coordinator state"), forward. Errors: invalid
  // invalid_request for a payload that is not a txn entry; conflict
  // txn_state_changed when it committed as a no-op (the id's record was
  // not at the version it expected); unavailable proposal_outcome_unknown when it
  // was compacted before it was settled here (read the image); then as above.
  caf::replies_to<propose_atom, txn_atom, std::string, bool>::with<int64_t, int64_t>,
  // This broker's own endpoints (cluster, client, Kafka host:port), sent once
  // its listeners are bound. A broker that is not a voter registers them
  // through the voters until its register entry is applied here, and again
  // whenever the image names other endpoints for it.
  caf::reacts_to<register_atom, std::string, std::string, std::string>,
  // Internal: a forwarded proposal's answer (forward id, HTTP status, body).
  caf::reacts_to<step_atom, int64_t, int32_t, std::string>,
  caf::replies_to<status_atom>::with<std::string>>;

struct raft_node_settings {
  std::string broker_id;
  /// The voters (Cluster.Raft.Voters), this broker included unless it joins
  /// as a learner; empty = this broker and every peer.
  std::vector<std::string> voters;
  /// Every other voter, each with a client of its own for Raft traffic.
  std::vector<transport::cluster_peer> peers;
  /// Makes the Raft peer (token and a client of its own) of a broker that
  /// registered, from its id and cluster host:port; a null client when the
  /// address is unusable. Unset: only `peers` are ever sent to.
  std::function<transport::cluster_peer(const std::string& id, const std::string& address)> connect;
  /// Called (on the raft node's thread) with the applied broker standing
  /// after every batch that applied a `broker` entry or a snapshot, and once
  /// at start: the peer directory learns the registered brokers. Must not block.
  std::function<void(std::shared_ptr<const broker_standing>)> on_brokers;
  int election_timeout_ms = 1000;  ///< Cluster.Raft.ElectionTimeoutMs
  int heartbeat_ms = 500;          ///< Cluster.Raft.HeartbeatMs
  int max_log_entries = 512;       ///< Cluster.Raft.MaxLogEntries
  /// Deadline of a proposal (commit and apply), and of a forwarded one.
  std::chrono::milliseconds proposal_timeout{5000};
  /// How long a proposal made while no leader is known waits for one to be
  /// elected before it is answered unavailable no_controller (a forwarded proposal,
  /// forward_to_leader false, is answered at once).
  std::chrono::milliseconds leader_wait{5000};
  /// Called (on the raft node's thread) with the applied image after every
  /// batch that applied entries, and once at start: the broker creates,
  /// grows or deletes its local copies to match (cluster/topic_sync.hpp), so
  /// a topic exists on every broker once its entry is applied there and is
  /// gone once its deletion is. Must not block.
  std::function<void(const owner_view&)> on_topics;
  /// Cluster.Raft.SessionTimeoutMs: the leader fences a peer it has not heard
  /// from for this long (a `broker` entry) and unfences it once it answers
  /// again (docs/metadata.md "Liveness"). Raft's own traffic is the heartbeat.
  int session_timeout_ms = 9000;
  /// Cluster.Raft.LeaseMs: the broker lease (docs/shared-storage.md "The
  /// lease"), kept by cluster::broker_lease after every step, tick and batch.
  int lease_ms = 3000;
  /// Where the lease's deadline is published for other threads; null = the
  /// process's gate (cluster::lease_gate::process()).
  cluster::lease_gate* lease_gate = nullptr;
};

/// Logical tick length and tick counts derived from the settings: a tick is
/// HeartbeatMs / 5 (at least 5 ms), so the heartbeat is 5 ticks and the
/// election timeout ElectionTimeoutMs / tick ticks (at least 6).
struct raft_timing {
  std::chrono::milliseconds tick{100};
  uint32_t heartbeat_ticks = 5;
  uint32_t election_ticks = 10;
};
raft_timing timing_of(const raft_node_settings& s);

/// Opens the store under `data_dir` and publishes the ownership table it
/// holds (snapshot plus committed entries) to `owners`, before any request
/// is served. "" or the error naming the file (a corrupt store stops the boot).
std::string open_raft_store(const std::string& data_dir, std::unique_ptr<raft::raft_store>& store,
                            owner_view& owners);

/// Publishes an applied table (owners and topics) to `view`.
void publish_image(owner_view& view, const raft::ownership_state& table);

/// Spawns the raft node (detached: it fsyncs) with an opened store.
raft_actor spawn_raft_node(caf::actor_system& sys, raft_node_settings settings, std::unique_ptr<raft::raft_store> store,
                           std::shared_ptr<owner_view> owners, std::shared_ptr<raft_view> view, registry_actor reg);

}  // namespace moonmq

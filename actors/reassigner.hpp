#pragma once
// The reassigner: runs the partition moves whose source is this broker
// (DESIGN §3, MOVE steps 1–6; the protocol, the journal and the restart
// rules are in docs/cluster.md). One per broker, detached: every step is
// journaled with an fsync before it starts.
//
//   queued → copying (ensure + copy batches, interleaved with live traffic)
//          → cutover (seal the source, ownership → destination, durable)
//          → draining (the tail written during the copy goes across)
//          → offsets (group offsets pushed, higher wins; the destination
//                     fsyncs, checks its log end and confirms ownership)
//          → done
// Failures before cutover end `failed` and remove the destination's partial
// copy; a failed drain rolls ownership back to the source. Once the
// destination was asked to confirm, the move only goes forward: it retries
// until the destination confirms, so a lost answer can never leave two
// owners. Peers are called over HTTP (peers/peer_survey.hpp); their
// answers come back as step messages.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/catalog_view.hpp"
#include "actors/cluster_state.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/move_destination.hpp"
#include "actors/registry.hpp"
#include "peers/peer_directory.hpp"

namespace moonmq {

using reassigner_actor = caf::typed_actor<
  // Queues a move of (topic, partition) from this broker to broker `to`
  // under controller (epoch, id); epoch 0 = this broker's fence decides.
  // Replies the journal row (JSON text, docs/cluster-api.md). Errors (coded, by
  // kind): invalid internal_topic / invalid_request / unknown_broker,
  // not_found unknown_partition, misdirected not_owner, conflict
  // move_in_progress. Then the move's origin ("operator" or "balancer")
  // and its reason (cluster::valid_move_reason; "" = none), both
  // journaled, and its submission token ("" = none): a token this
  // reassigner queued a move for is answered with that move's row
  // (cluster::move_request).
  caf::replies_to<move_atom, std::string, int32_t, std::string, int64_t, std::string, std::string,
                  std::string, std::string>::with<std::string>,
  // Cancels the unfinished move of (topic, partition). Replies the row;
  // errors: not_found no_move, conflict past_cutover.
  caf::replies_to<cancel_atom, std::string, int32_t>::with<std::string>,
  // Every journal row: a JSON array text.
  caf::replies_to<list_atom>::with<std::string>,
  // Internal: continue move `move_id` if its sequence number still matches.
  caf::reacts_to<step_atom, std::string, int64_t>,
  // Internal: a peer's answer to a move's request (move_id, sequence,
  // HTTP status or 0, body, error text).
  caf::reacts_to<step_atom, std::string, int64_t, int32_t, std::string, std::string>,
  // Internal: the copy's throttle wait is over (move_id, window generation).
  caf::reacts_to<copy_atom, std::string, int64_t>,
  // Internal: the destination's answer to one append of the copy's window
  // (move_id, window generation, first offset, HTTP status or 0, body, error).
  caf::reacts_to<copy_atom, std::string, int64_t, int64_t, int32_t, std::string, std::string>,
  // Internal: compare the journal with the metadata log (every 500 ms).
  caf::reacts_to<tick_atom>,
  // Internal, shared storage: a new image was applied; confirm the moves
  // to this broker whose cutover it holds (confirm_own_moves).
  caf::reacts_to<follow_atom>,
  caf::replies_to<status_atom>::with<std::string>>;

struct reassigner_settings {
  std::string data_dir;
  std::string broker_id;
  int64_t batch_bytes = 262144;            ///< Cluster.BatchBytes: bytes per copy request
  /// Cluster.MoveWindow: copy requests of one move in flight at once; the
  /// destination applies them in offset order (at most 16 wait there).
  int copy_window = 4;
  int64_t throttle_bytes_per_sec = 0;      ///< Cluster.MoveThrottleBytesPerSec; 0 = unlimited
  int max_concurrent = 2;                  ///< Cluster.MaxConcurrentMoves
  std::chrono::milliseconds peer_timeout{5000};  ///< Cluster.PeerTimeout, per request
  /// With Raft: how long a control-plane request waits for a known leader
  /// to name in X-Controller-Id before it is sent anyway (and refused).
  std::chrono::milliseconds leader_wait{5000};
  /// Cluster.MoveConfirmTimeoutSeconds: with Raft, how long a move may sit
  /// in `offsets` without the destination confirming before the source
  /// takes the partition back by a conditional owner change (docs/metadata.md
  /// "Owner epochs"); 0 = never (retry for ever, as without Raft).
  std::chrono::milliseconds confirm_timeout{std::chrono::seconds(120)};
  /// The other brokers (configured and registered at runtime).
  std::shared_ptr<transport::peer_directory> peers = std::make_shared<transport::peer_directory>();
  /// The current Raft term and leader, stamped on a move's control-plane
  /// requests (null = the move's own epoch; unit tests).
  std::shared_ptr<raft_view> raft_status;
  /// This broker's move destination actor: as the Raft leader driving the
  /// move of a fenced source to this broker, it asks it to confirm, as the
  /// source would have (docs/cluster.md "Moves in the log"); unset = such a
  /// move waits (unit tests).
  std::optional<move_destination_actor> destination;
  /// Storage.SharedDir is set (docs/shared-storage.md "Moves and failover"):
  /// a move copies nothing. The destination's ensure only seals; the copy,
  /// the drain and the destination's catch-up are skipped; `done` leaves
  /// the source's files alone (later epochs read them).
  bool shared = false;
};

/// Opens the move journal under `data_dir` to check it before the node
/// starts: "" or the error naming the file.
std::string check_move_journal(const std::string& data_dir);

/// Spawns the reassigner (detached). It opens the journal and applies the
/// restart rules to every unfinished move before taking requests.
reassigner_actor spawn_reassigner(caf::actor_system& sys, reassigner_settings settings,
                                  std::shared_ptr<catalog_view> catalog, std::shared_ptr<owner_view> owners,
                                  cluster_state_actor state, group_actor groups, registry_actor reg);

}  // namespace moonmq

#pragma once
// raft_core: the pure Raft state machine of one controller node, in the
// style of etcd raft. No clocks, sockets, threads or files: the driver feeds
// logical ticks, received messages and proposals, and drains ready() batches
// (see raft/ready.hpp for the persist-then-send-then-apply contract).
//
// Algorithm sources: Raft paper (Ongaro & Ousterhout 2014) Figure 2 and §5
// (election, replication, commit rule of §5.4.2 / Figure 8), §7 (snapshots);
// Ongaro's thesis §9.6 (pre-vote), §6.2/§9.6 (check-quorum and leader
// stickiness: a node that heard from a leader within the minimum election
// timeout ignores vote requests), §5.3 end-note (fast back-off with a
// conflict-term hint).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "raft/messages.hpp"
#include "raft/ownership_state.hpp"
#include "raft/raft_log.hpp"
#include "raft/ready.hpp"
#include "raft/result.hpp"
#include "raft/types.hpp"

namespace moonmq::raft {

/// Static configuration of one core. Ticks are logical: the driver decides
/// what a tick is (raft_node: one tick per HeartbeatMs / 2, say).
struct core_config {
  node_id self;
  /// Every voter (Cluster.Raft.Voters: static, DESIGN §5); `self` unless it
  /// is a learner.
  std::vector<node_id> members;
  /// Non-voting members known at open (the brokers that registered; Raft
  /// thesis §4.2.1 "catching up", etcd's learners): the leader replicates
  /// the log to them but their copies never count towards commit or
  /// check-quorum, and a learner never campaigns. `self` is either a member
  /// or listed here. Every broker a register entry names (in the applied
  /// state) is a learner too, from the batch that applies the entry.
  std::vector<node_id> learners;
  /// Minimum election timeout in ticks; each wait is drawn uniformly from
  /// [election_ticks, 2 * election_ticks) (Raft paper §5.2). Also the
  /// check-quorum window (a leader steps down once a majority has been
  /// silent this long, checked every tick) and the leader-stickiness window.
  uint32_t election_ticks = 10;
  /// Leader heartbeat period in ticks; must be < election_ticks.
  uint32_t heartbeat_ticks = 2;
  /// Pre-vote phase before each election (thesis §9.6).
  bool pre_vote = true;
  /// Check-quorum on the leader plus leader stickiness on followers (thesis §6.2, §9.6).
  bool check_quorum = true;
  /// Compact once more than this many entries are held and some are applied (Cluster.Raft.MaxLogEntries).
  std::size_t max_log_entries = 512;
  /// Upper bound on entries carried by one append_request.
  std::size_t max_entries_per_append = 64;
  /// Seed of the election-timeout RNG (splitmix64); same seed + same inputs = same outputs.
  uint64_t seed = 1;
};

/// Role of a node (pre_candidate = running the pre-vote phase).
enum class role { follower, pre_candidate, candidate, leader };
const char* to_string(role r);

class raft_core {
 public:
  /// Builds a core from its durable image (a fresh node passes a default
  /// persisted_state). Errors: errc::invalid_argument for a bad config (self
  /// not a member, duplicate or invalid ids, heartbeat_ticks >= election_ticks,
  /// zero limits); errc::corrupt_state when `restored` breaks its invariant
  /// or votes for a non-member.
  static result<raft_core> open(core_config cfg, const persisted_state& restored);

  /// Advances logical time by one tick: followers and candidates may start an
  /// election; the leader sends heartbeats and runs check-quorum.
  void tick();

  /// Handles one received message. Messages not addressed to this node, from
  /// nodes that are neither members nor learners, or from itself are ignored.
  void step(const message& m);

  /// True when this node votes (it is one of config().members).
  bool is_voter() const { return voter_; }

  /// Appends `payload` to the leader's log at the current term and returns its
  /// index (committed once it is applied in some later ready().committed).
  /// Errors: errc::not_leader with error::leader = the known leader ("" when unknown).
  result<log_index> propose(entry_payload payload);

  /// True when ready() would return a non-empty batch.
  bool has_ready() const;
  /// Takes the pending output (see raft/ready.hpp). Must be followed by
  /// advance() before the next ready(); step/tick/propose may be called in between.
  ready_batch ready();
  /// Acknowledges that the last ready() batch was persisted, sent and applied;
  /// compacts the log into a snapshot once it holds more than max_log_entries.
  void advance();

  role current_role() const { return role_; }
  term current_term() const { return term_; }
  const node_id& voted_for() const { return vote_; }
  /// Leader known in the current term ("" when unknown).
  const node_id& leader() const { return leader_; }
  log_index commit_index() const { return commit_; }
  /// Highest index handed out in ready().committed (or loaded via snapshot).
  log_index applied_index() const { return applied_; }
  const raft_log& log() const { return log_; }
  /// The applied ownership table (updated as ready() hands out committed entries).
  const ownership_state& state() const { return state_; }
  /// On the leader: ticks since `peer` last answered (reset when this node
  /// became leader); nullopt on a follower or for a node that is not a peer.
  /// The broker liveness of docs/metadata.md is read from it.
  std::optional<uint32_t> silent_ticks(const node_id& peer) const {
    auto it = progress_.find(peer);
    if (role_ != role::leader || it == progress_.end())
      return std::nullopt;
    return it->second.silent_ticks;
  }
  /// True when the entry at the commit index is of the current term. A
  /// leader's commit index covers every entry committed in earlier terms
  /// only from then on (Raft paper §5.4.2, §8: it commits its own term's
  /// first entry, the controller claim, in its first round).
  bool committed_in_term() const { return log_.term_at(commit_) == term_; }

  /// The last request sequence number this node gave out (append_request /
  /// snapshot_request `seq`; 0 before any). Numbers increase over the life
  /// of the core, across terms.
  uint64_t last_seq() const { return seq_; }
  /// On the leader: the highest request sequence number that a majority of
  /// the voters, this node included (it counts as having answered every
  /// request), answered in the current term; 0 while no majority has. With
  /// one voter: last_seq(). On a follower: 0. The leader's broker lease is
  /// measured from the send time of that request (docs/shared-storage.md
  /// "The lease"); learners never count.
  uint64_t quorum_answered_seq() const;

  /// The last append_request this node accepted from the leader of its
  /// current term (the stale-term ones are refused before). `count` changes
  /// with every one accepted, so a driver compares it across step() to tell
  /// whether the message it stepped was one. Snapshot requests carry no
  /// commit index and are not counted.
  struct leader_contact {
    uint64_t count = 0;            ///< append_requests accepted since open()
    term leader_term;              ///< the term they were accepted in
    log_index commit;              ///< the commit index the last one carried
    /// The entry at `commit` is in this node's log and of `leader_term`: the
    /// leader had committed an entry of its own term, so `commit` covers
    /// every entry committed before it sent the message.
    bool commit_in_term = false;
    /// The `echo` the last one carried: the stamp of an answer of this
    /// node's that the leader received (0 = none). The follower's lease
    /// renews from that answer's send time, never from the receipt.
    uint64_t echo = 0;
  };
  const leader_contact& last_leader_contact() const { return contact_; }

  /// The latest snapshot (compaction or install), if any.
  const std::optional<snapshot>& latest_snapshot() const { return snapshot_; }
  /// Snapshots installed from a leader since start (a follower that fell
  /// behind the leader's compaction, Raft paper §7).
  uint64_t snapshots_installed() const { return snapshots_installed_; }
  const core_config& config() const { return cfg_; }
  std::size_t quorum() const { return cfg_.members.size() / 2 + 1; }
  /// The learners the leader replicates to (in id order).
  std::vector<node_id> learners() const;

 private:
  struct progress {
    log_index match;             ///< highest index known replicated on the peer
    log_index next;              ///< next index to send
    bool probe = true;           ///< probing (one append per heartbeat/reply) vs streaming
    uint32_t silent_ticks = 0;   ///< ticks since the peer last answered (check-quorum)
    log_index pending_snapshot;  ///< snapshot index in flight (0 = none)
    bool voter = true;           ///< false for a learner: never counted in a quorum
    uint64_t answered_seq = 0;   ///< highest request seq the peer answered in this term
    /// `stamp` of the last answer received from the peer in this term that
    /// carried one (0 = none), echoed in every later append_request to it.
    uint64_t echo = 0;
  };

  explicit raft_core(core_config cfg);

  // election (raft_core.cpp)
  void become_follower(term t, node_id leader);
  void become_leader();
  void campaign(bool pre);
  void poll(const node_id& from, bool granted, bool pre);
  void handle_vote_request(const message& m, const vote_request& v);
  void tick_election();
  void tick_leader();
  void reset_election_timer();
  uint64_t next_random();

  // replication (raft_core_replication.cpp)
  void handle_append(const message& m, const append_request& a);
  void handle_append_response(const message& m, const append_response& r);
  void handle_snapshot(const message& m, const snapshot_request& s);
  void handle_snapshot_response(const message& m, const snapshot_response& r);
  void send_append(const node_id& to, bool allow_empty);
  void send_snapshot(const node_id& to, progress& pr);
  void broadcast_append(bool allow_empty);
  bool maybe_commit();
  void maybe_compact();
  void mark_unstable(log_index i);
  /// Learners = config().learners + the registered brokers of state_ that
  /// are not removed, less members and self: a new learner's progress starts probing at the end of
  /// the log, a dropped one is no longer replicated to.
  void sync_learners();
  void send(const node_id& to, term t, message_body body);

  core_config cfg_;
  term term_;
  node_id vote_;
  node_id leader_;
  log_index commit_;
  log_index applied_;
  role role_ = role::follower;
  bool voter_ = true;
  raft_log log_;
  ownership_state state_;
  std::optional<snapshot> snapshot_;

  uint32_t election_elapsed_ = 0;
  uint32_t heartbeat_elapsed_ = 0;
  uint32_t randomized_timeout_ = 0;
  uint64_t rng_state_ = 0;
  std::map<node_id, bool> votes_;
  std::map<node_id, progress> progress_;
  uint64_t seq_ = 0;           ///< last request sequence number given out
  leader_contact contact_;

  // pending output
  hard_state last_hard_;                  ///< hard state as of the last ready()
  std::optional<log_index> unstable_from_;  ///< first log index not yet handed out for persistence
  bool snapshot_unsaved_ = false;
  uint64_t snapshots_installed_ = 0;
  std::vector<message> msgs_;
};

}  // namespace moonmq::raft

#pragma once
// broker_lease: the rules of a broker's lease (docs/shared-storage.md "The
// lease"), as a pure state machine. The driver (the raft_node actor, or a
// test) feeds it what its Raft node saw and the steady-clock times it saw
// them at; it never reads a clock itself. The resulting deadline is
// published to other threads through cluster/lease_gate.hpp.
//
// Rules:
//  - A follower's lease is renewed only by an append_request from the
//    leader of the current term that echoes the stamp of one of this
//    broker's own answers, and only once this broker has applied every
//    entry up to the commit index that message carried, and only when that
//    index is of the leader's term (until the leader commits an entry of
//    its own term, its commit index may lag entries the previous leader
//    committed; Raft paper §5.4.2). It then lasts until the echoed answer's
//    send time + lease: never from when the message was received (a leader
//    message may have waited in a socket for any time: a frozen process)
//    nor from when it was applied. The leader received that answer, so its
//    record of this broker's last answer is no earlier than the send time.
//  - The leader's lease lasts until the send time of the newest request
//    that a majority of the voters, the leader included, answered in its
//    term, + lease; once the leader has committed (and applied) an entry of
//    its term, for the same reason. With one voter it is valid while it
//    leads, from that first commit on.
//  - A term change, losing leadership, or any role other than follower
//    (with a known leader) or leader ends the lease at once. It never
//    outlives its deadline, and renewals never shorten it.
//
// Units: times are std::chrono::steady_clock time points (monotonic; never
// compared across brokers), terms, indexes and request numbers are the raw
// values of raft::term, raft::log_index and the Raft request `seq`.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>

namespace moonmq::cluster {

/// The part a broker plays in Raft, as far as the lease is concerned.
enum class lease_role {
  follower,  ///< follows a known leader (a learner too)
  leader,
  other,     ///< no leader known, campaigning, or Raft stopped
};

/// What the driver's Raft node knows after a step, a tick or a ready batch
/// (raft/core_lease.hpp builds it from a raft_core).
struct raft_position {
  uint64_t term = 0;
  lease_role role = lease_role::other;
  /// Highest log index whose entry is applied to the image others read.
  uint64_t applied = 0;
  /// Leader: the entry at the commit index is of `term` and is applied.
  bool committed_in_term = false;
  /// Leader: the highest request seq a majority of the voters answered
  /// (raft_core::quorum_answered_seq); 0 = none.
  uint64_t quorum_seq = 0;
  /// Leader: it is the only voter (every request is answered at once).
  bool alone = false;
};

class broker_lease {
 public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;

  /// Most request send times kept while no majority answers (oldest dropped
  /// first: an answer to a dropped one renews nothing, which is safe).
  static constexpr std::size_t max_sent = 4096;
  /// Most received messages kept while this broker catches up on applying
  /// (older dropped first, likewise safe).
  static constexpr std::size_t max_heard = 4096;
  /// Most answer stamps kept (oldest dropped first: an echo of a dropped
  /// one renews nothing, which is safe).
  static constexpr std::size_t max_answers = 4096;

  /// `lease` = Cluster.Raft.LeaseMs (> 0).
  explicit broker_lease(std::chrono::milliseconds lease) : lease_(lease) {}

  /// Updates the role and term, then renews what the position allows:
  /// follower messages whose commit index is now applied, and the leader's
  /// lease from the quorum's answers. A changed term or role ends the lease
  /// first (and forgets every message and request of the old one).
  void update(const raft_position& p);

  /// This broker, following, handed an answer stamped `at` (its send time,
  /// append_response / snapshot_response `stamp`) to the transport. Only
  /// these stamps renew, so an echo this broker never sent in this term
  /// (a garbled one, one from an earlier life of the process) renews
  /// nothing. Times must not decrease; an equal one is kept once. Ignored
  /// unless follower; a term or role change forgets them.
  void answer_sent(time_point at);

  /// An append_request from the leader of `term` carried commit index
  /// `commit` and echoed the stamp `echo` (a time given to answer_sent;
  /// time_point{} = none); `commit_in_term` as raft_core::leader_contact.
  /// Ignored unless this broker follows in `term` (call update() first when
  /// the message changed the term) and `echo` is one of its recorded
  /// stamps. Renews to `echo` + lease once `commit` is applied (at once
  /// when it already is): when the message arrives does not matter.
  void heard_from_leader(uint64_t term, uint64_t commit, bool commit_in_term, time_point echo);

  /// The leader handed request `seq` to the transport at `at` (or later:
  /// an earlier time only shortens the lease). Calls must come in
  /// increasing `seq`; others are ignored. Ignored unless leader.
  void request_sent(uint64_t seq, time_point at);

  /// Ends the lease now (Raft stopped on this broker).
  void end();

  /// time_point::min() when there is no lease; time_point::max() for a
  /// leader alone.
  time_point deadline() const { return deadline_; }
  /// True while now < deadline().
  bool valid(time_point now) const { return now < deadline_; }

  std::chrono::milliseconds length() const { return lease_; }
  uint64_t term() const { return term_; }
  lease_role role() const { return role_; }

 private:
  struct heard {
    uint64_t commit;
    time_point at;
  };
  struct sent {
    uint64_t seq;
    time_point at;
  };

  void renew(time_point from);
  void renew_heard();

  std::chrono::milliseconds lease_;
  uint64_t term_ = 0;
  lease_role role_ = lease_role::other;
  uint64_t applied_ = 0;
  time_point deadline_ = time_point::min();
  /// Follower: messages not yet covered by applied_, commit and echo time
  /// both increasing (one that needs at least as much applied for no later
  /// a renewal than another is dropped).
  std::deque<heard> heard_;
  /// Follower: stamps of the answers it sent in this term, increasing.
  std::deque<time_point> answers_;
  /// Leader: requests sent, seq and time both increasing.
  std::deque<sent> sent_;
};

}  // namespace moonmq::cluster

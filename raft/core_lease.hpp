#pragma once
// Glue between a raft_core and the broker lease (cluster/lease.hpp), shared
// by the raft_node actor and the lease simulation test so both drive the
// lease the same way. Header-only: moonmq_raft does not link
// moonmq_cluster; a user of this header links both.
//
// Driver loop (docs/shared-storage.md "The lease"):
//   t = receive time of a wire message (before it is stepped);
//   before = core.last_leader_contact().count;
//   core.step(m);  lease.update(lease_position(core, applied));
//   note_leader_contact(core, before, lease, t);
//   drain ready batches (persist, send, apply; lease.request_sent(seq, now)
//   for each request handed to the transport);
//   lease.update(lease_position(core, applied));   // renews once applied

#include <cstdint>
#include <variant>

#include "cluster/lease.hpp"
#include "raft/raft_core.hpp"

namespace moonmq::raft {

/// The lease's view of `core`. `applied` = the highest index the driver has
/// applied to the image others read (raft_core::applied_index() once the
/// ready batches are drained).
inline cluster::raft_position lease_position(const raft_core& core, log_index applied) {
  cluster::raft_position p;
  p.term = core.current_term().value;
  p.applied = applied.value;
  switch (core.current_role()) {
    case role::leader:
      p.role = cluster::lease_role::leader;
      break;
    case role::follower:
      p.role = core.leader().empty() ? cluster::lease_role::other : cluster::lease_role::follower;
      break;
    default:
      p.role = cluster::lease_role::other;
  }
  p.committed_in_term = core.committed_in_term() && applied >= core.commit_index();
  p.quorum_seq = core.quorum_answered_seq();
  p.alone = core.quorum() == 1;
  return p;
}

/// After core.step(): when the step accepted an append_request from the
/// leader (the contact count moved past `count_before`), tells the lease,
/// with `received` its receive time.
inline void note_leader_contact(const raft_core& core, uint64_t count_before, cluster::broker_lease& lease,
                                cluster::broker_lease::time_point received) {
  const auto& c = core.last_leader_contact();
  if (c.count == count_before)
    return;
  lease.heard_from_leader(c.leader_term.value, c.commit.value, c.commit_in_term, received);
}

/// The request sequence number of `m` when it is a leader's request
/// (append or snapshot), else 0.
inline uint64_t request_seq(const message& m) {
  if (const auto* a = std::get_if<append_request>(&m.body))
    return a->seq;
  if (const auto* s = std::get_if<snapshot_request>(&m.body))
    return s->seq;
  return 0;
}

}  // namespace moonmq::raft

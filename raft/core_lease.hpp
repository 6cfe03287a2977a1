#pragma once
// Glue between a raft_core and the broker lease (cluster/lease.hpp), shared
// by the raft_node actor and the lease simulation test so both drive the
// lease the same way. Header-only: moonmq_raft does not link
// moonmq_cluster; a user of this header links both.
//
// Driver loop (docs/shared-storage.md "The lease"):
//   before = core.last_leader_contact().count;
//   core.step(m);  lease.update(lease_position(core, applied));
//   note_leader_contact(core, before, lease);
//   drain ready batches (persist, send, apply; for each message handed to
//   the transport: stamp_answer(m, lease, now) and, for a request,
//   lease.request_sent(seq, now));
//   lease.update(lease_position(core, applied));   // renews once applied
// No receive time is involved: a follower renews from the send time of its
// own answer that the leader echoes.

#include <chrono>
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

/// A wire stamp (append_response / snapshot_response `stamp`, append_request
/// `echo`): steady_clock nanoseconds since the clock's epoch; 0 = none.
inline uint64_t to_stamp(cluster::broker_lease::time_point t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return ns > 0 ? static_cast<uint64_t>(ns) : 0;
}
inline cluster::broker_lease::time_point from_stamp(uint64_t stamp) {
  return cluster::broker_lease::time_point{
    std::chrono::duration_cast<cluster::broker_lease::clock::duration>(std::chrono::nanoseconds(stamp))};
}

/// After core.step(): when the step accepted an append_request from the
/// leader (the contact count moved past `count_before`), tells the lease
/// the commit index it carried and the stamp it echoed (none = 0, which
/// renews nothing).
inline void note_leader_contact(const raft_core& core, uint64_t count_before, cluster::broker_lease& lease) {
  const auto& c = core.last_leader_contact();
  if (c.count == count_before || c.echo == 0)
    return;
  lease.heard_from_leader(c.leader_term.value, c.commit.value, c.commit_in_term, from_stamp(c.echo));
}

/// Stamps `m` with `now` when it is an answer to a leader's request
/// (append or snapshot response) and records the stamp with the lease.
/// Call as the message is handed to the transport, with `now` read then
/// or earlier (an earlier stamp only shortens the lease it can buy).
inline void stamp_answer(message& m, cluster::broker_lease& lease, cluster::broker_lease::time_point now) {
  uint64_t stamp = to_stamp(now);
  if (auto* a = std::get_if<append_response>(&m.body))
    a->stamp = stamp;
  else if (auto* s = std::get_if<snapshot_response>(&m.body))
    s->stamp = stamp;
  else
    return;
  if (stamp != 0)
    lease.answer_sent(from_stamp(stamp));
}

/// The request sequence number of `m` when it is a leader's request
/// (append or snapshot), else 0.
/// Clears the echo of an outgoing append request (it then renews no
/// lease). A leader withholds it while its own lease has lapsed (cut off
/// from the majority: its check-quorum counts ticks, which a stalled actor
/// stretches, while the lease is steady-clock time) and to a broker its
/// applied image fences, so that a fenced broker's lease runs out whatever
/// it answers until it is unfenced in log order (docs/shared-storage.md
/// "The lease").
inline void withhold_echo(message& m) {
  if (auto* a = std::get_if<append_request>(&m.body))
    a->echo = 0;
}

inline uint64_t request_seq(const message& m) {
  if (const auto* a = std::get_if<append_request>(&m.body))
    return a->seq;
  if (const auto* s = std::get_if<snapshot_request>(&m.body))
    return s->seq;
  return 0;
}

}  // namespace moonmq::raft

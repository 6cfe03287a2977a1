#pragma once
// The output batch of raft_core (etcd raft's Ready) and the durable image a
// store keeps, with the one rule that turns a batch into that image.
//
// Contract for the driver (the raft_node actor, the simulation, tests):
//   1. rd = core.ready();
//   2. persist rd: snapshot, then log truncation + entries, then hard state,
//      and fsync — apply_ready() defines the resulting durable image;
//   3. only then send rd.messages (votes and append acks depend on step 2);
//   4. if rd.snap is set, load it into the state machine; then apply
//      rd.committed in order;
//   5. core.advance().
// A crash anywhere in 2-4 is safe: what was persisted is reloaded by
// raft_core::open(); unsent messages are simply lost.

#include <optional>
#include <vector>

#include "raft/messages.hpp"
#include "raft/result.hpp"
#include "raft/types.hpp"

namespace moonmq::raft {

struct ready_batch {
  /// New hard state to persist (unset when unchanged since the last batch).
  std::optional<hard_state> hard;
  /// Snapshot to persist (after a local compaction or an installed snapshot).
  std::optional<snapshot> snap;
  /// When set, drop every durable entry with index >= *truncate_from, then
  /// append `entries` (whose first index, if any, equals *truncate_from).
  std::optional<log_index> truncate_from;
  std::vector<log_entry> entries;
  /// Messages to send once everything above is durable.
  std::vector<message> messages;
  /// Committed entries to apply, in index order, once everything above is durable.
  std::vector<log_entry> committed;

  bool empty() const {
    return !hard && !snap && !truncate_from && messages.empty() && committed.empty();
  }
};

/// What a store holds durably; raft_core::open() starts from it.
/// Invariant: entries are contiguous and start at snapshot index + 1 (1
/// without a snapshot); hard.commit <= last entry index.
struct persisted_state {
  hard_state hard;
  std::optional<snapshot> snap;
  std::vector<log_entry> entries;
};

/// Applies the durable part of `rd` to `p`, in order:
///  - snap: replaces the snapshot; entries <= its index are dropped; entries
///    after it are kept only when the entry at its index has its term
///    (local compaction) or the entries already start right after it (the
///    same snapshot again); otherwise all entries are dropped (install);
///    hard.commit is raised to the snapshot index if below it;
///  - truncate_from/entries: drops entries >= truncate_from, appends entries;
///  - hard: replaces the hard state.
/// Returns errc::invalid_argument (p unchanged up to the failing step) when
/// `entries` would leave a gap.
status apply_ready(persisted_state& p, const ready_batch& rd);

/// Checks the invariant above; errc::corrupt_state with a reason otherwise.
status check_persisted(const persisted_state& p);

}  // namespace moonmq::raft

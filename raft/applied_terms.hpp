#pragma once
// The terms of the most recently applied entries, and whether the applied
// table refused each (a lost compare-and-set), kept after the log has
// compacted them into a snapshot. A proposer learns whether its entry
// committed by comparing the term of the entry applied at its index with the
// term it proposed in (Raft paper §8: a proposal is "ours" when the entry
// at its index carries its term). The log keeps entries only until the next
// compaction (raft_core::maybe_compact compacts the whole applied prefix once
// the log holds more than Cluster.Raft.MaxLogEntries), so an entry applied in
// the batch that crossed the limit, or one whose proposer heard of its index
// only after it was applied (a proposal forwarded to the leader), would be
// gone before its proposer looked. Committed entries never change, so their
// terms stay valid for good. Pure.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "raft/types.hpp"

namespace moonmq::raft {

class applied_terms {
public:
  /// Keeps the terms of the last `capacity` applied entries (at least 1).
  explicit applied_terms(std::size_t capacity = default_capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// The last applied entries kept: 8,192 × 24 bytes. A proposal is settled
  /// in the flush that applies it (proposed here) or when the leader's
  /// answer arrives (forwarded), a few milliseconds later; 8,192 entries is
  /// over 4 s of the fastest metadata log measured (about 1,800 entries/s,
  /// bench/kafka/README.md "kafka_txn_bench"). A proposal settled later
  /// than that falls back to the applied table, as before.
  static constexpr std::size_t default_capacity = 8192;

  /// One applied entry as kept.
  struct applied {
    log_index index;
    term entry_term;
    bool refused = false;  ///< the applied table refused it (ownership_state::refused)
  };

  /// Notes that the entry at `index` was applied with `entry_term`, and
  /// whether it was refused. Indexes only grow (a snapshot installed in
  /// between skips some); one at or below the last noted is ignored.
  void remember(log_index index, term entry_term, bool refused) {
    if (!kept_.empty() && index <= kept_.back().index)
      return;
    kept_.push_back(applied{index, entry_term, refused});
    if (kept_.size() > capacity_)
      kept_.pop_front();
  }

  /// The applied entry at `index`, when it is still kept.
  std::optional<applied> find(log_index index) const {
    auto it = std::lower_bound(kept_.begin(), kept_.end(), index,
                               [](const applied& e, log_index i) { return e.index < i; });
    if (it == kept_.end() || it->index != index)
      return std::nullopt;
    return *it;
  }

  std::size_t size() const { return kept_.size(); }

private:
  std::size_t capacity_;
  std::deque<applied> kept_;
};

}  // namespace moonmq::raft

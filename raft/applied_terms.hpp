#pragma once
// The terms of the most recently applied entries, kept after the log has
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
#include <utility>

#include "raft/types.hpp"

namespace moonmq::raft {

class applied_terms {
public:
  /// Keeps the terms of the last `capacity` applied entries (at least 1).
  explicit applied_terms(std::size_t capacity = default_capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// The last applied entries whose terms are kept: 8,192 × 16 bytes, far
  /// more entries than a proposal can be applied ahead of its proposer's
  /// look within the proposal timeout at any rate the log sustains.
  static constexpr std::size_t default_capacity = 8192;

  /// Notes that the entry at `index` was applied with `entry_term`. Indexes
  /// only grow (a snapshot installed in between skips some); one at or
  /// below the last noted is ignored.
  void remember(log_index index, term entry_term) {
    if (!kept_.empty() && index <= kept_.back().first)
      return;
    kept_.emplace_back(index, entry_term);
    if (kept_.size() > capacity_)
      kept_.pop_front();
  }

  /// The term of the applied entry at `index`, when it is still kept.
  std::optional<term> term_of(log_index index) const {
    auto it = std::lower_bound(kept_.begin(), kept_.end(), index,
                               [](const std::pair<log_index, term>& e, log_index i) { return e.first < i; });
    if (it == kept_.end() || it->first != index)
      return std::nullopt;
    return it->second;
  }

  std::size_t size() const { return kept_.size(); }

private:
  std::size_t capacity_;
  std::deque<std::pair<log_index, term>> kept_;
};

}  // namespace moonmq::raft

#pragma once
// In-memory replicated log of one node: the entries after the snapshot
// (compacted prefix) with index arithmetic. Pure; the durable copy lives in
// the store, fed from raft_core::ready().

#include <cstddef>
#include <optional>
#include <vector>

#include "raft/types.hpp"

namespace moonmq::raft {

class raft_log {
 public:
  /// Index / term of the last entry folded into the snapshot (0/0 when none).
  log_index snapshot_index() const { return snap_index_; }
  term snapshot_term() const { return snap_term_; }
  /// Index of the first entry held in memory (snapshot_index() + 1).
  log_index first_index() const { return snap_index_.next(); }
  /// Index of the last entry (snapshot_index() when no entries are held).
  log_index last_index() const { return snap_index_ + entries_.size(); }
  term last_term() const { return entries_.empty() ? snap_term_ : entries_.back().entry_term; }
  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }

  /// Term of the entry at `i`: term 0 for index 0, the snapshot term at
  /// snapshot_index(), nullopt when `i` is compacted away or past the end.
  std::optional<term> term_at(log_index i) const;
  /// True when the entry at `i` exists (or is the snapshot point) with term `t`.
  bool matches(log_index i, term t) const;
  /// Entry at `i`; requires first_index() <= i <= last_index().
  const log_entry& at(log_index i) const;

  /// Raft paper §5.4.1: a log ending (last_term, last_index) is at least as
  /// up-to-date as this one.
  bool is_up_to_date(log_index last, term last_t) const;

  /// First index of the run of entries with the same term as `i`, scanning
  /// back from `i` (not below first_index()). Requires i in the held range.
  log_index first_index_of_term(log_index i) const;

  /// Entries [from, to] (clamped to the held range), at most `max` of them.
  std::vector<log_entry> slice(log_index from, log_index to, std::size_t max) const;

  /// Appends `e`; requires e.index == last_index() + 1.
  void append(log_entry e);
  /// Drops entries with index >= i; requires i > snapshot_index().
  void truncate_from(log_index i);
  /// Folds entries <= i into the snapshot point (i, t); entries after i stay.
  /// Requires snapshot_index() < i <= last_index().
  void compact(log_index i, term t);
  /// Drops every entry and sets the snapshot point to (i, t) (snapshot install).
  void reset(log_index i, term t);

 private:
  log_index snap_index_;
  term snap_term_;
  std::vector<log_entry> entries_;
};

}  // namespace moonmq::raft

#pragma once
// Per-broker lists of movable replicas sorted by load on one resource, used
// by goals to find "the replica whose load is closest to x" in O(log n).
// Built once per goal run (O(R log(R/B))). Moves are recorded lazily: a
// replica that left a broker stays in its list as a tombstone (skipped, the
// list compacted once half of it is dead) and arrivals wait in a pending
// list merged in when the broker is next searched, so a move costs O(1)
// instead of shifting thousands of entries.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "goals/snapshot.hpp"
#include "goals/types.hpp"

namespace moonmq::goals {

class replica_load_index {
 public:
  /// Movable replicas of eligible brokers, sorted by (load on `r`, then the
  /// sum of the measured loads, then index) so that among equal loads the
  /// lightest replica comes first.
  replica_load_index(const snapshot& s, resource r);

  /// Calls `visit(replica, load)` for replicas on `b` in order of increasing
  /// |load − target|, at most `limit` of them, until `visit` returns true
  /// (then returns true). Returns false when no call returned true.
  /// Only replicas currently owned by `b` are visited.
  template <class Visit>
  bool nearest(broker_index b, double target, std::size_t limit, Visit&& visit);

  /// Records that `r` moved from `from` to `to` (already applied to the snapshot).
  void on_move(replica_index r, broker_index from, broker_index to);

 private:
  struct entry {
    double load;
    double tie;
    std::uint32_t replica;
  };
  static bool less(const entry& a, const entry& b) {
    if (a.load != b.load) return a.load < b.load;
    if (a.tie != b.tie) return a.tie < b.tie;
    return a.replica < b.replica;
  }
  entry make_entry(std::uint32_t r) const;
  /// Drops tombstones of `b` and merges its pending arrivals.
  void compact(std::uint32_t b);

  const snapshot* s_;
  resource res_;
  std::vector<std::vector<entry>> lists_;
  std::vector<std::vector<entry>> pending_;
  std::vector<std::size_t> dead_;
};

template <class Visit>
bool replica_load_index::nearest(broker_index b, double target, std::size_t limit, Visit&& visit) {
  if (!pending_[b.value].empty() || 2 * dead_[b.value] > lists_[b.value].size()) compact(b.value);
  const auto& list = lists_[b.value];
  std::size_t hi = 0;
  {
    std::size_t lo_i = 0, hi_i = list.size();
    while (lo_i < hi_i) {  // first entry with load >= target
      const std::size_t mid = (lo_i + hi_i) / 2;
      if (list[mid].load < target) lo_i = mid + 1; else hi_i = mid;
    }
    hi = lo_i;
  }
  std::size_t lo = hi;  // entries [0, lo) are below target, visited downwards
  std::size_t visited = 0;
  while (visited < limit && (lo > 0 || hi < list.size())) {
    bool take_hi;
    if (lo == 0) take_hi = true;
    else if (hi >= list.size()) take_hi = false;
    else take_hi = (list[hi].load - target) <= (target - list[lo - 1].load);
    const entry& e = take_hi ? list[hi++] : list[--lo];
    if (s_->owner(replica_index{e.replica}) != b) continue;  // tombstone: moved away
    ++visited;
    if (visit(replica_index{e.replica}, e.load)) return true;
  }
  return false;
}

}  // namespace moonmq::goals

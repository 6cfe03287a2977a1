#pragma once
// Per-broker lists of movable replicas sorted by load on one resource, used
// by goals to find "the replica whose load is closest to x" in O(log n).
// Built once per goal run (O(R log(R/B))). Moves are recorded lazily: a
// replica that left a broker stays in its list as a tombstone (skipped, the
// list compacted once half of it is dead or a search stepped over more than
// 64 of them) and arrivals wait in a pending
// list merged in when the broker is next searched, so a move costs O(1)
// instead of shifting thousands of entries.

#include <algorithm>
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
  /// Only replicas currently owned by `b` with load ≥ `min_load` are
  /// visited, whatever the target (a caller that cannot use lighter ones
  /// would otherwise spend its limit on them; with a target below
  /// `min_load` the search starts at the lightest replica ≥ `min_load`).
  template <class Visit>
  bool nearest(broker_index b, double target, std::size_t limit, Visit&& visit, double min_load = -1.0);

  /// Calls `visit(replica, load)` for at most `k` replicas on `b` spread
  /// evenly over its list (the middles of k equal slices, a moved-away entry
  /// replaced by the next one owned by `b`), lightest slice first, until
  /// `visit` returns true (then returns true). Gives a search candidates of
  /// every size when the nearest ones to a target all look alike.
  template <class Visit>
  bool spread(broker_index b, std::size_t k, Visit&& visit);

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
  /// First position in list[0, end) whose load is ≥ x (binary search).
  static std::size_t first_at_least(const std::vector<entry>& list, double x, std::size_t end) {
    std::size_t lo = 0, hi = end;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (list[mid].load < x) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
  /// Drops tombstones of `b` and merges its pending arrivals.
  void compact(std::uint32_t b);

  const snapshot* s_;
  resource res_;
  std::vector<std::vector<entry>> lists_;
  std::vector<std::vector<entry>> pending_;
  std::vector<std::size_t> dead_;
  std::vector<std::uint8_t> crowded_;  // the last search stepped over many tombstones
  static constexpr std::size_t kMaxSkipped = 64;
};

template <class Visit>
bool replica_load_index::nearest(broker_index b, double target, std::size_t limit, Visit&& visit, double min_load) {
  if (!pending_[b.value].empty() || crowded_[b.value] || 2 * dead_[b.value] > lists_[b.value].size()) compact(b.value);
  const auto& list = lists_[b.value];
  // [0, floor) are lighter than min_load. A target below min_load starts at
  // the floor: the entries between the two would all be skipped by the
  // caller and use up `limit`.
  const std::size_t floor = first_at_least(list, min_load, list.size());
  std::size_t hi = std::max(first_at_least(list, target, list.size()), floor);
  std::size_t lo = hi;  // entries [floor, lo) are below target, visited downwards
  std::size_t visited = 0, skipped = 0;
  bool hit = false;
  while (visited < limit && (lo > floor || hi < list.size())) {
    bool take_hi;
    if (lo <= floor) take_hi = true;
    else if (hi >= list.size()) take_hi = false;
    else take_hi = (list[hi].load - target) <= (target - list[lo - 1].load);
    const entry& e = take_hi ? list[hi++] : list[--lo];
    if (s_->owner(replica_index{e.replica}) != b) {  // tombstone: moved away
      ++skipped;
      continue;
    }
    ++visited;
    if (visit(replica_index{e.replica}, e.load)) {
      hit = true;
      break;
    }
  }
  // Searches aiming at one amount empty one stretch of the list: once a
  // search steps over many tombstones, the next one compacts first.
  if (skipped > kMaxSkipped) crowded_[b.value] = 1;
  return hit;
}

template <class Visit>
bool replica_load_index::spread(broker_index b, std::size_t k, Visit&& visit) {
  if (!pending_[b.value].empty() || crowded_[b.value] || 2 * dead_[b.value] > lists_[b.value].size()) compact(b.value);
  const auto& list = lists_[b.value];
  const std::size_t n = list.size();
  if (n == 0 || k == 0) return false;
  std::size_t next = 0;  // never visit an entry twice
  for (std::size_t i = 0; i < k; ++i) {
    std::size_t pos = std::max(next, (2 * i + 1) * n / (2 * k));
    while (pos < n && s_->owner(replica_index{list[pos].replica}) != b) ++pos;  // tombstone: moved away
    if (pos >= n) break;
    next = pos + 1;
    if (visit(replica_index{list[pos].replica}, list[pos].load)) return true;
  }
  return false;
}

}  // namespace moonmq::goals

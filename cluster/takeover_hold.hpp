#pragma once
// Shared storage: how long a broker waits before it takes over a partition
// that a move's source took back after the destination may have served it
// (docs/shared-storage.md "Take-back"). Pure and thread-safe; times are
// passed in (steady-clock milliseconds).

#include <limits>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace moonmq::cluster {

/// The hold is the failover's rule applied to one partition: the
/// destination may have acknowledged writes at the cutover's epoch until its
/// lease ran out, and its lease lasts at most `LeaseMs` past the last
/// leader message it renewed from. Every such message sent after the
/// take-back committed carries a commit index that includes it, and a lease
/// renews only once the image holds that index, so `LeaseMs` after the
/// take-back committed the destination acknowledges nothing more at that
/// epoch. A broker applies an entry only after it committed, so waiting
/// `LeaseMs + LeaseMarginMs` (the margin for clock rates, as the
/// controller's failover wait) on its own clock from the moment it first
/// sees the taken-back epoch is enough.
class takeover_hold {
public:
  explicit takeover_hold(int64_t hold_ms) : hold_ms_(hold_ms) {}

  /// True while a takeover of (`topic`, `partition`) at `epoch` must wait:
  /// from the first call for that epoch at `now_ms`, for `hold_ms`.
  /// Entries of an epoch whose hold ended are dropped when a later epoch of
  /// the partition is asked about.
  bool holding(const std::string& topic, int32_t partition, int64_t epoch, int64_t now_ms) {
    if (hold_ms_ <= 0)
      return false;
    std::lock_guard<std::mutex> g{mtx_};
    auto key = std::make_tuple(topic, partition, epoch);
    auto [it, first] = until_.emplace(key, now_ms + hold_ms_);
    if (first) {
      // One epoch per partition is held at a time, the newest: the map keeps
      // a partition's epochs next to each other.
      using limits = std::numeric_limits<int64_t>;
      until_.erase(until_.lower_bound(std::make_tuple(topic, partition, limits::min())), it);
      until_.erase(std::next(it), until_.upper_bound(std::make_tuple(topic, partition, limits::max())));
    }
    return now_ms < it->second;
  }
  /// Milliseconds a takeover of the partition at `epoch` still waits (0 when
  /// it does not, or was never asked about).
  int64_t remaining_ms(const std::string& topic, int32_t partition, int64_t epoch, int64_t now_ms) const {
    std::lock_guard<std::mutex> g{mtx_};
    auto it = until_.find(std::make_tuple(topic, partition, epoch));
    return it == until_.end() || it->second <= now_ms ? 0 : it->second - now_ms;
  }
  int64_t hold_ms() const { return hold_ms_; }

private:
  int64_t hold_ms_;
  mutable std::mutex mtx_;
  std::map<std::tuple<std::string, int32_t, int64_t>, int64_t> until_;
};

}  // namespace moonmq::cluster

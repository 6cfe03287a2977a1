#pragma once
// lease_gate: the broker lease's deadline (cluster/lease.hpp), published by
// the raft_node actor and read by any thread: the I/O workers check it
// after each write's fsync before they acknowledge it in shared-storage
// mode (docs/shared-storage.md "The lease"). One atomic 64-bit word, no
// lock; header-only and free of CAF, so storage code includes it without
// linking moonmq_cluster. The one place in cluster/ that reads a clock
// (valid_now, remaining_now): every other reader passes its own time.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>

namespace moonmq::cluster {

class lease_gate {
 public:
  using clock = std::chrono::steady_clock;

  /// Deadline values: no lease, and a lease without end (a leader alone).
  static constexpr int64_t none = std::numeric_limits<int64_t>::min();
  static constexpr int64_t unbounded = std::numeric_limits<int64_t>::max();

  /// The gate of this process: its one broker's lease.
  static lease_gate& process() {
    static lease_gate gate;
    return gate;
  }

  /// Publishes a deadline (steady_clock::time_point::min() and max() map to
  /// none and unbounded).
  void publish(clock::time_point deadline) noexcept {
    int64_t ns = deadline == clock::time_point::min()   ? none
                 : deadline == clock::time_point::max() ? unbounded
                                                        : to_ns(deadline);
    deadline_ns_.store(ns, std::memory_order_release);
  }

  /// The deadline in steady_clock nanoseconds since its epoch; `none` or
  /// `unbounded` as above.
  int64_t deadline_ns() const noexcept { return deadline_ns_.load(std::memory_order_acquire); }

  /// True while `now` is before the deadline. For an acknowledgement,
  /// `now` must be read after the write's fsync returned.
  bool valid(clock::time_point now) const noexcept { return valid(deadline_ns(), now); }
  /// valid(steady_clock::now()).
  bool valid_now() const noexcept { return valid(clock::now()); }

  /// Whole milliseconds left at `now` (rounded down, 0 once expired or
  /// without a lease); nullopt for an unbounded lease.
  std::optional<int64_t> remaining_ms(clock::time_point now) const noexcept {
    return remaining_ms(deadline_ns(), now);
  }
  std::optional<int64_t> remaining_now() const noexcept { return remaining_ms(clock::now()); }

  /// The same for a deadline already read (deadline_ns() or raft_status).
  static bool valid(int64_t deadline_ns, clock::time_point now) noexcept { return to_ns(now) < deadline_ns; }
  static std::optional<int64_t> remaining_ms(int64_t deadline_ns, clock::time_point now) noexcept {
    if (deadline_ns == unbounded)
      return std::nullopt;
    int64_t at = to_ns(now);
    if (deadline_ns <= at)
      return 0;
    return (deadline_ns - at) / 1000000;
  }

  static int64_t to_ns(clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }

 private:
  std::atomic<int64_t> deadline_ns_{none};
};

}  // namespace moonmq::cluster

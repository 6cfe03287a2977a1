#pragma once
// A sliding window of latencies: how slow something was over the last few
// seconds, as quantiles. The balancer compares brokers by it (docs/balancer.md
// "Slow brokers"): each broker reports the p99 of its group commit syncs and
// of its produce rounds over the last LatencyWindowSeconds.
//
// Samples go into log-spaced buckets (bucket k holds (b·g^(k−1), b·g^k] ms,
// b = 0.05 ms, g = 1.25, so a quantile is read high by at most 25%), kept
// per time slot; a summary merges the slots that are still inside the
// window. Thread-safe; time is passed in (monotonic ms), so tests drive it.

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace moonmq::util {

/// Quantiles of the samples inside the window (milliseconds; bucket upper
/// bounds, so never below the true value, except for samples past the last
/// bucket's bound, about 21 s, which read as that bound). All 0 when
/// `count` is 0.
struct latency_summary {
  uint64_t count = 0;
  double p50_ms = 0.0;
  double p90_ms = 0.0;
  double p99_ms = 0.0;
  double max_ms = 0.0;
};

class latency_window {
 public:
  /// Upper bound of the first bucket and the ratio between consecutive ones.
  static constexpr double kFirstBoundMs = 0.05;
  static constexpr double kGrowth = 1.25;
  /// Buckets: the last one holds everything above kFirstBoundMs·kGrowth^58 (≈ 21 s).
  static constexpr int kBuckets = 60;

  /// A window of `slots` slots of `slot_ms` each (≥ 1 each).
  latency_window(int slots, int64_t slot_ms);

  /// Adds one sample of `ms` (negative counts as 0) taken at `now_ms`.
  void record(double ms, int64_t now_ms);
  /// Adds the time from `start` to now on the monotonic clock, taken now.
  void record_since(std::chrono::steady_clock::time_point start);
  /// The samples taken in (now_ms − slots·slot_ms, now_ms].
  latency_summary summary(int64_t now_ms) const;

  /// Upper bound of the bucket holding `ms` (what a quantile reports for it).
  static double bucket_bound(double ms);

 private:
  struct slot {
    int64_t index = -1;  ///< now_ms / slot_ms of the samples it holds
    uint64_t count = 0;
    std::array<uint32_t, kBuckets> buckets{};
  };
  static int bucket_of(double ms);
  static double bound_of(int bucket);

  mutable std::mutex mu_;
  int64_t slot_ms_;
  std::vector<slot> slots_;
};

}  // namespace moonmq::util

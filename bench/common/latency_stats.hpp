#pragma once
// Percentiles of latency samples for benchmarks that print p50 / p99 / max.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace moonmq::bench {

/// The `p`-th quantile (0..1) of `v` by the nearest rank (index
/// round(p · (n − 1)) of the sorted samples); 0 for no samples.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  auto at = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(at, v.size() - 1)];
}

inline double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

/// One line "<what> n=N p50=… ms p99=… ms max=… ms" of samples in ms.
inline void print_stats(const char* what, const std::vector<double>& ms) {
  std::printf("%-28s n=%zu p50=%.1f ms p99=%.1f ms max=%.1f ms\n", what, ms.size(), percentile(ms, 0.5),
              percentile(ms, 0.99), max_of(ms));
}

/// Milliseconds from `t` to now on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace moonmq::bench

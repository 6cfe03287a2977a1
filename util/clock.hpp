#pragma once
// The two clocks moonmq reads, in milliseconds.

#include <chrono>
#include <cstdint>

namespace moonmq::util {

/// Milliseconds since the Unix epoch on the system clock: timestamps shown
/// to operators, written to journals and files, or compared across
/// brokers. May jump when the clock is set.
inline int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
    .count();
}

/// Milliseconds on the monotonic clock (steady_clock, arbitrary origin):
/// durations, timeouts and deadlines within one process. Never stored or
/// sent to another process.
inline int64_t monotonic_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

}  // namespace moonmq::util

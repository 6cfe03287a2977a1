#pragma once
// Per-replica load sampling (DESIGN §4): a ring buffer of the last `Window`
// samples; the replica is trusted once it holds `MinValid` samples; its load
// figure is the `Percentile` of the window with linear interpolation between
// closest ranks (the "R-7"/NumPy default definition: rank = p·(n−1)).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace moonmq::goals {

/// Window parameters (Autobalance.Window, MinValid, Percentile).
struct window_config {
  std::size_t window = 60;   // samples kept, ≥ 1
  std::size_t min_valid = 1; // samples needed before the figure is trusted
  double percentile = 0.9;   // in [0, 1]
};

/// Ring buffer of samples for one replica and one resource.
class load_window {
 public:
  /// `config.window` of 0 is treated as 1; percentile is clamped to [0, 1].
  explicit load_window(window_config config = {});

  /// Adds a sample, evicting the oldest once `window` samples are held.
  /// Non-finite or negative samples are ignored (returns false).
  bool add(double sample);

  /// Samples currently held (≤ window).
  std::size_t size() const { return count_; }
  /// True once size() ≥ min_valid (and at least one sample is held).
  bool trusted() const;
  /// The percentile of the held samples; nullopt when not trusted.
  std::optional<double> value() const;

 private:
  window_config config_;
  std::vector<double> ring_;
  std::size_t next_ = 0;
  std::size_t count_ = 0;
};

/// Percentile of `values` with linear interpolation (rank = p·(n−1));
/// 0 for an empty input. `values` is taken by value and sorted.
double percentile(std::vector<double> values, double p);

/// Turns a cumulative byte counter into a rate (bytes/s). The first
/// observation only primes the baseline; a counter that went down (restart)
/// or a clock that did not advance re-primes it and yields no rate, never a
/// negative one.
class counter_rate {
 public:
  /// `counter` cumulative bytes, `at_ms` sample time in milliseconds.
  std::optional<double> observe(std::uint64_t counter, std::int64_t at_ms);

 private:
  bool primed_ = false;
  std::uint64_t last_counter_ = 0;
  std::int64_t last_ms_ = 0;
};

}  // namespace moonmq::goals

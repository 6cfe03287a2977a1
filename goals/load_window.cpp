#include "goals/load_window.hpp"

#include <algorithm>
#include <cmath>

namespace moonmq::goals {

load_window::load_window(window_config config) : config_(config) {
  if (config_.window == 0) config_.window = 1;
  if (!(config_.percentile >= 0.0)) config_.percentile = 0.0;  // also catches NaN
  if (config_.percentile > 1.0) config_.percentile = 1.0;
  ring_.resize(config_.window, 0.0);
}

bool load_window::add(double sample) {
  if (!std::isfinite(sample) || sample < 0.0) return false;
  ring_[next_] = sample;
  next_ = (next_ + 1) % ring_.size();
  if (count_ < ring_.size()) ++count_;
  return true;
}

bool load_window::trusted() const { return count_ > 0 && count_ >= config_.min_valid; }

std::optional<double> load_window::value() const {
  if (!trusted()) return std::nullopt;
  std::vector<double> held;
  held.reserve(count_);
  // Before the ring is full the samples sit in [0, count_); afterwards all slots hold samples.
  for (std::size_t i = 0; i < count_; ++i) held.push_back(ring_[i]);
  return percentile(std::move(held), config_.percentile);
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  if (!(p >= 0.0)) p = 0.0;
  if (p > 1.0) p = 1.0;
  const double rank = p * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

std::optional<double> counter_rate::observe(std::uint64_t counter, std::int64_t at_ms) {
  if (!primed_ || counter < last_counter_ || at_ms <= last_ms_) {
    primed_ = true;
    last_counter_ = counter;
    last_ms_ = at_ms;
    return std::nullopt;
  }
  const double rate = static_cast<double>(counter - last_counter_) * 1000.0 /
                      static_cast<double>(at_ms - last_ms_);
  last_counter_ = counter;
  last_ms_ = at_ms;
  return rate;
}

}  // namespace moonmq::goals

#include "util/latency_window.hpp"

#include <algorithm>
#include <cmath>

namespace moonmq::util {

latency_window::latency_window(int slots, int64_t slot_ms)
    : slot_ms_(std::max<int64_t>(1, slot_ms)), slots_(static_cast<size_t>(std::max(1, slots))) {}

int latency_window::bucket_of(double ms) {
  if (!(ms > kFirstBoundMs))
    return 0;
  // Smallest k with kFirstBoundMs·kGrowth^k ≥ ms; rounding is corrected
  // below. Clamped as a double: +inf or a huge ratio must not reach the cast.
  const double exact = std::ceil(std::log(ms / kFirstBoundMs) / std::log(kGrowth));
  int k = static_cast<int>(std::clamp(exact, 0.0, static_cast<double>(kBuckets - 1)));
  while (k > 0 && bound_of(k - 1) >= ms)
    --k;
  while (k < kBuckets - 1 && bound_of(k) < ms)
    ++k;
  return k;
}

double latency_window::bound_of(int bucket) {
  return kFirstBoundMs * std::pow(kGrowth, bucket);
}

double latency_window::bucket_bound(double ms) {
  return bound_of(bucket_of(ms));
}

void latency_window::record(double ms, int64_t now_ms) {
  const int64_t index = now_ms / slot_ms_;
  std::lock_guard g{mu_};
  auto& s = slots_[static_cast<size_t>(index % static_cast<int64_t>(slots_.size()))];
  if (s.index != index) {
    s = slot{};
    s.index = index;
  }
  ++s.count;
  ++s.buckets[static_cast<size_t>(bucket_of(ms))];
}

void latency_window::record_since(std::chrono::steady_clock::time_point start) {
  const auto now = std::chrono::steady_clock::now();
  const std::chrono::duration<double, std::milli> took = now - start;
  record(took.count(), std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count());
}

latency_summary latency_window::summary(int64_t now_ms) const {
  const int64_t newest = now_ms / slot_ms_;
  const int64_t oldest = newest - static_cast<int64_t>(slots_.size()) + 1;
  std::array<uint64_t, kBuckets> merged{};
  latency_summary out;
  {
    std::lock_guard g{mu_};
    for (const auto& s : slots_) {
      if (s.index < oldest || s.index > newest)
        continue;
      out.count += s.count;
      for (int k = 0; k < kBuckets; ++k)
        merged[static_cast<size_t>(k)] += s.buckets[static_cast<size_t>(k)];
    }
  }
  if (out.count == 0)
    return out;
  // The q-quantile is the sample of rank ceil(q·count) (nearest rank).
  auto quantile = [&](double q) {
    const auto rank = static_cast<uint64_t>(std::max(1.0, std::ceil(q * static_cast<double>(out.count))));
    uint64_t seen = 0;
    for (int k = 0; k < kBuckets; ++k) {
      seen += merged[static_cast<size_t>(k)];
      if (seen >= rank)
        return bound_of(k);
    }
    return bound_of(kBuckets - 1);
  };
  out.p50_ms = quantile(0.50);
  out.p90_ms = quantile(0.90);
  out.p99_ms = quantile(0.99);
  out.max_ms = quantile(1.0);
  return out;
}

}  // namespace moonmq::util

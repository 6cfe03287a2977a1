#include "goals/band.hpp"

#include <algorithm>
#include <cmath>

#include "goals/goal.hpp"

namespace moonmq::goals {

double band::scale(const snapshot& s, broker_index b) const {
  if (!utilization) return 1.0 / s.weight(b);  // weights are >= kMinBrokerWeight
  const auto c = s.capacity(b, res);
  // Utilization mode is only chosen when every eligible broker has c > 0;
  // an ineligible broker without capacity is never compared.
  return c && *c > 0.0 ? 1.0 / *c : 0.0;
}

double band::outside(double n) const {
  if (n > upper + eps) return n - upper;
  if (n < lower - eps) return lower - n;
  return 0.0;
}

double band::lower_of(const snapshot& s, broker_index b) const {
  if (!whole || !s.weighted()) return lower;
  const double w = s.weight(b);
  return std::min(lower, std::floor(w * mean + w * eps) / w);
}

double band::upper_of(const snapshot& s, broker_index b) const {
  if (!whole || !s.weighted()) return upper;
  const double w = s.weight(b);
  return std::max(upper, std::ceil(w * mean - w * eps) / w);
}

double band::outside_of(const snapshot& s, broker_index b, double n) const {
  const double lo = lower_of(s, b), hi = upper_of(s, b);
  if (n > hi + eps) return n - hi;
  if (n < lo - eps) return lo - n;
  return 0.0;
}

band make_band(const snapshot& s, resource r, double deviation, double detect_threshold) {
  band b;
  b.res = r;
  const std::size_t n = s.eligible_count();
  if (!(deviation >= 0.0) || !std::isfinite(deviation)) deviation = 0.0;
  if (n == 0) return b;
  const double total = s.eligible_total(r);
  b.raw_mean = total / static_cast<double>(n);
  b.utilization = s.eligible_all_have_capacity(r) && s.eligible_capacity_total(r) > 0.0;
  b.mean = b.utilization ? total / s.eligible_capacity_total(r) : total / s.eligible_weight_total();
  if (!std::isfinite(b.mean) || b.mean < 0.0) b.mean = 0.0;
  b.lower = std::max(0.0, b.mean * (1.0 - deviation));
  b.upper = b.mean * (1.0 + deviation);
  b.eps = 1e-9 * b.mean + 1e-12;
  b.whole = r == resource::partition_count && !b.utilization;
  if (b.whole && !s.weighted()) {
    // Whole partitions: a band that holds neither floor(mean) nor ceil(mean)
    // (4 partitions on 3 brokers, mean 1.33, band [1.07, 1.6]) has no
    // integer in it and could never be met; it is widened to them. With
    // unequal weights each broker's limits are (lower_of, upper_of).
    b.lower = std::min(b.lower, std::floor(b.mean + b.eps));
    b.upper = std::max(b.upper, std::ceil(b.mean - b.eps));
  }
  b.idle = b.mean <= 0.0 || b.raw_mean < detect_threshold;
  return b;
}

double load_after(const snapshot& s, const action& a, broker_index b, resource r) {
  double v = s.load(b, r);
  const double x = s.load(a.replica, r);
  if (b == a.from) v -= x;
  if (b == a.to) v += x;
  if (a.type == action_type::swap) {
    const double y = s.load(a.other, r);
    if (b == a.to) v -= y;
    if (b == a.from) v += y;
  }
  return v;
}

}  // namespace moonmq::goals

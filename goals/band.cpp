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
  if (r == resource::partition_count && !b.utilization) {
    // Whole partitions: a band that holds neither floor(mean) nor ceil(mean)
    // (4 partitions on 3 brokers, mean 1.33, band [1.07, 1.6]) has no
    // integer in it and could never be met; it is widened to them. With
    // weights, a broker of weight w holds w·mean partitions at the mean,
    // so the band is widened to floor(w·mean)/w and ceil(w·mean)/w of each.
    auto widen = [&](double w) {
      b.lower = std::min(b.lower, std::floor(w * b.mean + w * b.eps) / w);
      b.upper = std::max(b.upper, std::ceil(w * b.mean - w * b.eps) / w);
    };
    if (!s.weighted())
      widen(1.0);  // no walk: goals make a band for every proposal they check
    else
      for (std::uint32_t i = 0; i < s.broker_count(); ++i)
        if (s.eligible(broker_index{i})) widen(s.weight(broker_index{i}));
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

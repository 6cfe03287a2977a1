#include "goals/slow_brokers.hpp"

#include <algorithm>

namespace moonmq::goals {

std::optional<double> slow_detector::latency_of(const broker_latency& l, std::uint64_t min_samples) {
  if (l.sync_count < min_samples) return std::nullopt;
  return l.sync_p90_ms;
}

std::vector<slow_verdict> slow_detector::update(const std::map<std::string, broker_latency>& reports,
                                                std::size_t cluster_size) {
  std::vector<slow_verdict> out;
  std::map<std::string, double> measured;
  for (const auto& [id, l] : reports) {
    slow_verdict v;
    v.broker = id;
    v.latency_ms = latency_of(l, rules_.min_samples);
    if (v.latency_ms) measured[id] = *v.latency_ms;
    out.push_back(std::move(v));
  }
  for (auto& v : out) {
    auto& st = state_[v.broker];
    if (!v.latency_ms) {
      v.streak = st.streak;
      continue;
    }
    st.last_ms = *v.latency_ms;
    // Suspect: at least ratio × the median of the others, and the floor.
    std::vector<double> others;
    for (const auto& [id, ms] : measured)
      if (id != v.broker) others.push_back(ms);
    if (!others.empty()) {
      std::sort(others.begin(), others.end());
      const std::size_t n = others.size();
      const double median = n % 2 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2.0;
      v.bar_ms = std::max(rules_.min_latency_ms, rules_.ratio * median);
      v.suspect = *v.latency_ms >= v.bar_ms;
      // Towards slow while suspect; towards cleared while below half the bar.
      const bool towards = st.slow ? *v.latency_ms < v.bar_ms / 2.0 : v.suspect;
      st.streak = towards ? st.streak + 1 : 0;
      if (st.streak >= std::max(1, rules_.passes)) {
        st.slow = !st.slow;
        st.streak = 0;
      }
    }
    v.streak = st.streak;
  }
  hold(cluster_size);
  for (auto& v : out) v.slow = slow(v.broker);
  return out;
}

void slow_detector::hold(std::size_t cluster_size) {
  std::vector<std::pair<double, std::string>> slow;
  for (const auto& [id, st] : state_)
    if (st.slow) slow.emplace_back(-st.last_ms, id);
  std::sort(slow.begin(), slow.end());  // slowest first, then by id
  const std::size_t cap = cluster_size == 0 ? 0 : (cluster_size - 1) / 2;
  held_.clear();
  for (std::size_t i = 0; i < slow.size() && i < cap; ++i) held_.insert(slow[i].second);
}

void slow_detector::forget(const std::string& broker) {
  state_.erase(broker);
  held_.erase(broker);
}

}  // namespace moonmq::goals

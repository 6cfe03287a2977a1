// Capacity goals (DISK_CAPACITY, NW_IN_CAPACITY, NW_OUT_CAPACITY): hard,
// load ≤ capacity × CapacityThreshold on every broker with a capacity.

#include <algorithm>
#include <cmath>
#include <limits>

#include "goals/builtin_goals.hpp"
#include "goals/load_index.hpp"
#include "goals/text.hpp"

namespace moonmq::goals {
namespace {

constexpr std::size_t kCandidatesPerPair = 32;

class capacity_goal final : public goal {
 public:
  explicit capacity_goal(resource r) : res_(r) {}

  std::string name() const override { return std::string(resource_name(res_)) + "_CAPACITY"; }
  bool hard() const override { return true; }
  goal_config default_config() const override { return default_capacity_config(res_); }

  goal_stats stats(const snapshot& s, const goal_config& cfg) const override {
    goal_stats st;
    st.basis = "utilization";
    st.upper = threshold(cfg);
    double load = 0.0, cap = 0.0;
    for (std::uint32_t i = 0; i < s.broker_count(); ++i) {
      const broker_index b{i};
      if (!s.eligible(b)) continue;
      const auto c = s.capacity(b, res_);
      if (!c) continue;
      load += s.load(b, res_);
      cap += *c;
      if (over(s, cfg, b, s.load(b, res_))) {
        st.violators.push_back(b);
        st.cost += s.load(b, res_) - limit(s, cfg, b);
      }
    }
    st.mean = cap > 0.0 ? load / cap : 0.0;
    st.idle = cap <= 0.0 && st.violators.empty();
    return st;
  }

  verdict check(const snapshot& s, const goal_config& cfg, const action& a) const override {
    for (broker_index b : {a.from, a.to}) {
      const double before = s.load(b, res_);
      const double after = load_after(s, a, b, res_);
      if (after > before && over(s, cfg, b, after))
        return verdict::no(name() + " would put " + s.broker_id(b) + " at " + format_amount(after) + " above limit " +
                           format_amount(limit(s, cfg, b)));
    }
    return verdict::yes();
  }

  std::string optimize(snapshot& s, const goal_config& cfg, optimize_context& ctx) const override;

 private:
  static double threshold(const goal_config& cfg) {
    return std::isfinite(cfg.capacity_threshold) && cfg.capacity_threshold >= 0.0 ? cfg.capacity_threshold : 0.8;
  }
  double limit(const snapshot& s, const goal_config& cfg, broker_index b) const {
    const auto c = s.capacity(b, res_);
    return c ? *c * threshold(cfg) : std::numeric_limits<double>::infinity();
  }
  bool over(const snapshot& s, const goal_config& cfg, broker_index b, double load) const {
    const double l = limit(s, cfg, b);
    return std::isfinite(l) && load > l + 1e-9 * l + 1e-12;
  }
  // Utilization used to rank partners; brokers without a capacity rank by
  // load relative to the largest declared capacity (never preferred over room).
  double util(const snapshot& s, broker_index b) const {
    const auto c = s.capacity(b, res_);
    if (c && *c > 0.0) return s.load(b, res_) / *c;
    return c ? std::numeric_limits<double>::infinity() : 1.0;
  }

  resource res_;
};

std::string capacity_goal::optimize(snapshot& s, const goal_config& cfg, optimize_context& ctx) const {
  const goal_stats st = stats(s, cfg);
  if (st.violators.empty()) {
    if (st.idle) return "no eligible broker declares a " + std::string(resource_name(res_)) + " capacity; nothing to check";
    return "every broker is within capacity x " + format_amount(threshold(cfg)) + "; nothing moved";
  }
  if (s.eligible_count() < 2) return "fewer than two eligible brokers; nothing can move";
  replica_load_index idx(s, res_);
  std::vector<std::uint8_t> stuck(s.broker_count(), 0);
  std::size_t moved = 0;
  bool capped = false;
  while (true) {
    if (ctx.full()) { capped = true; break; }
    broker_index v{};
    double worst = 0.0;
    bool found = false;
    for (std::uint32_t i = 0; i < s.broker_count(); ++i) {
      const broker_index b{i};
      if (stuck[i] || !s.eligible(b) || !over(s, cfg, b, s.load(b, res_))) continue;
      const double excess = (s.load(b, res_) - limit(s, cfg, b)) / *s.capacity(b, res_);
      if (!found || excess > worst) { worst = excess; v = b; found = true; }
    }
    if (!found) break;
    std::vector<std::pair<double, std::uint32_t>> partners;
    for (std::uint32_t i = 0; i < s.broker_count(); ++i) {
      const broker_index b{i};
      if (b != v && s.eligible(b)) partners.emplace_back(util(s, b), i);
    }
    std::sort(partners.begin(), partners.end());
    const double cap_v = *s.capacity(v, res_);
    const double need = s.load(v, res_) - limit(s, cfg, v);
    bool done = false;
    for (const auto& [u, pi] : partners) {
      const broker_index d{pi};
      const double room = limit(s, cfg, d) - s.load(d, res_);
      if (!(room > 0.0)) continue;
      double target = need;
      if (const auto cd = s.capacity(d, res_); cd && *cd > 0.0) {
        // Utilization-balancing amount between v and d (as in the distribution goals).
        const double sv = 1.0 / cap_v, sd = 1.0 / *cd;
        const double m = (s.load(v, res_) + s.load(d, res_)) / (cap_v + *cd);
        const double best = (sv * (s.load(v, res_) * sv - m) - sd * (s.load(d, res_) * sd - m)) / (sv * sv + sd * sd);
        if (std::isfinite(best)) target = std::max(target, best);
      }
      target = std::min(target, room);
      const std::string why = name() + ": " + s.broker_id(v) + " at " + format_amount(s.load(v, res_)) +
                              " above limit " + format_amount(limit(s, cfg, v)) + "; moved to " + s.broker_id(d);
      done = idx.nearest(v, target, kCandidatesPerPair, [&](replica_index r, double x) {
        if (x <= 0.0 || x > room) return false;
        const action a{action_type::move, r, v, d, {}};
        if (!ctx.propose(a, why)) return false;
        idx.on_move(r, v, d);
        return true;
      });
      if (done || ctx.full()) break;
    }
    if (done) ++moved;
    else stuck[v.value] = 1;
  }
  const goal_stats after = stats(s, cfg);
  std::string out = "moved " + std::to_string(moved) + " partition(s) for " + name();
  if (capped) out += "; stopped at max_actions";
  if (!after.violators.empty()) out += "; still over the limit: " + format_brokers(s, after.violators);
  return out;
}

}  // namespace

goal_config default_capacity_config(resource r) {
  goal_config c;
  c.capacity_threshold = 0.8;
  c.avg_deviation = 0.0;
  c.detect_threshold = 0.0;
  switch (r) {
    case resource::disk: c.priority = 100; break;
    case resource::nw_in: c.priority = 95; break;
    case resource::nw_out: c.priority = 90; break;
    case resource::partition_count: c.priority = 0; break;
  }
  return c;
}

std::unique_ptr<goal> make_capacity_goal(resource r) {
  if (r == resource::partition_count) return nullptr;
  return std::make_unique<capacity_goal>(r);
}

}  // namespace moonmq::goals

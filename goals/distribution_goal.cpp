// Distribution goals (NW_IN, NW_OUT, DISK, PARTITION_COUNT): see
// builtin_goals.hpp and docs/balancer.md for the algorithm.

#include <algorithm>
#include <cmath>
#include <limits>

#include "goals/band.hpp"
#include "goals/builtin_goals.hpp"
#include "goals/load_index.hpp"
#include "goals/text.hpp"

namespace moonmq::goals {
namespace {

constexpr std::size_t kCandidatesPerPair = 16;
constexpr int kMaxRounds = 3;

std::vector<broker_index> violators_of(const snapshot& s, const band& b) {
  std::vector<broker_index> out;
  if (b.idle) return out;
  for (std::uint32_t i = 0; i < s.broker_count(); ++i) {
    const broker_index bi{i};
    if (s.eligible(bi) && b.outside(b.norm(s, bi)) > 0.0) out.push_back(bi);
  }
  return out;
}

class distribution_goal final : public goal {
 public:
  explicit distribution_goal(resource r) : res_(r) {}

  std::string name() const override { return std::string(resource_name(res_)); }
  bool hard() const override { return false; }
  goal_config default_config() const override { return default_distribution_config(res_); }

  goal_stats stats(const snapshot& s, const goal_config& cfg) const override {
    const band b = make_band(s, res_, cfg.avg_deviation, cfg.detect_threshold);
    goal_stats st;
    st.basis = b.utilization ? "utilization" : "load";
    st.mean = b.mean;
    st.lower = b.lower;
    st.upper = b.upper;
    st.idle = b.idle;
    st.violators = violators_of(s, b);
    for (broker_index v : st.violators) st.cost += b.outside(b.norm(s, v));
    return st;
  }

  verdict check(const snapshot& s, const goal_config& cfg, const action& a) const override {
    const band b = make_band(s, res_, cfg.avg_deviation, cfg.detect_threshold);
    if (b.idle) return verdict::yes();
    double before = 0.0, after = 0.0;
    for (broker_index x : {a.from, a.to}) {
      if (!s.eligible(x)) continue;
      before += b.outside(b.norm(s, x));
      after += b.outside(load_after(s, a, x, res_) * b.scale(s, x));
    }
    if (after > before + b.eps)
      return verdict::no(name() + " would move a broker further outside [" + format_amount(b.lower) + ", " +
                         format_amount(b.upper) + "]");
    return verdict::yes();
  }

  std::string optimize(snapshot& s, const goal_config& cfg, optimize_context& ctx) const override;

 private:
  bool try_pair(snapshot& s, optimize_context& ctx, replica_load_index& idx, const band& det,
                const band& tgt, broker_index src, broker_index dst, bool shedding) const;

  resource res_;
};

bool distribution_goal::try_pair(snapshot& s, optimize_context& ctx, replica_load_index& idx,
                                 const band& det, const band& tgt, broker_index src, broker_index dst,
                                 bool shedding) const {
  const double ss = det.scale(s, src), sd = det.scale(s, dst);
  const double ns = det.norm(s, src), nd = det.norm(s, dst);
  const double m = det.mean;
  const double denom = ss * ss + sd * sd;
  if (!(denom > 0.0)) return false;
  // x* minimizes (ns − x·ss − m)² + (nd + x·sd − m)²: the raw amount that
  // brings both brokers closest to the mean.
  const double best = (ss * (ns - m) - sd * (nd - m)) / denom;
  if (!(best > 0.0) || !std::isfinite(best)) return false;
  const double trivial = res_ == resource::partition_count ? 0.0 : kTrivialFraction * det.mean;
  const double f0 = (ns - m) * (ns - m) + (nd - m) * (nd - m);
  const std::string why = std::string(resource_name(res_)) + ": " + s.broker_id(shedding ? src : dst) + " at " +
                          format_amount(shedding ? ns : nd) + (shedding ? " above " : " below ") +
                          format_amount(shedding ? tgt.upper : tgt.lower) + " (mean " + format_amount(m) +
                          "); " + (shedding ? "shed to " + s.broker_id(dst) : "filled from " + s.broker_id(src));
  return idx.nearest(src, best, kCandidatesPerPair, [&](replica_index r, double x) {
    if (std::fabs(x - best) >= best) return false;  // no longer improving; nearer ones were tried
    if (x * std::max(ss, sd) <= trivial || x <= 0.0) return false;
    const double ns2 = ns - x * ss, nd2 = nd + x * sd;
    const double f1 = (ns2 - m) * (ns2 - m) + (nd2 - m) * (nd2 - m);
    if (!(f1 < f0 - det.eps * det.eps)) return false;
    // Never create a new violation on the partner broker.
    if (shedding && nd2 > det.upper + det.eps) return false;
    if (!shedding && ns2 < det.lower - det.eps) return false;
    const action a{action_type::move, r, src, dst, {}};
    if (!ctx.propose(a, why)) return false;
    idx.on_move(r, src, dst);
    return true;
  });
}

std::string distribution_goal::optimize(snapshot& s, const goal_config& cfg, optimize_context& ctx) const {
  const band det = make_band(s, res_, cfg.avg_deviation, cfg.detect_threshold);
  const std::string n = name();
  if (s.eligible_count() < 2) return "fewer than two eligible brokers; nothing can move";
  if (det.idle)
    return "idle: mean " + format_amount(det.raw_mean) + " per broker is below DetectThreshold " +
           format_amount(cfg.detect_threshold) + "; nothing moved";
  const auto initial = violators_of(s, det);
  if (initial.empty())
    return "balanced: every eligible broker is inside [" + format_amount(det.lower) + ", " +
           format_amount(det.upper) + "]; nothing moved";
  const band tgt = make_band(s, res_, cfg.avg_deviation * kTargetFraction, cfg.detect_threshold);
  replica_load_index idx(s, res_);
  std::vector<std::uint8_t> stuck(s.broker_count(), 0);
  std::vector<broker_index> eligible;
  for (std::uint32_t i = 0; i < s.broker_count(); ++i)
    if (s.eligible(broker_index{i})) eligible.push_back(broker_index{i});

  std::size_t moved = 0;
  bool capped = false;
  for (int round = 0; round < kMaxRounds; ++round) {
    std::size_t moved_this_round = 0;
    std::fill(stuck.begin(), stuck.end(), 0);
    while (true) {
      if (ctx.full()) { capped = true; break; }
      // The broker furthest outside the optimization band (relative to the mean).
      broker_index v{};
      double worst = 0.0;
      bool above = false;
      for (broker_index b : eligible) {
        if (stuck[b.value]) continue;
        const double nb = det.norm(s, b);
        const double d = tgt.outside(nb);
        if (d > worst) { worst = d; v = b; above = nb > tgt.upper; }
      }
      if (worst <= 0.0) break;
      // Partner: least loaded when shedding, most loaded when filling; then the rest in order.
      broker_index first{};
      bool have_first = false;
      double first_n = 0.0;
      for (broker_index b : eligible) {
        if (b == v) continue;
        const double nb = det.norm(s, b);
        if (!have_first || (above ? nb < first_n : nb > first_n)) { first = b; first_n = nb; have_first = true; }
      }
      bool done = false;
      if (have_first)
        done = above ? try_pair(s, ctx, idx, det, tgt, v, first, true)
                     : try_pair(s, ctx, idx, det, tgt, first, v, false);
      if (!done && have_first) {
        std::vector<std::pair<double, std::uint32_t>> order;
        for (broker_index b : eligible)
          if (b != v && b != first) order.emplace_back(above ? det.norm(s, b) : -det.norm(s, b), b.value);
        std::sort(order.begin(), order.end());
        for (const auto& [key, b] : order) {
          const broker_index p{b};
          done = above ? try_pair(s, ctx, idx, det, tgt, v, p, true) : try_pair(s, ctx, idx, det, tgt, p, v, false);
          if (done || ctx.full()) break;
        }
      }
      if (done) { ++moved; ++moved_this_round; }
      else stuck[v.value] = 1;
    }
    if (capped || moved_this_round == 0) break;
  }
  const auto remaining = violators_of(s, det);
  std::string out = "moved " + std::to_string(moved) + " partition(s) for " + n + "; band [" +
                    format_amount(det.lower) + ", " + format_amount(det.upper) + "]";
  if (capped) out += "; stopped at max_actions";
  if (!remaining.empty())
    out += "; still outside: " + format_brokers(s, remaining) +
           (moved == 0 && !capped ? " (no acceptable move: vetoed, would worsen an earlier goal, or no movable partition fits)"
                       : "");
  return out;
}

}  // namespace

goal_config default_distribution_config(resource r) {
  goal_config c;
  c.avg_deviation = 0.2;
  switch (r) {
    case resource::nw_in: c.detect_threshold = 1048576.0; c.priority = 50; break;
    case resource::nw_out: c.detect_threshold = 1048576.0; c.priority = 40; break;
    case resource::disk: c.detect_threshold = 104857600.0; c.priority = 30; break;
    case resource::partition_count: c.detect_threshold = 0.0; c.priority = 20; break;
  }
  return c;
}

std::unique_ptr<goal> make_distribution_goal(resource r) { return std::make_unique<distribution_goal>(r); }

std::vector<std::unique_ptr<goal>> make_builtin_goals() {
  std::vector<std::unique_ptr<goal>> out;
  for (resource r : {resource::disk, resource::nw_in, resource::nw_out}) out.push_back(make_capacity_goal(r));
  for (resource r : {resource::nw_in, resource::nw_out, resource::disk, resource::partition_count})
    out.push_back(make_distribution_goal(r));
  return out;
}

}  // namespace moonmq::goals

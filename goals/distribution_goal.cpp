// Distribution goals (NW_IN, NW_OUT, DISK, PARTITION_COUNT): see
// builtin_goals.hpp and docs/balancer.md for the algorithm.

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "goals/band.hpp"
#include "goals/builtin_goals.hpp"
#include "goals/load_index.hpp"
#include "goals/text.hpp"

namespace moonmq::goals {
namespace {

constexpr std::size_t kCandidatesPerPair = 16;
/// SWAP search per pair: partitions of the partner sampled across its list,
/// and for each the source's partitions nearest to (its load + the amount).
constexpr std::size_t kSwapPartners = 8;
constexpr std::size_t kSwapCandidatesEach = 4;
constexpr int kMaxRounds = 3;
/// Two-for-one search (PARTITION_COUNT) per pair: partitions of the broker
/// giving two, of the one giving one, and combinations proposed.
constexpr std::size_t kTwoForOneSources = 12;
constexpr std::size_t kTwoForOnePartners = 6;
constexpr std::size_t kTwoForOneProposals = 16;
/// Partners tried for a two-for-one, nearest first.
constexpr std::size_t kTwoForOnePairs = 4;
/// Candidates (best by the goal's own rank) that the other goals' score re-ranks.
constexpr std::size_t kRankedByAllGoals = 4;
/// Proposals per pair, best ranked first: when these are all refused, the
/// rest are likely refused for the same reason (a goal at its band's edge).
constexpr std::size_t kProposalsPerPair = 8;

/// A candidate action with its rank: the running goal's own relative
/// improvement plus the other goals' weighted score (optimize_context::others_score).
struct candidate {
  action a;
  double rank = 0.0;
};

std::vector<broker_index> violators_of(const snapshot& s, const band& b) {
  std::vector<broker_index> out;
  if (b.idle) return out;
  for (std::uint32_t i = 0; i < s.broker_count(); ++i) {
    const broker_index bi{i};
    if (s.eligible(bi) && b.outside_of(s, bi, b.norm(s, bi)) > 0.0) out.push_back(bi);
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
    st.basis = b.utilization ? "utilization" : s.weighted() ? "load_per_weight" : "load";
    st.mean = b.mean;
    st.lower = b.lower;
    st.upper = b.upper;
    st.idle = b.idle;
    st.violators = violators_of(s, b);
    for (broker_index v : st.violators) st.cost += b.outside_of(s, v, b.norm(s, v));
    return st;
  }

  verdict check(const snapshot& s, const goal_config& cfg, const action& a) const override {
    const band b = make_band(s, res_, cfg.avg_deviation, cfg.detect_threshold);
    if (b.idle) return verdict::yes();
    double before = 0.0, after = 0.0;
    for (broker_index x : {a.from, a.to}) {
      if (!s.eligible(x)) continue;
      before += b.outside_of(s, x, b.norm(s, x));
      after += b.outside_of(s, x, load_after(s, a, x, res_) * b.scale(s, x));
    }
    if (after > before + b.eps)
      return verdict::no(name() + " would move a broker further outside [" + format_amount(b.lower) + ", " +
                         format_amount(b.upper) + "]");
    return verdict::yes();
  }

  double score(const snapshot& s, const goal_config& cfg, const action& a) const override {
    const band b = make_band(s, res_, cfg.avg_deviation, cfg.detect_threshold);
    if (b.idle) return 0.0;
    double sc = 0.0;
    for (broker_index x : {a.from, a.to}) {
      if (!s.eligible(x)) continue;
      const double n0 = b.norm(s, x), n1 = load_after(s, a, x, res_) * b.scale(s, x);
      const double d0 = (n0 - b.mean) / b.mean, d1 = (n1 - b.mean) / b.mean;
      const double o0 = b.outside_of(s, x, n0) / b.mean, o1 = b.outside_of(s, x, n1) / b.mean;
      sc += d0 * d0 - d1 * d1 + (o0 - o1);
      if (o0 <= 0.0 && o1 > 0.0) sc -= 1.0;  // leaves the band
    }
    return sc;
  }

  std::string optimize(snapshot& s, const goal_config& cfg, optimize_context& ctx) const override;

 private:
  /// What a (source, destination) pair needs: scales, normalized loads, the
  /// best amount x* and the amount per move to aim at.
  struct pair_view {
    broker_index src, dst;
    bool shedding = true;
    double ss = 1.0, sd = 1.0, ns = 0.0, nd = 0.0, m = 0.0, best = 0.0, target = 0.0, f0 = 0.0, trivial = 0.0;
    double src_lower = 0.0, dst_upper = 0.0;  // the detection band's limits of src and dst (band::lower_of, upper_of)
    std::string why;
  };
  bool view_pair(const snapshot& s, const band& det, const band& tgt, broker_index src, broker_index dst,
                 bool shedding, pair_view& pv) const;
  /// Accepts a net shift `x` (raw units) from src to dst: improves the pair,
  /// is not trivial, and leaves the partner inside the detection band. Sets
  /// `rank` to the pair's relative improvement for a shift as far below the
  /// target as `x` is from it: the nearer the target, the better, whichever
  /// side (the other goals' score then decides between near ones).
  bool improves(const band& det, const pair_view& pv, double x, double& rank) const;
  /// Smallest raw amount that is not trivial for the pair.
  double floor_of(const pair_view& pv) const { return pv.trivial / std::max(pv.ss, pv.sd); }
  /// Proposes the candidates best rank first; true at the first accepted one.
  static bool propose_best(optimize_context& ctx, replica_load_index& idx, std::vector<candidate>& cands,
                           const std::string& why);
  bool try_pair(snapshot& s, optimize_context& ctx, replica_load_index& idx, const band& det,
                const band& tgt, broker_index src, broker_index dst, bool shedding) const;
  bool try_swap(snapshot& s, optimize_context& ctx, replica_load_index& idx, const band& det,
                const band& tgt, broker_index src, broker_index dst, bool shedding) const;

  /// PARTITION_COUNT when every single move is refused: src gives two
  /// partitions to dst and takes one back, one partition net, with the
  /// measured loads of both brokers kept near their means (docs/balancer.md
  /// "Reaching every band").
  bool try_two_for_one(snapshot& s, optimize_context& ctx, replica_load_index& idx, const band& det,
                       const band& tgt, broker_index src, broker_index dst, bool shedding) const;

  resource res_;
};

bool distribution_goal::view_pair(const snapshot& s, const band& det, const band& tgt, broker_index src,
                                  broker_index dst, bool shedding, pair_view& pv) const {
  pv.src = src;
  pv.dst = dst;
  pv.shedding = shedding;
  pv.ss = det.scale(s, src);
  pv.sd = det.scale(s, dst);
  pv.ns = det.norm(s, src);
  pv.nd = det.norm(s, dst);
  pv.m = det.mean;
  pv.src_lower = det.lower_of(s, src);
  pv.dst_upper = det.upper_of(s, dst);
  const double denom = pv.ss * pv.ss + pv.sd * pv.sd;
  if (!(denom > 0.0)) return false;
  // x* minimizes (ns − x·ss − m)² + (nd + x·sd − m)²: the raw amount that
  // brings both brokers closest to the mean.
  pv.best = (pv.ss * (pv.ns - pv.m) - pv.sd * (pv.nd - pv.m)) / denom;
  if (!(pv.best > 0.0) || !std::isfinite(pv.best)) return false;
  pv.target = pv.best;
  if (res_ != resource::partition_count && s.eligible_count() > 0) {
    // Whole partitions: a broker above (below) the mean in partitions too
    // should end near the mean in both, so each move carries about its
    // surplus (shortfall) divided by its surplus (shortfall) of partitions,
    // not the hottest partition: shedding the hottest first leaves the cold
    // ones behind, and the count goal could then only drain the broker
    // below this goal's band, which this goal vetoes.
    // The count at the mean is the broker's weighted share.
    const double cm = s.eligible_total(resource::partition_count) / s.eligible_weight_total();
    const double spare = shedding ? s.load(src, resource::partition_count) - cm * s.weight(src)
                                  : cm * s.weight(dst) - s.load(dst, resource::partition_count);
    const double amount = shedding ? (pv.ns - pv.m) / pv.ss : (pv.m - pv.nd) / pv.sd;
    if (spare >= 1.0 && amount > 0.0 && std::isfinite(amount)) pv.target = std::min(pv.best, amount / spare);
  }
  // The trivial amount (band.hpp): 0.01% of the mean, or 1% of the mean
  // partition's load when that is smaller.
  pv.trivial = 0.0;
  if (res_ != resource::partition_count) {
    pv.trivial = kTrivialFraction * det.mean;
    const double partitions = s.eligible_total(resource::partition_count);
    if (partitions > 0.0) {
      const double per_partition = det.mean * static_cast<double>(s.eligible_count()) / partitions;
      pv.trivial = std::min(pv.trivial, kTrivialPartitionFraction * per_partition);
    }
  }
  pv.f0 = (pv.ns - pv.m) * (pv.ns - pv.m) + (pv.nd - pv.m) * (pv.nd - pv.m);
  pv.why = std::string(resource_name(res_)) + ": " + s.broker_id(shedding ? src : dst) + " at " +
           format_amount(shedding ? pv.ns : pv.nd) + (shedding ? " above " : " below ") +
           format_amount(shedding ? tgt.upper_of(s, src) : tgt.lower_of(s, dst)) + " (mean " + format_amount(pv.m) +
           (!det.utilization && s.weighted() ? ", per unit of weight" : "") + "); " +
           (shedding ? "shed to " + s.broker_id(dst) : "filled from " + s.broker_id(src));
  return true;
}

bool distribution_goal::improves(const band& det, const pair_view& pv, double x, double& rank) const {
  if (x * std::max(pv.ss, pv.sd) <= pv.trivial || x <= 0.0) return false;
  auto f = [&](double shift) {
    const double ns2 = pv.ns - shift * pv.ss, nd2 = pv.nd + shift * pv.sd;
    return (ns2 - pv.m) * (ns2 - pv.m) + (nd2 - pv.m) * (nd2 - pv.m);
  };
  if (!(f(x) < pv.f0 - det.eps * det.eps)) return false;
  // Never create a new violation on the partner broker.
  if (pv.shedding && pv.nd + x * pv.sd > pv.dst_upper + det.eps) return false;
  if (!pv.shedding && pv.ns - x * pv.ss < pv.src_lower - det.eps) return false;
  rank = (pv.f0 - f(pv.target - std::fabs(x - pv.target))) / (pv.m * pv.m);
  return true;
}

bool distribution_goal::propose_best(optimize_context& ctx, replica_load_index& idx, std::vector<candidate>& cands,
                                     const std::string& why) {
  auto by_rank = [](const candidate& x, const candidate& y) { return x.rank > y.rank; };
  // The other goals' score decides among the best few by the goal's own rank.
  std::stable_sort(cands.begin(), cands.end(), by_rank);
  if (cands.size() > 1) {
    const std::size_t ranked = std::min(cands.size(), kRankedByAllGoals);
    for (std::size_t i = 0; i < ranked; ++i) cands[i].rank += ctx.others_score(cands[i].a);
    std::stable_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(ranked), by_rank);
  }
  for (std::size_t i = 0; i < cands.size() && i < kProposalsPerPair; ++i) {
    const candidate& c = cands[i];
    if (!ctx.propose(c.a, why)) continue;
    idx.on_move(c.a.replica, c.a.from, c.a.to);
    if (c.a.type == action_type::swap) idx.on_move(c.a.other, c.a.to, c.a.from);
    return true;
  }
  return false;
}

bool distribution_goal::try_pair(snapshot& s, optimize_context& ctx, replica_load_index& idx, const band& det,
                                 const band& tgt, broker_index src, broker_index dst, bool shedding) const {
  pair_view pv;
  if (!view_pair(s, det, tgt, src, dst, shedding, pv)) return false;
  std::vector<candidate> cands;
  auto consider = [&](replica_index r, double x) {
    double rank = 0.0;
    if (s.avoided(r, dst) || !improves(det, pv, x, rank)) return false;
    for (const auto& c : cands)
      if (c.a.replica == r) return false;
    cands.push_back({action{action_type::move, r, src, dst, {}}, rank});
    return false;  // keep collecting
  };
  idx.nearest(src, pv.target, kCandidatesPerPair, consider, floor_of(pv));
  // Every partition weighs 1 for PARTITION_COUNT: the nearest ones are just
  // the lightest, so partitions of every size are ranked too.
  if (res_ == resource::partition_count) idx.spread(src, kCandidatesPerPair, consider);
  return propose_best(ctx, idx, cands, pv.why);
}

bool distribution_goal::try_swap(snapshot& s, optimize_context& ctx, replica_load_index& idx, const band& det,
                                 const band& tgt, broker_index src, broker_index dst, bool shedding) const {
  pair_view pv;
  if (!view_pair(s, det, tgt, src, dst, shedding, pv)) return false;
  // Exchange q (on dst) for r (on src) with load(r) − load(q) near the amount:
  // the partition counts stay, so a goal whose single moves are all vetoed
  // (an earlier goal at its band's edge) may still get there.
  std::vector<std::pair<replica_index, double>> partners;
  idx.spread(dst, kSwapPartners, [&](replica_index q, double xq) {
    if (!s.avoided(q, src)) partners.emplace_back(q, xq);
    return false;
  });
  std::vector<candidate> cands;
  for (const auto& [q, xq] : partners)
    idx.nearest(src, xq + pv.target, kSwapCandidatesEach, [&](replica_index r, double xr) {
      double rank = 0.0;
      if (!s.avoided(r, dst) && improves(det, pv, xr - xq, rank))
        cands.push_back({action{action_type::swap, r, src, dst, q}, rank});
      return false;
    });
  return propose_best(ctx, idx, cands, pv.why + " (swap)");
}

bool distribution_goal::try_two_for_one(snapshot& s, optimize_context& ctx, replica_load_index& idx,
                                        const band& det, const band& tgt, broker_index src, broker_index dst,
                                        bool shedding) const {
  pair_view pv;
  double unused = 0.0;
  if (!view_pair(s, det, tgt, src, dst, shedding, pv) || !improves(det, pv, 1.0, unused)) return false;
  std::vector<replica_index> give, take;
  idx.spread(src, kTwoForOneSources, [&](replica_index r, double) {
    if (!s.avoided(r, dst)) give.push_back(r);
    return false;
  });
  idx.spread(dst, kTwoForOnePartners, [&](replica_index q, double) {
    if (!s.avoided(q, src)) take.push_back(q);
    return false;
  });
  // Ranked by how far the two brokers' measured loads end from their
  // shares of the mean (squared, relative to the mean, summed over the
  // measured resources): the combinations most likely to keep every other
  // goal in band come first.
  std::array<double, kMeasuredResources> share{};  // the mean load per unit of weight, 0 when idle
  if (const double w = s.eligible_weight_total(); w > 0.0)
    for (std::size_t k = 0; k < kMeasuredResources; ++k) share[k] = s.eligible_total(static_cast<resource>(k)) / w;
  auto deviation = [&](replica_index r1, replica_index r2, replica_index q) {
    double d = 0.0;
    for (std::size_t k = 0; k < kMeasuredResources; ++k) {
      if (!(share[k] > 0.0)) continue;
      const auto res = static_cast<resource>(k);
      const double shift = s.load(r1, res) + s.load(r2, res) - s.load(q, res);
      const double a = (s.load(src, res) - shift) / s.weight(src) - share[k],
                   b = (s.load(dst, res) + shift) / s.weight(dst) - share[k];
      d += (a * a + b * b) / (share[k] * share[k]);
    }
    return d;
  };
  struct combination {
    double deviation;
    replica_index r1, r2, q;
  };
  std::vector<combination> combos;
  for (replica_index q : take)
    for (std::size_t i = 0; i < give.size(); ++i)
      for (std::size_t j = i + 1; j < give.size(); ++j)
        combos.push_back({deviation(give[i], give[j], q), give[i], give[j], q});
  const std::size_t n = std::min(combos.size(), kTwoForOneProposals);
  std::partial_sort(combos.begin(), combos.begin() + static_cast<std::ptrdiff_t>(n), combos.end(),
                    [](const combination& x, const combination& y) { return x.deviation < y.deviation; });
  for (std::size_t i = 0; i < n; ++i) {
    const combination& c = combos[i];
    const std::vector<action> moves{{action_type::move, c.r1, src, dst, {}},
                                    {action_type::move, c.r2, src, dst, {}},
                                    {action_type::move, c.q, dst, src, {}}};
    if (!ctx.propose_together(moves, pv.why + " (two for one)")) continue;
    idx.on_move(c.r1, src, dst);
    idx.on_move(c.r2, src, dst);
    idx.on_move(c.q, dst, src);
    return true;
  }
  return false;
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
           format_amount(det.upper) + "]" +
           (det.whole && s.weighted() ? " per unit of weight, or its own whole-partition limits" : "") +
           "; nothing moved";
  const band tgt = make_band(s, res_, cfg.avg_deviation * kTargetFraction, cfg.detect_threshold);
  replica_load_index idx(s, res_);
  std::vector<std::uint8_t> stuck(s.broker_count(), 0);
  std::vector<broker_index> eligible;
  for (std::uint32_t i = 0; i < s.broker_count(); ++i)
    if (s.eligible(broker_index{i})) eligible.push_back(broker_index{i});

  std::size_t moved = 0, swapped = 0, combined = 0;
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
        const double d = tgt.outside_of(s, b, nb);
        if (d > worst) { worst = d; v = b; above = nb > tgt.upper_of(s, b); }
      }
      if (worst <= 0.0) break;
      // Partners: brokers of v's own rack on the useful side of the mean
      // first (below it when v sheds, above it when v fills: a move inside
      // a rack keeps the rack's traffic where it is, AutoMQ's preference
      // when a broker joins or leaves), then least loaded first when
      // shedding, most loaded first when filling.
      using partner_key = std::pair<int, double>;
      auto key_of = [&](broker_index b) {
        const double nb = det.norm(s, b);
        const bool useful = above ? nb < det.mean : nb > det.mean;
        return partner_key{s.same_rack(b, v) && useful ? 0 : 1, above ? nb : -nb};
      };
      // The first partner alone (most moves end there), the rest sorted only if it refuses.
      broker_index first{};
      bool have_first = false;
      partner_key first_key{};
      for (broker_index b : eligible) {
        if (b == v) continue;
        const partner_key k = key_of(b);
        if (!have_first || k < first_key) { first = b; first_key = k; have_first = true; }
      }
      bool done = false;
      if (have_first)
        done = above ? try_pair(s, ctx, idx, det, tgt, v, first, true)
                     : try_pair(s, ctx, idx, det, tgt, first, v, false);
      if (!done && have_first) {
        std::vector<std::pair<partner_key, std::uint32_t>> order;
        for (broker_index b : eligible)
          if (b != v && b != first) order.emplace_back(key_of(b), b.value);
        std::sort(order.begin(), order.end());
        for (const auto& [key, b] : order) {
          const broker_index p{b};
          done = above ? try_pair(s, ctx, idx, det, tgt, v, p, true) : try_pair(s, ctx, idx, det, tgt, p, v, false);
          if (done || ctx.full()) break;
        }
        // Every single move refused or overshooting, for a broker outside
        // the detection band only (between the two bands it is already fine
        // for the next pass): exchange partitions instead (Cruise Control
        // swaps when its moves are vetoed); for PARTITION_COUNT, whose
        // counts a swap does not change, two partitions for one (a swap and
        // a move made together) with the nearest few partners.
        if (!done && !ctx.full() && det.outside_of(s, v, det.norm(s, v)) > 0.0) {
          std::vector<broker_index> partners{first};
          for (const auto& [key, b] : order) partners.push_back(broker_index{b});
          const bool count = res_ == resource::partition_count;
          for (std::size_t i = 0; i < partners.size() && (!count || i < kTwoForOnePairs); ++i) {
            const broker_index p = partners[i];
            if (count)
              done = above ? try_two_for_one(s, ctx, idx, det, tgt, v, p, true)
                           : try_two_for_one(s, ctx, idx, det, tgt, p, v, false);
            else
              done = above ? try_swap(s, ctx, idx, det, tgt, v, p, true) : try_swap(s, ctx, idx, det, tgt, p, v, false);
            if (done) { ++(count ? combined : swapped); break; }
            if (ctx.full()) break;
          }
        }
      }
      if (done) { ++moved; ++moved_this_round; }
      else stuck[v.value] = 1;
    }
    if (capped || moved_this_round == 0) break;
  }
  const auto remaining = violators_of(s, det);
  std::string out = "moved " + std::to_string(moved - swapped - combined) + " partition(s)" +
                    (swapped ? " and swapped " + std::to_string(swapped) + " pair(s)" : std::string()) +
                    (combined ? " and made " + std::to_string(combined) + " two-for-one exchange(s)" : std::string()) +
                    " for " + n +
                    "; band [" + format_amount(det.lower) + ", " + format_amount(det.upper) + "]";
  if (capped) out += "; stopped at max_actions";
  if (!remaining.empty())
    out += "; still outside: " + format_brokers(s, remaining) + " (why: goals[].still_outside)";
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
  out.push_back(make_topic_spread_goal());
  out.push_back(make_slow_broker_goal());
  return out;
}

}  // namespace moonmq::goals

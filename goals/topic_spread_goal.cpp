// Topic spread goal (TOPIC_SPREAD): each topic's partitions spread evenly
// over the eligible brokers. See builtin_goals.hpp and docs/balancer.md
// "Topic spread"; after Cruise Control's TopicReplicaDistributionGoal.

#include <algorithm>
#include <cmath>

#include "goals/builtin_goals.hpp"
#include "goals/text.hpp"

namespace moonmq::goals {
namespace {

/// Partitions of the topic on a source tried (spread over its list) per destination.
constexpr std::size_t kCandidatesPerPair = 16;
/// Of those, the best ranked by the other goals' score proposed per destination.
constexpr std::size_t kProposalsPerPair = 4;
/// Destinations tried for one source before the pair is set aside.
constexpr std::size_t kDestinationsPerSource = 8;
/// Candidates whose score by the other goals is below this are not proposed:
/// a broker leaving a goal's band scores at most −1 (times that goal's weight,
/// at least 1), and such a move is almost always refused by that goal's check.
constexpr double kOthersScoreFloor = -0.5;
/// Passes over the topics outside their band while a pass still moves
/// something: a move another goal refused (a broker at its band's edge) may
/// be accepted once another topic's moves have shifted load back.
constexpr int kMaxRounds = 8;

/// Band of one topic in whole partitions per eligible broker.
struct topic_band {
  double mean = 0.0;
  std::uint32_t lower = 0;
  std::uint32_t upper = 0;
  bool idle = true;
  std::uint32_t outside(std::uint32_t n) const { return n > upper ? n - upper : (n < lower ? lower - n : 0); }
};

topic_band band_of(const snapshot& s, const goal_config& cfg, std::uint32_t t, std::uint32_t partitions) {
  topic_band b;
  const std::size_t brokers = s.eligible_count();
  if (brokers < 2 || !s.topic_movable(t) || partitions == 0) return b;
  b.mean = static_cast<double>(partitions) / static_cast<double>(brokers);
  if (b.mean < cfg.detect_threshold) return b;
  const double dev = std::isfinite(cfg.avg_deviation) ? std::max(0.0, cfg.avg_deviation) : 0.0;
  // Rounded outward so that floor(mean) and ceil(mean) are always inside
  // (the 1e-9 keeps an exact mean from rounding to the next whole number).
  b.lower = static_cast<std::uint32_t>(std::max(0.0, std::floor(b.mean * (1.0 - dev) + 1e-9)));
  b.upper = static_cast<std::uint32_t>(std::ceil(b.mean * (1.0 + dev) - 1e-9));
  b.idle = false;
  return b;
}

topic_band band_of(const snapshot& s, const goal_config& cfg, std::uint32_t t) {
  return band_of(s, cfg, t, s.topic_eligible_partitions(t));
}

/// Per topic of `a` (one, or two for a SWAP of different topics): the change
/// each eligible broker of the action sees in its count of that topic.
template <typename Visit>
void visit_topics(const snapshot& s, const action& a, Visit&& visit) {
  const std::uint32_t t = s.topic_id(a.replica);
  if (a.type == action_type::swap) {
    const std::uint32_t u = s.topic_id(a.other);
    if (u == t) return;  // the counts of both brokers stay
    visit(u, +1, -1);    // `other` goes from `to` back to `from`
  }
  visit(t, -1, +1);
}

/// Σ distance outside the band over (topic, broker) pairs of `a`'s brokers,
/// before and after `a`, and how many pairs leave their band.
struct effect {
  double before = 0.0, after = 0.0, mean = 1.0;
  int leaving = 0;
};

effect effect_of(const snapshot& s, const goal_config& cfg, const action& a) {
  effect e;
  visit_topics(s, a, [&](std::uint32_t t, int d_from, int d_to) {
    const std::uint32_t n0 = s.topic_eligible_partitions(t);
    std::int64_t n1 = n0;
    if (!s.eligible(a.from)) n1 -= d_from;  // the partition leaves or joins the eligible set
    if (!s.eligible(a.to)) n1 -= d_to;
    const topic_band b0 = band_of(s, cfg, t, n0);
    const topic_band b1 = band_of(s, cfg, t, static_cast<std::uint32_t>(std::max<std::int64_t>(0, n1)));
    if (b0.idle && b1.idle) return;
    e.mean = std::max(e.mean, b0.mean);
    for (const auto& [x, d] : {std::pair{a.from, d_from}, std::pair{a.to, d_to}}) {
      if (!s.eligible(x)) continue;
      const std::uint32_t c0 = s.topic_partitions_on(t, x);
      const std::uint32_t c1 = static_cast<std::uint32_t>(std::max<std::int64_t>(0, std::int64_t{c0} + d));
      const std::uint32_t o0 = b0.idle ? 0 : b0.outside(c0), o1 = b1.idle ? 0 : b1.outside(c1);
      e.before += o0;
      e.after += o1;
      if (o0 == 0 && o1 > 0) ++e.leaving;
    }
  });
  return e;
}

class topic_spread_goal final : public goal {
 public:
  std::string name() const override { return "TOPIC_SPREAD"; }
  bool hard() const override { return false; }
  goal_config default_config() const override { return default_topic_spread_config(); }

  goal_stats stats(const snapshot& s, const goal_config& cfg) const override {
    goal_stats st;
    st.basis = "partitions_per_topic";
    std::vector<std::uint8_t> bad(s.broker_count(), 0);
    std::vector<std::uint32_t> counts(s.broker_count(), 0);
    bool any = false;
    double worst = -1.0;
    for (std::uint32_t t = 0; t < s.topic_count(); ++t) {
      const topic_band b = band_of(s, cfg, t);
      if (b.idle) continue;
      any = true;
      const double cost = count_outside(s, b, t, counts, bad);
      st.cost += cost;
      // mean/lower/upper: those of the topic furthest outside (else of the largest).
      const double key = cost > 0.0 ? 1e18 + cost : b.mean;
      if (key > worst) { worst = key; st.mean = b.mean; st.lower = b.lower; st.upper = b.upper; }
    }
    st.idle = !any;
    for (std::uint32_t i = 0; i < s.broker_count(); ++i)
      if (bad[i]) st.violators.push_back(broker_index{i});
    return st;
  }

  verdict check(const snapshot& s, const goal_config& cfg, const action& a) const override {
    const effect e = effect_of(s, cfg, a);
    if (e.after > e.before)
      return verdict::no(name() + " would move topic " + s.topic(a.replica) + " further outside its band on " +
                         s.broker_id(a.from) + " or " + s.broker_id(a.to));
    return verdict::yes();
  }

  double score(const snapshot& s, const goal_config& cfg, const action& a) const override {
    const effect e = effect_of(s, cfg, a);
    return (e.before - e.after) / e.mean - e.leaving;
  }

  std::string optimize(snapshot& s, const goal_config& cfg, optimize_context& ctx) const override;

 private:
  /// Distance outside `b` summed over eligible brokers for topic `t`; marks
  /// the brokers outside in `bad`. `counts` is scratch of broker_count()
  /// zeros, left zero.
  static double count_outside(const snapshot& s, const topic_band& b, std::uint32_t t,
                              std::vector<std::uint32_t>& counts, std::vector<std::uint8_t>& bad) {
    double cost = 0.0;
    for (auto r = s.topic_replicas_begin(t); r != s.topic_replicas_end(t); ++r) ++counts[s.owner(replica_index{*r}).value];
    auto visit = [&](std::uint32_t i) {
      if (!s.eligible(broker_index{i})) return;
      const std::uint32_t o = b.outside(counts[i]);
      if (o > 0) { cost += o; bad[i] = 1; }
    };
    if (b.lower > 0) {
      for (std::uint32_t i = 0; i < s.broker_count(); ++i) visit(i);
    } else {
      // Only brokers holding some partition can be above the band; visit each once.
      for (auto r = s.topic_replicas_begin(t); r != s.topic_replicas_end(t); ++r) {
        const std::uint32_t i = s.owner(replica_index{*r}).value;
        if (counts[i] == 0) continue;
        visit(i);
        counts[i] = 0;
      }
    }
    for (auto r = s.topic_replicas_begin(t); r != s.topic_replicas_end(t); ++r) counts[s.owner(replica_index{*r}).value] = 0;
    return cost;
  }

  /// Moves partitions of topic `t` from its most to its least loaded
  /// eligible brokers while one of them is outside the band; a source none
  /// of whose candidates is accepted is set aside. Returns the partitions
  /// moved; sets `capped` when the plan is full.
  std::size_t spread_topic(snapshot& s, const goal_config& cfg, optimize_context& ctx, std::uint32_t t,
                           const std::vector<broker_index>& eligible, bool& capped) const;
};

std::size_t topic_spread_goal::spread_topic(snapshot& s, const goal_config& cfg, optimize_context& ctx,
                                            std::uint32_t t, const std::vector<broker_index>& eligible,
                                            bool& capped) const {
  const topic_band b = band_of(s, cfg, t);
  std::vector<std::uint32_t> count(s.broker_count(), 0);
  for (auto r = s.topic_replicas_begin(t); r != s.topic_replicas_end(t); ++r) ++count[s.owner(replica_index{*r}).value];
  std::vector<std::uint8_t> stuck(s.broker_count(), 0);
  std::size_t moved = 0;
  while (true) {
    if (ctx.full()) { capped = true; break; }
    // The most loaded broker for the topic (not set aside) and the least loaded.
    broker_index src{};
    bool have = false;
    std::uint32_t hi = 0, lo = 0;
    for (broker_index x : eligible)
      if (!stuck[x.value] && (!have || count[x.value] > hi)) { src = x; hi = count[x.value]; have = true; }
    if (!have) break;
    lo = hi;
    for (broker_index x : eligible) lo = std::min(lo, count[x.value]);
    // A move from hi to lo helps only when one of them is outside the band
    // and they differ by two or more (else it only swaps their places).
    // With src inside the band, a destination below it gains only if src
    // stays in (hi > lower): else both end below and the distance is kept.
    if (hi < lo + 2 || (hi <= b.upper && (lo >= b.lower || hi <= b.lower))) break;
    // Destinations that end inside the band's top and closer to the mean:
    // below the lower edge when src is inside the band; least loaded first.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> dests;
    for (broker_index x : eligible) {
      const std::uint32_t c = count[x.value];
      if (x != src && c + 2 <= hi && c + 1 <= b.upper && (hi > b.upper || (c < b.lower && hi > b.lower)))
        dests.emplace_back(c, x.value);
    }
    std::sort(dests.begin(), dests.end());
    if (dests.size() > kDestinationsPerSource) dests.resize(kDestinationsPerSource);
    // Candidates: movable partitions of the topic on src, spread over the list.
    std::vector<replica_index> on_src;
    for (auto r = s.topic_replicas_begin(t); r != s.topic_replicas_end(t); ++r)
      if (s.owner(replica_index{*r}) == src && s.movable(replica_index{*r})) on_src.push_back(replica_index{*r});
    std::vector<replica_index> picked;
    const std::size_t step = std::max<std::size_t>(1, on_src.size() / kCandidatesPerPair);
    for (std::size_t i = 0; i < on_src.size() && picked.size() < kCandidatesPerPair; i += step) picked.push_back(on_src[i]);
    bool done = false;
    for (const auto& [c, d] : dests) {
      const broker_index to{d};
      std::vector<std::pair<double, replica_index>> ranked;
      for (replica_index r : picked) {
        if (s.avoided(r, to)) continue;
        const double others = ctx.others_score(action{action_type::move, r, src, to, {}});
        if (others >= kOthersScoreFloor) ranked.emplace_back(-others, r);
      }
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      const std::string why = name() + ": topic " + s.topic_name(t) + " has " + std::to_string(hi) + " partition(s) on " +
                              s.broker_id(src) + " and " + std::to_string(c) + " on " + s.broker_id(to) + " (band [" +
                              std::to_string(b.lower) + ", " + std::to_string(b.upper) + "])";
      for (std::size_t i = 0; i < ranked.size() && i < kProposalsPerPair; ++i) {
        if (!ctx.propose(action{action_type::move, ranked[i].second, src, to, {}}, why)) continue;
        --count[src.value];
        ++count[to.value];
        done = true;
        break;
      }
      if (done || ctx.full()) break;
    }
    if (done) ++moved;
    else stuck[src.value] = 1;
  }
  return moved;
}

std::string topic_spread_goal::optimize(snapshot& s, const goal_config& cfg, optimize_context& ctx) const {
  if (s.eligible_count() < 2) return "fewer than two eligible brokers; nothing can move";
  // Topics outside their band, furthest first (then in topic order).
  std::vector<std::pair<double, std::uint32_t>> work;
  std::vector<std::uint8_t> bad(s.broker_count(), 0);
  std::vector<std::uint32_t> counts(s.broker_count(), 0);
  for (std::uint32_t t = 0; t < s.topic_count(); ++t) {
    const topic_band b = band_of(s, cfg, t);
    if (b.idle) continue;
    if (const double cost = count_outside(s, b, t, counts, bad); cost > 0.0) work.emplace_back(-cost, t);
  }
  if (work.empty()) return "balanced: every topic's partitions are spread within their band; nothing moved";
  std::sort(work.begin(), work.end());
  std::vector<broker_index> eligible;
  for (std::uint32_t i = 0; i < s.broker_count(); ++i)
    if (s.eligible(broker_index{i})) eligible.push_back(broker_index{i});
  std::size_t moved = 0;
  bool capped = false;
  for (int round = 0; round < kMaxRounds && !capped; ++round) {
    std::size_t moved_this_round = 0;
    for (const auto& [cost, t] : work) {
      moved_this_round += spread_topic(s, cfg, ctx, t, eligible, capped);
      if (capped) break;
    }
    moved += moved_this_round;
    if (moved_this_round == 0) break;
  }
  std::size_t left = 0;
  for (const auto& [cost, t] : work) {
    const topic_band b = band_of(s, cfg, t);
    if (!b.idle && count_outside(s, b, t, counts, bad) > 0.0) ++left;
  }
  std::string out = "moved " + std::to_string(moved) + " partition(s) for " + name() + " over " +
                    std::to_string(work.size()) + " topic(s) outside their band";
  if (capped) out += "; stopped at max_actions";
  if (left > 0) out += "; " + std::to_string(left) + " topic(s) still outside";
  return out;
}

}  // namespace

goal_config default_topic_spread_config() {
  goal_config c;
  // Off unless enabled (Goals.TOPIC_SPREAD.Enabled): on, it would move
  // partitions of idle clusters and change plans the other goals settle
  // (docs/balancer.md "Topic spread").
  c.enabled = false;
  c.avg_deviation = 0.2;
  c.detect_threshold = 0.0;
  c.priority = 10;
  return c;
}

std::unique_ptr<goal> make_topic_spread_goal() { return std::make_unique<topic_spread_goal>(); }

}  // namespace moonmq::goals

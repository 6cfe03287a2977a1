// SLOW_BROKER: moves partitions off brokers the balance loop marked slow
// (docs/balancer.md "Slow brokers"; AutoMQ's AutoBalancer, "Single Node
// Failures": a slow broker is relieved of its load so that it does not
// slow its clients down, and is given none until it recovers).

#include <algorithm>
#include <string>
#include <vector>

#include "goals/builtin_goals.hpp"

namespace moonmq::goals {
namespace {

class slow_broker_goal final : public goal {
 public:
  std::string name() const override { return "SLOW_BROKER"; }
  bool hard() const override { return false; }
  goal_config default_config() const override { return default_slow_broker_config(); }

  goal_stats stats(const snapshot& s, const goal_config&) const override {
    goal_stats st;
    st.basis = "partitions";
    std::vector<std::size_t> on(s.broker_count(), 0);
    bool any = false;
    for (std::uint32_t b = 0; b < s.broker_count(); ++b) any = any || s.slow(broker_index{b});
    st.idle = !any;
    if (!any) return st;
    for (std::uint32_t r = 0; r < s.replica_count(); ++r) {
      const replica_index ri{r};
      if (s.slow(s.owner(ri)) && s.movable(ri)) ++on[s.owner(ri).value];
    }
    for (std::uint32_t b = 0; b < s.broker_count(); ++b)
      if (on[b] > 0) {
        st.violators.push_back(broker_index{b});
        st.cost += static_cast<double>(on[b]);
      }
    return st;
  }

  verdict check(const snapshot& s, const goal_config&, const action& a) const override {
    // Nothing eligible is slow, so the detector never proposes this; kept
    // so that the goal's own rule is stated where a reader looks for it.
    if (s.slow(a.to) || (a.type == action_type::swap && s.slow(a.from)))
      return verdict::no("SLOW_BROKER: a partition would move onto a slow broker");
    return verdict::yes();
  }

  double score(const snapshot& s, const goal_config&, const action& a) const override {
    return s.slow(a.from) && a.type == action_type::move ? 1.0 : 0.0;
  }

  std::string optimize(snapshot& s, const goal_config&, optimize_context& ctx) const override {
    std::vector<broker_index> slow, targets;
    for (std::uint32_t b = 0; b < s.broker_count(); ++b) {
      if (s.slow(broker_index{b})) slow.push_back(broker_index{b});
      if (s.eligible(broker_index{b})) targets.push_back(broker_index{b});
    }
    if (slow.empty()) return "no slow broker";
    if (targets.empty()) return "no eligible broker to move partitions to";
    // The write load first: a slow disk is relieved most by its busiest
    // partitions (NW_IN), then by the largest (DISK).
    std::vector<replica_index> work;
    for (std::uint32_t r = 0; r < s.replica_count(); ++r) {
      const replica_index ri{r};
      if (s.slow(s.owner(ri)) && s.movable(ri)) work.push_back(ri);
    }
    std::stable_sort(work.begin(), work.end(), [&](replica_index x, replica_index y) {
      if (s.load(x, resource::nw_in) != s.load(y, resource::nw_in))
        return s.load(x, resource::nw_in) > s.load(y, resource::nw_in);
      return s.load(x, resource::disk) > s.load(y, resource::disk);
    });
    std::size_t moved = 0, stuck = 0;
    bool capped = false;
    for (replica_index r : work) {
      if (ctx.full()) {
        capped = true;
        break;
      }
      const broker_index from = s.owner(r);
      // Destinations ranked by what the move does to every other goal,
      // then by fewest partitions; every one is tried until one accepts.
      struct ranked_target {
        double score;
        double partitions;
        broker_index to;
      };
      std::vector<ranked_target> ranked;
      for (broker_index to : targets) {
        if (s.avoided(r, to)) continue;
        ranked.push_back({ctx.others_score(action{action_type::move, r, from, to, {}}),
                          s.load(to, resource::partition_count), to});
      }
      std::stable_sort(ranked.begin(), ranked.end(), [](const ranked_target& x, const ranked_target& y) {
        return x.score != y.score ? x.score > y.score : x.partitions < y.partitions;
      });
      bool done = false;
      for (std::size_t i = 0; i < ranked.size() && !done; ++i)
        done = ctx.propose(action{action_type::move, r, from, ranked[i].to, {}}, "broker " + s.broker_id(from) + " is slow");
      if (done) ++moved;
      else ++stuck;
    }
    std::string out = "moved " + std::to_string(moved) + " of " + std::to_string(work.size()) +
                      " partition(s) off " + std::to_string(slow.size()) + " slow broker(s)";
    if (capped) out += "; stopped at max_actions";
    if (stuck > 0) out += "; " + std::to_string(stuck) + " refused by a hard goal or avoided everywhere";
    return out;
  }
};

}  // namespace

goal_config default_slow_broker_config() {
  goal_config c;
  c.avg_deviation = 0.0;
  c.detect_threshold = 0.0;
  // Above every distribution goal (they then rebalance the eligible brokers
  // with what it moved), below the hard capacity goals.
  c.priority = 60;
  return c;
}

std::unique_ptr<goal> make_slow_broker_goal() { return std::make_unique<slow_broker_goal>(); }

}  // namespace moonmq::goals

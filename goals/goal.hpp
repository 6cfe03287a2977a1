#pragma once
// The goal interface (the SDK that goal plugins implement) and the context
// through which a goal proposes actions to the detector.
//
// Goals are pure and deterministic: no threads, no I/O, no clocks. A goal
// object is stateless across plans; everything it needs comes from the
// snapshot and its goal_config, so one object may serve many plans.
// Across the plugin boundary this is a C++ interface: plugins are built with
// the same compiler, standard library and SDK headers as the host, which the
// plugin ABI version stands for (plugins/goal_plugin_abi.hpp).

#include <string>
#include <string_view>
#include <vector>

#include "goals/snapshot.hpp"
#include "goals/types.hpp"

namespace moonmq::goals {

/// A goal's answer to "may this action be applied?".
struct verdict {
  bool accept = true;
  std::string reason;  // why not, when !accept
  static verdict yes() { return {}; }
  static verdict no(std::string why) { return {false, std::move(why)}; }
};

/// What a goal reports about a snapshot (CONTRACT §6 plan.goals[]).
/// `basis` says the unit of mean/lower/upper: "load" (resource units),
/// "load_per_weight" (resource units per unit of broker weight, when some
/// eligible broker's weight is not 1: a broker of weight w is in band with
/// w·lower to w·upper, PARTITION_COUNT's widened to whole partitions per
/// band::lower_of / upper_of), "utilization" (load / capacity, a fraction).
struct goal_stats {
  std::string basis = "load";
  double mean = 0.0;
  double lower = 0.0;
  double upper = 0.0;
  /// Below DetectThreshold (distribution) or nothing to check (capacity).
  bool idle = false;
  /// Eligible brokers outside the band / over the limit, by index order.
  std::vector<broker_index> violators;
  /// How far from satisfied: Σ over eligible brokers of the distance outside
  /// the band (distribution, normalized units) or above the limit (capacity,
  /// resource units). 0 when satisfied or idle. Never increased by a plan.
  double cost = 0.0;
};

/// Implemented by the detector; handed to goal::optimize.
class optimize_context {
 public:
  virtual ~optimize_context() = default;
  /// Proposes `a` (not yet applied) on behalf of the running goal. The
  /// detector applies it to the snapshot and returns true only when: source
  /// and destination are eligible brokers (a MOVE may also leave a slow
  /// broker, snapshot::slow), the replica(s) are movable and
  /// the destination is not one they avoid (snapshot::avoided), the
  /// plan stays within max_actions moved partitions, no hard goal vetoes
  /// (for a SWAP, neither the pair nor either half applied alone), and
  /// no other goal reports it makes it worse (goals optimized earlier, the
  /// running goal, and goals still to run, so that no goal ends worse; a
  /// MOVE off a slow broker is not judged by the soft goals still to run,
  /// docs/balancer.md "Slow brokers").
  /// `reason` becomes the action's reason text. Returns false otherwise and
  /// leaves the snapshot unchanged.
  virtual bool propose(const action& a, std::string_view reason) = 0;
  /// True once the plan already moves max_actions partitions.
  virtual bool full() const = 0;
  /// What `a` (not yet applied) does to every enabled goal other than the
  /// running one: Σ goal::score, each weighted by its rank as in
  /// balancedness() (1.1^(n − 1 − rank), hard ×1.5). > 0 helps them
  /// overall, < 0 hurts; a goal ranks its own candidates by it (AutoMQ's
  /// AutoBalancer scores every candidate action over all goals). Does not
  /// apply `a` and does not check admissibility. O(number of goals).
  virtual double others_score(const action& a) const {
    (void)a;
    return 0.0;
  }
  /// Proposes `moves` (MOVEs of distinct partitions, not yet applied) as
  /// one step, for a goal that needs them together: with 1 to 4 moves,
  /// each admissible as for propose and the plan within max_actions after
  /// all of them (a move off a slow broker is judged by every goal here). Hard goals must accept every subset of them applied in
  /// the given order (the balance loop runs them as independent moves, any
  /// of which may fail), and no goal may end worse after all of them: a
  /// goal that accepts each move in turn is fine, else its goal_stats::cost
  /// after all of them must not exceed its cost before (O(cost of stats)
  /// for such goals). Returns true and leaves them applied, or false with
  /// the snapshot unchanged. Since ABI 7; the default refuses.
  virtual bool propose_together(const std::vector<action>& moves, std::string_view reason) {
    (void)moves;
    (void)reason;
    return false;
  }
};

class goal {
 public:
  virtual ~goal() = default;
  /// Unique goal name, e.g. "NW_IN".
  virtual std::string name() const = 0;
  /// Hard goals veto actions that break them, whatever their priority.
  virtual bool hard() const = 0;
  /// Defaults; the model's `goals.<name>` overrides are applied on top.
  virtual goal_config default_config() const = 0;
  /// Band, violators and idleness for the current snapshot.
  virtual goal_stats stats(const snapshot& s, const goal_config& cfg) const = 0;
  /// Would `a` (not yet applied to `s`) make this goal worse (soft goal) or
  /// break it (hard goal)? Must be cheap: O(1) in the cluster size.
  virtual verdict check(const snapshot& s, const goal_config& cfg, const action& a) const = 0;
  /// How `a` (not yet applied to `s`) changes this goal, unitless and
  /// comparable across goals: > 0 it helps, < 0 it hurts, 0 neutral, idle or
  /// not applicable (the default). The built-in distribution goals answer
  /// the relative change of the two brokers' squared distance to the mean
  /// plus the relative change of their distance outside the band, and −1 for
  /// each broker the action takes out of the band. Must be O(1).
  virtual double score(const snapshot& s, const goal_config& cfg, const action& a) const {
    (void)s;
    (void)cfg;
    (void)a;
    return 0.0;
  }
  /// Improves the goal by proposing actions through `ctx`; `s` reflects every
  /// accepted action. Returns one sentence: what was done or why nothing.
  virtual std::string optimize(snapshot& s, const goal_config& cfg, optimize_context& ctx) const = 0;
};

/// Load of broker `b` on `r` if `a` (not yet applied) were applied.
double load_after(const snapshot& s, const action& a, broker_index b, resource r);

}  // namespace moonmq::goals

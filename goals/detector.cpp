#include "goals/detector.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "goals/band.hpp"

namespace moonmq::goals {
namespace {

/// Balancedness weight of the goal ranked `rank` of `n`: 1.1^(n − 1 − rank),
/// ×1.5 when hard (Cruise Control's priority and strictness weights).
double goal_weight(std::size_t rank, std::size_t n, bool hard) {
  return std::pow(1.1, static_cast<double>(n - 1 - rank)) * (hard ? 1.5 : 1.0);
}

struct move_record {
  std::size_t goal = 0;
  std::string reason;
  /// The two partitions of a SWAP.
  std::optional<std::pair<replica_index, replica_index>> swap;
};

/// Why proposals touching one broker were refused, by rule: a goal's name,
/// "max_actions", "avoided destination", "not movable", "broker not
/// eligible", "invalid action".
struct refusals {
  std::map<std::string, std::size_t> by_rule;
  std::map<std::string, std::string> example;  // one refusal text per rule
};

class detector_context final : public optimize_context {
 public:
  detector_context(snapshot& s, const std::vector<goal_binding>& goals, std::vector<goal_report>& reports,
                   std::size_t max_actions)
      : s_(s), goals_(goals), reports_(reports), max_actions_(max_actions),
        last_record_(s.replica_count(), -1), refused_(goals.size()) {
    for (std::size_t i = 0; i < goals.size(); ++i) weights_.push_back(goal_weight(i, goals.size(), goals[i].impl->hard()));
  }

  void set_current(std::size_t g) { current_ = g; }

  bool full() const override { return s_.moved_count() >= max_actions_; }

  bool propose(const action& a, std::string_view reason) override {
    if (const char* why = inadmissible(a)) return reject(a, why, why);
    if (!within_cap(a)) return reject(a, "max_actions", "the plan would move more than max_actions partitions");
    // A partition leaving a slow broker brings load that no soft goal's band
    // counted (a slow broker is not eligible): the soft goals that run later
    // do not judge it, they rebalance the eligible brokers with it
    // afterwards (docs/balancer.md "Slow brokers"). Hard goals and the soft
    // goals optimized earlier keep their veto.
    const bool shedding = s_.slow(a.from);
    for (std::size_t j = 0; j < goals_.size(); ++j) {
      // Every goal: hard goals veto; soft goals optimized earlier must not get
      // worse (DESIGN §4); later soft goals are protected too, so that no goal
      // ends a plan worse than it started (except for a slow broker's load).
      if (shedding && j > current_ && !goals_[j].impl->hard()) continue;
      auto v = goals_[j].impl->check(s_, goals_[j].config, a);
      if (!v.accept) return reject(a, reports_[j].name, v.reason);
    }
    if (a.type == action_type::swap) {
      // The balance loop moves the two partitions of a swap independently,
      // so either may end up done without the other (docs/balancer.md
      // "Detector"): each half alone must keep every hard goal.
      const action halves[] = {{action_type::move, a.replica, a.from, a.to, {}},
                               {action_type::move, a.other, a.to, a.from, {}}};
      for (const action& half : halves)
        for (std::size_t j = 0; j < goals_.size(); ++j) {
          if (!goals_[j].impl->hard()) continue;
          auto v = goals_[j].impl->check(s_, goals_[j].config, half);
          if (!v.accept) return reject(a, reports_[j].name, v.reason + " (one half of the swap alone)");
        }
    }
    if (!s_.apply(a)) return reject(a, "not movable", "not movable");
    move_record rec{current_, std::string(reason), std::nullopt};
    if (a.type == action_type::swap) rec.swap = std::make_pair(a.replica, a.other);
    records_.push_back(std::move(rec));
    note(a.replica);
    if (a.type == action_type::swap) note(a.other);
    ++reports_[current_].accepted;
    return true;
  }

  double others_score(const action& a) const override {
    double sum = 0.0;
    for (std::size_t j = 0; j < goals_.size(); ++j)
      if (j != current_) sum += weights_[j] * goals_[j].impl->score(s_, goals_[j].config, a);
    return sum;
  }

  bool propose_together(const std::vector<action>& moves, std::string_view reason) override {
    if (moves.empty() || moves.size() > 4) return false;
    const action& first = moves.front();
    long long count = static_cast<long long>(s_.moved_count());
    for (std::size_t i = 0; i < moves.size(); ++i) {
      const action& a = moves[i];
      if (a.type != action_type::move) return reject(first, "invalid action", "invalid action");
      for (std::size_t j = 0; j < i; ++j)
        if (moves[j].replica == a.replica) return reject(first, "invalid action", "invalid action");
      if (const char* why = inadmissible(a)) return reject(a, why, why);
      const bool was = s_.owner(a.replica) != s_.origin(a.replica), will = a.to != s_.origin(a.replica);
      count += static_cast<long long>(will) - static_cast<long long>(was);
    }
    if (count > static_cast<long long>(max_actions_))
      return reject(first, "max_actions", "the plan would move more than max_actions partitions");
    // Hard goals: every subset, in the given order, each move checked on
    // the snapshot with the subset's earlier moves applied.
    const std::size_t n = moves.size();
    for (std::uint32_t mask = 1; mask < (1u << n); ++mask) {
      std::array<const action*, 4> applied_now{};
      std::size_t applied_count = 0;
      std::size_t refusing = goals_.size();
      std::string text;
      for (std::size_t i = 0; i < n && refusing == goals_.size(); ++i) {
        if (!(mask & (1u << i))) continue;
        for (std::size_t j = 0; j < goals_.size() && refusing == goals_.size(); ++j) {
          if (!goals_[j].impl->hard()) continue;
          auto v = goals_[j].impl->check(s_, goals_[j].config, moves[i]);
          if (!v.accept) {
            refusing = j;
            text = v.reason + " (a part of a combined step alone)";
          }
        }
        if (refusing == goals_.size()) {
          s_.apply(moves[i]);
          applied_now[applied_count++] = &moves[i];
        }
      }
      while (applied_count > 0) s_.undo(*applied_now[--applied_count]);
      if (refusing != goals_.size()) return reject(first, reports_[refusing].name, text);
    }
    // Every soft goal (the hard ones accepted every subset above): accepted
    // move by move, or no higher cost after all of them.
    std::vector<std::size_t> by_cost;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < goals_.size(); ++j)
        if (!goals_[j].impl->hard() && std::find(by_cost.begin(), by_cost.end(), j) == by_cost.end() &&
            !goals_[j].impl->check(s_, goals_[j].config, moves[i]).accept)
          by_cost.push_back(j);
      s_.apply(moves[i]);
    }
    std::vector<double> after(by_cost.size());
    for (std::size_t k = 0; k < by_cost.size(); ++k)
      after[k] = goals_[by_cost[k]].impl->stats(s_, goals_[by_cost[k]].config).cost;
    for (std::size_t i = n; i-- > 0;) s_.undo(moves[i]);
    for (std::size_t k = 0; k < by_cost.size(); ++k) {
      const double before = goals_[by_cost[k]].impl->stats(s_, goals_[by_cost[k]].config).cost;
      if (!(after[k] <= before + 1e-9 * std::max(1.0, std::fabs(before))))  // a NaN cost refuses too
        return reject(first, reports_[by_cost[k]].name,
                      reports_[by_cost[k]].name + " would end further from satisfied after a combined step");
    }
    for (const action& a : moves) {
      s_.apply(a);
      records_.push_back(move_record{current_, std::string(reason), std::nullopt});
      note(a.replica);
    }
    ++reports_[current_].accepted;
    return true;
  }

  /// Refusals of goal `g`'s proposals that moved a partition off or onto `b`.
  const refusals* refused(std::size_t g, broker_index b) const {
    auto it = refused_[g].find(b.value);
    return it == refused_[g].end() ? nullptr : &it->second;
  }

  /// Replicas in the order they were first moved, with their last record.
  const std::vector<std::uint32_t>& touched() const { return touched_; }
  const move_record& record_of(replica_index r) const {
    return records_[static_cast<std::size_t>(last_record_[r.value])];
  }

 private:
  bool reject(const action& a, const std::string& rule, const std::string& text) {
    ++reports_[current_].rejected;
    for (broker_index b : {a.from, a.to}) {
      if (b.value >= s_.broker_count()) continue;
      auto& r = refused_[current_][b.value];
      if (r.by_rule[rule]++ == 0) r.example[rule] = text;
    }
    return false;
  }
  /// nullptr when `a` passes the detector's own rules, else the rule it breaks.
  const char* inadmissible(const action& a) const {
    if (a.from.value >= s_.broker_count() || a.to.value >= s_.broker_count()) return "invalid action";
    if (a.replica.value >= s_.replica_count()) return "invalid action";
    // A slow broker is not eligible, yet partitions may leave it (one way:
    // no swap brings a partition onto it).
    const bool from_ok = s_.eligible(a.from) || (s_.slow(a.from) && a.type == action_type::move);
    if (!from_ok || !s_.eligible(a.to) || a.from == a.to) return "broker not eligible";
    if (!s_.movable(a.replica) || s_.owner(a.replica) != a.from) return "not movable";
    // A partition never goes where it recently failed to go or came from
    // (docs/balancer.md "Stability rules").
    if (s_.avoided(a.replica, a.to)) return "avoided destination";
    if (a.type == action_type::swap) {
      if (a.other.value >= s_.replica_count() || !s_.movable(a.other) || s_.owner(a.other) != a.to)
        return "not movable";
      if (s_.avoided(a.other, a.from)) return "avoided destination";
    }
    return nullptr;
  }
  // Number of moved partitions after `a`, compared with the cap.
  bool within_cap(const action& a) const {
    long long count = static_cast<long long>(s_.moved_count());
    auto delta = [&](replica_index r, broker_index to) {
      const bool was = s_.owner(r) != s_.origin(r);
      const bool will = to != s_.origin(r);
      return static_cast<long long>(will) - static_cast<long long>(was);
    };
    count += delta(a.replica, a.to);
    if (a.type == action_type::swap) count += delta(a.other, a.from);
    return count <= static_cast<long long>(max_actions_);
  }
  void note(replica_index r) {
    if (last_record_[r.value] < 0) touched_.push_back(r.value);
    last_record_[r.value] = static_cast<std::int64_t>(records_.size() - 1);
  }

  snapshot& s_;
  const std::vector<goal_binding>& goals_;
  std::vector<goal_report>& reports_;
  std::size_t max_actions_;
  std::size_t current_ = 0;
  std::vector<std::int64_t> last_record_;
  std::vector<std::uint32_t> touched_;
  std::vector<move_record> records_;
  std::vector<std::map<std::uint32_t, refusals>> refused_;  // per goal, per broker
  std::vector<double> weights_;                              // balancedness weight per goal
};

/// True for the built-in distribution goals (named after their resource),
/// whose search the "nothing proposed" reason of why_outside describes.
bool is_distribution_goal(const goal& g) {
  if (g.hard()) return false;
  for (std::size_t r = 0; r < kResourceCount; ++r)
    if (g.name() == resource_name(static_cast<resource>(r))) return true;
  return false;
}

/// Why a broker is still outside a goal's band after the plan: the refusals
/// of that goal's proposals touching it, as "592 proposal(s) moving
/// partitions off or onto it refused: NW_IN 580 (…); max_actions 12 (…)";
/// else, when the plan was full as the goal ended (`capped`), that
/// max_actions stopped the goal first; else that nothing was proposed, with
/// the distribution goals' search as the cause when `distribution`.
std::string why_outside(const refusals* r, bool capped, bool distribution) {
  if (!r && capped) return "max_actions reached before this broker was handled";
  if (!r && distribution)
    return "no move or swap was proposed: every movable partition of it and its partners would overshoot the "
           "band, push the partner out of it, or not improve the pair";
  if (!r) return "no action moving a partition off or onto it was proposed";
  std::size_t total = 0;
  for (const auto& [rule, n] : r->by_rule) total += n;
  std::string out = std::to_string(total) + " proposal(s) moving partitions off or onto it refused:";
  bool first = true;
  for (const auto& [rule, n] : r->by_rule) {
    out += (first ? " " : "; ") + rule + " " + std::to_string(n) + " (" + r->example.at(rule) + ")";
    first = false;
  }
  if (capped) out += "; then max_actions was reached";
  return out;
}

/// The drain phase (see run_detector): the replicas it moved, in order.
std::vector<replica_index> run_drain(snapshot& s, const std::vector<goal_binding>& goals, std::size_t max_actions,
                                     drain_report& report) {
  std::vector<replica_index> moved;
  for (std::uint32_t b = 0; b < s.broker_count(); ++b)
    if (s.draining(broker_index{b})) report.brokers.push_back(s.broker_id(broker_index{b}));
  const std::vector<broker_index> targets = drain_targets(s);
  std::size_t internal = 0, refused = 0, capped = 0, onto_avoided = 0;
  for (std::uint32_t r = 0; r < s.replica_count(); ++r) {
    const replica_index ri{r};
    const broker_index from = s.owner(ri);
    if (!s.draining(from)) continue;
    if (!s.drainable(ri)) {
      ++internal;
      continue;
    }
    if (s.moved_count() >= max_actions) {
      ++capped;
      continue;
    }
    if (auto to = place_drained(s, goals, ri, targets)) {
      moved.push_back(ri);
      if (s.avoided(ri, *to)) ++onto_avoided;
    } else {
      ++refused;
    }
  }
  report.moved = moved.size();
  report.left = internal + refused + capped;
  std::string text = "draining " + std::to_string(report.brokers.size()) + " broker(s): " +
                     std::to_string(report.moved) + " partition(s) move off";
  if (targets.empty()) text += "; no broker can take them (every other one is draining, excluded or down)";
  if (capped) text += "; " + std::to_string(capped) + " wait for a later pass (MaxActionsPerDetect)";
  if (refused) text += "; " + std::to_string(refused) + " have no destination every hard goal accepts";
  if (internal) text += "; " + std::to_string(internal) + " are moving already or internal";
  if (onto_avoided)
    text += "; " + std::to_string(onto_avoided) +
            " go to a broker they recently left or failed to reach (no other target accepts them)";
  report.explanation = text;
  return moved;
}

broker_loads loads_of(const snapshot& s) {
  broker_loads out(s.broker_count());
  for (std::uint32_t b = 0; b < s.broker_count(); ++b)
    for (std::size_t r = 0; r < kResourceCount; ++r) out[b][r] = s.load(broker_index{b}, static_cast<resource>(r));
  return out;
}

}  // namespace

std::vector<goal_binding> order_goals(std::vector<goal_binding> goals) {
  goals.erase(std::remove_if(goals.begin(), goals.end(),
                             [](const goal_binding& g) { return g.impl == nullptr || !g.config.enabled; }),
              goals.end());
  std::stable_sort(goals.begin(), goals.end(), [](const goal_binding& a, const goal_binding& b) {
    if (a.config.priority != b.config.priority) return a.config.priority > b.config.priority;
    return a.impl->name() < b.impl->name();
  });
  return goals;
}

std::vector<broker_index> drain_targets(const snapshot& s) {
  std::vector<broker_index> targets;
  for (std::uint32_t b = 0; b < s.broker_count(); ++b)
    if (s.drain_target(broker_index{b})) targets.push_back(broker_index{b});
  return targets;
}

std::optional<broker_index> place_drained(snapshot& s, const std::vector<goal_binding>& goals, replica_index ri,
                                          const std::vector<broker_index>& targets, avoid_rank avoided) {
  const broker_index from = s.owner(ri);
  // Not avoided first (an avoided target is the last resort: a drain must
  // end), then the drained broker's own rack (AutoMQ keeps a leaving
  // broker's partitions in its rack when it can), then fewest partitions
  // per unit of weight, then least NW_IN per unit of weight, then broker
  // order. A failover puts the count before the avoided rule and the rack
  // (avoid_rank::after_count): a dead broker's partitions spread over every
  // survivor rather than pile onto its rack mates.
  std::vector<broker_index> order = targets;
  std::stable_sort(order.begin(), order.end(), [&](broker_index x, broker_index y) {
    const bool ax = s.avoided(ri, x), ay = s.avoided(ri, y);
    const bool rx = s.same_rack(x, from), ry = s.same_rack(y, from);
    const double px = s.load(x, resource::partition_count) / s.weight(x),
                 py = s.load(y, resource::partition_count) / s.weight(y);
    if (avoided == avoid_rank::after_count && px != py) return px < py;
    if (ax != ay) return ay;
    if (rx != ry) return rx;
    if (px != py) return px < py;
    return s.load(x, resource::nw_in) / s.weight(x) < s.load(y, resource::nw_in) / s.weight(y);
  });
  for (broker_index to : order) {
    if (to == from) continue;
    action a{action_type::move, ri, from, to, {}};
    bool accepted = true;
    for (const auto& g : goals)
      if (g.impl->hard() && !g.impl->check(s, g.config, a).accept) {
        accepted = false;
        break;
      }
    if (accepted && s.apply(a)) return to;
  }
  return std::nullopt;
}

std::vector<goal_binding> bind_goals(const cluster_model& model, const std::vector<const goal*>& goals) {
  std::vector<goal_binding> bound;
  for (const goal* g : goals) {
    if (!g) continue;
    goal_config cfg = g->default_config();
    if (model.shared_storage) {
      const std::string name = g->name();
      if (name == resource_name(resource::disk) || name == std::string(resource_name(resource::disk)) + "_CAPACITY")
        cfg.enabled = false;
      else if (!g->hard() && (name == resource_name(resource::nw_in) || name == resource_name(resource::nw_out) ||
                              name == resource_name(resource::partition_count)))
        cfg.avg_deviation = kSharedStorageAvgDeviation;
    }
    if (auto it = model.goals.find(g->name()); it != model.goals.end()) cfg = it->second.apply_to(cfg);
    bound.push_back({g, cfg});
  }
  return order_goals(std::move(bound));
}

double balancedness(const snapshot& s, const std::vector<goal_binding>& goals) {
  if (goals.empty() || s.eligible_count() == 0) return 100.0;
  double weighted = 0.0, total = 0.0;
  const std::size_t n = goals.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& g = goals[i];
    const double w = goal_weight(i, n, g.impl->hard());
    const goal_stats st = g.impl->stats(s, g.config);
    const double ok = st.idle ? 1.0
                              : 1.0 - static_cast<double>(st.violators.size()) / static_cast<double>(s.eligible_count());
    weighted += w * std::clamp(ok, 0.0, 1.0);
    total += w;
  }
  const double score = total > 0.0 ? 100.0 * weighted / total : 100.0;
  return std::isfinite(score) ? std::clamp(score, 0.0, 100.0) : 0.0;
}

plan run_detector(snapshot& s, const std::vector<goal_binding>& goals, std::size_t max_actions) {
  plan p;
  p.broker_ids.reserve(s.broker_count());
  for (std::uint32_t b = 0; b < s.broker_count(); ++b) p.broker_ids.push_back(s.broker_id(broker_index{b}));
  p.brokers_before = loads_of(s);
  p.balancedness_before = balancedness(s, goals);
  p.goals.resize(goals.size());
  for (std::size_t i = 0; i < goals.size(); ++i) {
    auto& r = p.goals[i];
    r.name = goals[i].impl->name();
    r.hard = goals[i].impl->hard();
    r.priority = goals[i].config.priority;
    r.before = goals[i].impl->stats(s, goals[i].config);
    if (r.name == resource_name(resource::partition_count) && !r.before.idle && r.before.basis != "utilization") {
      // Each move takes one partition off one broker and onto one other: it
      // lowers the total surplus above the band by at most 1 and the total
      // shortfall below it by at most 1, so either total bounds the moves.
      // The band is per unit of weight: a broker of weight w may hold
      // w·upper partitions, widened to ceil(w·mean) (band::upper_of).
      std::size_t surplus = 0, shortfall = 0;
      for (broker_index v : r.before.violators) {
        const double count = s.load(v, resource::partition_count), w = s.weight(v);
        const double m = r.before.mean * w;
        const double over = count - std::max(r.before.upper * w, std::ceil(m - 1e-9)),
                     under = std::min(r.before.lower * w, std::floor(m + 1e-9)) - count;
        if (over > 1e-9) surplus += static_cast<std::size_t>(std::ceil(over - 1e-9));
        if (under > 1e-9) shortfall += static_cast<std::size_t>(std::ceil(under - 1e-9));
      }
      p.count_moves_lower_bound = std::max(surplus, shortfall);
    }
  }
  std::vector<replica_index> drained;
  if (s.draining_count() > 0) {
    p.drain.emplace();
    drained = run_drain(s, goals, max_actions, *p.drain);
  }
  detector_context ctx(s, goals, p.goals, max_actions);
  std::vector<std::uint8_t> capped(goals.size(), 0);  // the plan was full when the goal ended
  for (std::size_t i = 0; i < goals.size(); ++i) {
    ctx.set_current(i);
    p.goals[i].explanation = goals[i].impl->optimize(s, goals[i].config, ctx);
    capped[i] = ctx.full();
  }
  for (std::size_t i = 0; i < goals.size(); ++i) {
    auto& r = p.goals[i];
    r.after = goals[i].impl->stats(s, goals[i].config);
    const bool distribution = is_distribution_goal(*goals[i].impl);
    for (broker_index v : r.after.violators)
      r.still_outside.push_back({v, why_outside(ctx.refused(i, v), capped[i] != 0, distribution)});
  }

  auto emit = [&](replica_index ri, std::string goal, std::string reason, std::optional<replica_index> partner) {
    if (s.owner(ri) == s.origin(ri)) return;  // moved back where it started
    plan_action a;
    a.type = action_type::move;
    if (partner) {
      a.type = action_type::swap;
      a.swap_with = topic_partition{s.topic(*partner), s.partition(*partner)};
    }
    a.topic = s.topic(ri);
    a.partition = s.partition(ri);
    a.replica = ri;
    a.from_index = s.origin(ri);
    a.to_index = s.owner(ri);
    a.from = s.broker_id(a.from_index);
    a.to = s.broker_id(a.to_index);
    a.goal = std::move(goal);
    a.reason = std::move(reason);
    p.actions.push_back(std::move(a));
  };
  // A drained partition keeps the "drain" label even when a goal moved it
  // on: it leaves a draining broker, which the balance loop does whatever
  // DryRun says.
  std::vector<std::uint8_t> was_drained(s.replica_count(), 0);
  for (replica_index ri : drained) was_drained[ri.value] = 1;
  for (replica_index ri : drained) {
    std::string reason = "broker " + s.broker_id(s.origin(ri)) + " is draining";
    emit(ri, "drain", std::move(reason), std::nullopt);
  }
  for (std::uint32_t r : ctx.touched()) {
    if (was_drained[r]) continue;
    const auto& rec = ctx.record_of(replica_index{r});
    // Still a SWAP when both halves end where that swap put them: the partner
    // was last moved by the same swap and neither went back home.
    std::optional<replica_index> partner;
    if (rec.swap) {
      const replica_index other = rec.swap->first == replica_index{r} ? rec.swap->second : rec.swap->first;
      // The two ended exactly exchanged: each is where the other started.
      if (!was_drained[other.value] && &ctx.record_of(other) == &rec && s.owner(other) == s.origin(replica_index{r}) &&
          s.owner(replica_index{r}) == s.origin(other))
        partner = other;
    }
    emit(replica_index{r}, p.goals[rec.goal].name, rec.reason, partner);
  }
  p.brokers_after = loads_of(s);
  p.balancedness_after = balancedness(s, goals);
  if (p.drain && !p.actions.empty())
    p.summary = std::to_string(p.actions.size()) + " partition move(s) planned; " + p.drain->explanation;
  else if (p.drain) p.summary = "no action; " + p.drain->explanation;
  else if (goals.empty()) p.summary = "no goal is enabled; nothing moved";
  else if (p.actions.empty()) p.summary = "no action: every goal is satisfied, idle, or has no acceptable move (see goals[].explanation)";
  else p.summary = std::to_string(p.actions.size()) + " partition move(s) planned";
  return p;
}

std::size_t shared_storage_cap(const cluster_model& model, const snapshot& s) {
  // MaxActionsPerDetect 0 stops every move: not raised.
  if (!model.shared_storage || model.max_actions == 0 || s.eligible_count() == 0) return model.max_actions;
  const double mean = s.eligible_total(resource::partition_count) / s.eligible_weight_total();
  std::size_t lacking = 0;
  for (std::uint32_t b = 0; b < s.broker_count(); ++b) {
    const broker_index bi{b};
    if (!s.eligible(bi)) continue;
    const double share = std::floor(mean * s.weight(bi) + 1e-9);  // its weighted share
    const double count = s.load(bi, resource::partition_count);
    if (count < share) lacking += static_cast<std::size_t>(share - count);
  }
  return std::max(model.max_actions, lacking);
}

outcome<plan> make_plan(const cluster_model& model, const std::vector<const goal*>& goals) {
  auto frozen = snapshot::freeze(model);
  if (!frozen) return outcome<plan>::failure(frozen.error());
  const std::size_t cap = shared_storage_cap(model, frozen.value());
  return run_detector(frozen.value(), bind_goals(model, goals), cap);
}

}  // namespace moonmq::goals

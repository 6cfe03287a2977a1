// The shared-storage failover of the balance loop (docs/balancer.md
// "Failover (shared storage)"): on the Raft leader, a fenced broker silent
// for failover_wait_ms has its partitions handed to other brokers by owner
// entries conditional on the epochs the image held. The choice is
// goals/failover_planner.hpp's; this file reads the image and the Raft
// status, proposes and records the answers.

#include <caf/all.hpp>

#include "actors/balancer_impl.hpp"
#include "actors/errors.hpp"
#include "cluster/takeover_hold.hpp"
#include "raft/types.hpp"
#include "util/clock.hpp"

namespace moonmq::balancer_detail {
namespace {

/// A failover owner entry's answer: the cluster state waits 60 s for it.
constexpr milliseconds failover_timeout{65000};

/// Records a failover owner entry's answer in the pass that proposed it
/// (and in the last pass, when that is another one).
void failover_settled(self_ptr self, const goals::failover_action& a, int status, const std::string& message) {
  auto& st = self->state;
  st.failover_pending.erase(a.tp);
  if (status == 200) {
    st.probe.failover_applied();
  } else {
    logger()->warn("balancer.failover_refused topic={} partition={} from={} to={} expect_epoch={} status={} "
                   "error=\"{}\"",
                   a.tp.topic, a.tp.partition, a.from, a.to, a.expect_epoch, status, message);
  }
  for (json* pass : {&st.last_pass, &st.last_failover}) {
    if (!pass->is_object() || !pass->contains("executed"))
      continue;
    for (auto& e : (*pass)["executed"])
      if (e.value("type", "") == "FAILOVER" && e["topic"] == a.tp.topic && e["partition"] == a.tp.partition
          && e["to"] == a.to && e.value("result", "") == "sent") {
        e["result"] = status == 200 ? "applied" : "refused";
        e["status"] = status;
        if (status != 200)
          e["error"] = message;
      }
  }
}

/// Proposes one failover owner entry: `to` owns the partition if it is
/// still at `expect_epoch` when the entry applies. Proposed on this broker
/// only (never forwarded: another leader has not waited out the silence).
void execute_failover(self_ptr self, const goals::failover_action& a) {
  auto& st = self->state;
  st.failover_pending.insert(a.tp);
  self
    ->request(st.cstate, failover_timeout, owner_atom::value, a.tp.topic, a.tp.partition, a.to, st.epoch,
              a.expect_epoch, false)
    .then([self, a](bool) { failover_settled(self, a, 200, ""); },
          [self, a](caf::error& e) {
            failover_settled(self, a, http_status_of(e), error_code_of(e) + ": " + message_of(e));
          });
}

}  // namespace

goals::failover_selection failover_now(const balancer_state& st, int64_t* term) {
  if (!st.settings.shared_storage || !st.settings.image || !st.settings.raft)
    return {};
  auto status = st.settings.raft->get();
  if (!status.is_leader)
    return {};
  auto cut = st.settings.image->ownership();
  if (cut.standing->fenced.empty())
    return {};
  goals::failover_view v;
  v.fenced = cut.standing->fenced;
  v.silent_ms = std::move(status.silent_ms);
  v.wait_ms = st.settings.failover_wait_ms;
  for (const auto& [tp, owner] : *cut.owners) {
    if (!v.fenced.count(owner))
      continue;
    goals::owner_row row;
    row.tp = {tp.topic, tp.partition};
    row.owner = owner;
    auto e = cut.epochs->find(tp);
    row.epoch = e == cut.epochs->end() ? 1 : e->second;
    v.owners.push_back(std::move(row));
  }
  // An unfinished move is ended by its own rules first (the leader drives
  // a dead source's move to its end); a later pass picks the partition up.
  for (const auto& [id, m] : *cut.moves)
    if (!raft::finished_move_state(m.state))
      v.held.insert({m.tp.topic, m.tp.partition});
  v.held.insert(st.failover_pending.begin(), st.failover_pending.end());
  // A partition its source took back after a cutover may still have taken
  // writes at the destination until the destination's lease ran out; the
  // next owner would read where that epoch ends, so it is not handed over
  // before the hold a takeover waits (docs/shared-storage.md "Take-back").
  if (st.settings.takeover_hold)
    for (const auto& row : v.owners) {
      cluster::topic_partition tp{row.tp.topic, row.tp.partition};
      const auto epoch = static_cast<int64_t>(row.epoch);
      if (st.settings.image->taken_back_epoch(tp) == epoch
          && st.settings.takeover_hold->holding(tp.topic, tp.partition, epoch, util::monotonic_ms()))
        v.held.insert(row.tp);
    }
  if (term)
    *term = status.term;
  return goals::select_failover(v);
}

bool failover_due(const balancer_state& st) {
  return !failover_now(st).partitions.empty();
}

void run_failover(self_ptr self, json& pass, goals::cluster_model& model,
                  const std::vector<const goals::goal*>& goal_list, const goals::failover_selection& sel,
                  int64_t term, bool act) {
  auto& st = self->state;
  json report{{"brokers", sel.brokers},
              {"waiting", sel.waiting},
              {"held", sel.held.size()},
              {"wait_ms", st.settings.failover_wait_ms}};
  if (sel.partitions.empty()) {
    report["explanation"] = sel.held.empty() ? "fenced brokers are not silent for the wait yet"
                                             : std::to_string(sel.held.size())
                                                 + " partition(s) wait for an unfinished move, a take-back's hold or an answer";
    pass["failover"] = report;
    return;
  }
  auto planned = goals::plan_failover(model, goal_list, sel);
  if (!planned) {
    pass["errors"].push_back("failover: " + planned.error());
    pass["failover"] = report;
    return;
  }
  auto plan = planned.value();
  report["explanation"] = plan.explanation;
  report["unplaced"] = plan.unplaced.size();
  // Right before proposing: still the leader of the term the silences were
  // counted in, and each broker still silent for the wait (one that
  // answered in between keeps its partitions).
  std::vector<goals::failover_action> going;
  if (act) {
    auto now = st.settings.raft->get();
    if (now.is_leader && now.term == term)
      going = goals::still_silent(plan, now.silent_ms, st.settings.failover_wait_ms);
  }
  std::set<goals::topic_partition> sent;
  for (const auto& a : going)
    sent.insert(a.tp);
  for (const auto& a : plan.actions) {
    bool go = sent.count(a.tp) != 0;
    json row{{"type", "FAILOVER"},     {"topic", a.tp.topic}, {"partition", a.tp.partition},
             {"from", a.from},         {"to", a.to},          {"goal", "failover"},
             {"reason", a.reason},     {"expect_epoch", a.expect_epoch},
             {"result", go ? "sent" : (act ? "not_sent" : "plan_only")}};
    if (act && !go)
      row["error"] = "the broker answered again, or this broker is no longer the Raft leader of term "
                     + std::to_string(term);
    pass["executed"].push_back(std::move(row));
  }
  report["proposed"] = going.size();
  pass["failover"] = report;
  if (act) {
    std::map<std::string, std::map<std::string, int>> spread;  // from -> to -> partitions
    for (const auto& a : going)
      ++spread[a.from][a.to];
    for (const auto& [from, to] : spread) {
      std::string dest;
      size_t n = 0;
      for (const auto& [id, count] : to) {
        dest += (dest.empty() ? "" : ",") + id + ":" + std::to_string(count);
        n += static_cast<size_t>(count);
      }
      logger()->warn("balancer.failover broker={} partitions={} destinations={} silent_ms={} wait_ms={} term={}", from,
                     n, dest, sel.silent_ms.count(from) ? sel.silent_ms.at(from) : 0, st.settings.failover_wait_ms,
                     term);
    }
    if (going.size() < plan.actions.size())
      logger()->warn("balancer.failover_held partitions={} msg=\"a broker answered again, or leadership moved, "
                     "before the proposal\"",
                     plan.actions.size() - going.size());
    if (!plan.unplaced.empty())
      logger()->warn("balancer.failover_unplaced partitions={} msg=\"{}\"", plan.unplaced.size(), plan.explanation);
    plan.actions = going;
    // Back to back: the Raft leader appends them to one batch in practice.
    for (const auto& a : going)
      execute_failover(self, a);
  }
  goals::add_failover_moves(model, plan);
}

}  // namespace moonmq::balancer_detail

#include "goals/failover_planner.hpp"

#include <algorithm>

#include "goals/detector.hpp"
#include "goals/snapshot.hpp"

namespace moonmq::goals {

failover_selection select_failover(const failover_view& v) {
  failover_selection out;
  out.fenced = v.fenced;
  out.wait_ms = v.wait_ms;
  std::map<std::string, std::vector<const owner_row*>> owned;  // fenced broker -> its rows
  for (const auto& row : v.owners)
    if (v.fenced.count(row.owner)) owned[row.owner].push_back(&row);
  for (const auto& [broker, rows] : owned) {
    auto s = v.silent_ms.find(broker);
    if (s == v.silent_ms.end() || s->second < v.wait_ms) {
      out.waiting.push_back(broker);
      continue;
    }
    out.brokers.push_back(broker);
    out.silent_ms[broker] = s->second;
    for (const owner_row* row : rows) (v.held.count(row->tp) ? out.held : out.partitions).push_back(*row);
  }
  auto by_tp = [](const owner_row& a, const owner_row& b) { return a.tp < b.tp; };
  std::sort(out.partitions.begin(), out.partitions.end(), by_tp);
  std::sort(out.held.begin(), out.held.end(), by_tp);
  return out;
}

namespace {

std::string failover_reason(const std::string& broker, std::int64_t silent, std::int64_t wait) {
  return "broker " + broker + " is fenced and silent for " + std::to_string(silent) + " ms (wait " +
         std::to_string(wait) + " ms)";
}

}  // namespace

outcome<failover_plan> plan_failover(cluster_model model, const std::vector<const goal*>& goals,
                                     const failover_selection& sel) {
  failover_plan out;
  if (sel.partitions.empty()) {
    out.explanation = "no failover";
    return out;
  }
  const std::set<std::string> leaving(sel.brokers.begin(), sel.brokers.end());
  std::set<std::string> known;
  for (auto& b : model.brokers) {
    known.insert(b.id);
    if (sel.fenced.count(b.id)) b.alive = false;
    if (leaving.count(b.id)) b.draining = true;
  }
  for (const auto& id : sel.brokers)
    if (!known.count(id)) {
      broker_spec b;
      b.id = id;
      b.alive = false;
      b.draining = true;
      model.brokers.push_back(std::move(b));
    }
  std::map<topic_partition, std::size_t> index;
  for (std::size_t i = 0; i < model.replicas.size(); ++i)
    index[{model.replicas[i].topic, model.replicas[i].partition}] = i;
  std::set<topic_partition> selected;
  for (const auto& row : sel.partitions) {
    selected.insert(row.tp);
    if (auto it = index.find(row.tp); it != index.end()) {
      model.replicas[it->second].owner = row.owner;  // the image decides, not the last load report
      continue;
    }
    replica_spec r;
    r.topic = row.tp.topic;
    r.partition = row.tp.partition;
    r.owner = row.owner;
    model.replicas.push_back(std::move(r));
  }
  model.in_flight.erase(std::remove_if(model.in_flight.begin(), model.in_flight.end(),
                                       [&](const in_flight_move& m) { return selected.count(m.tp) != 0; }),
                        model.in_flight.end());
  auto frozen = snapshot::freeze(model);
  if (!frozen) return outcome<failover_plan>::failure(frozen.error());
  snapshot& s = frozen.value();
  const auto bound = bind_goals(model, goals);
  const auto targets = drain_targets(s);
  for (const auto& row : sel.partitions) {
    auto ri = s.find_replica(row.tp.topic, row.tp.partition);
    // Impossible: every selected partition was put into the model above.
    if (!ri) return outcome<failover_plan>::failure("failover: " + row.tp.topic + "-" +
                                                    std::to_string(row.tp.partition) + " missing from the model");
    // Count before the avoided rule: a partition a recent move brought onto
    // the dead broker avoids that move's source, and every one of them would
    // otherwise go to the same survivor.
    auto to = place_drained(s, bound, *ri, targets, avoid_rank::after_count);
    if (!to) {
      out.unplaced.push_back(row);
      continue;
    }
    const auto silent = sel.silent_ms.count(row.owner) ? sel.silent_ms.at(row.owner) : 0;
    failover_action a;
    a.tp = row.tp;
    a.from = row.owner;
    a.to = s.broker_id(*to);
    a.expect_epoch = row.epoch;
    a.reason = failover_reason(row.owner, silent, sel.wait_ms);
    out.actions.push_back(std::move(a));
  }
  std::string text = "failover of " + std::to_string(sel.brokers.size()) + " fenced broker(s): " +
                     std::to_string(out.actions.size()) + " partition(s) get a new owner";
  if (targets.empty()) text += "; no broker can take them (every other one is fenced, down, draining, excluded or slow)";
  else if (!out.unplaced.empty())
    text += "; " + std::to_string(out.unplaced.size()) + " have no destination every hard goal accepts";
  if (!sel.held.empty()) text += "; " + std::to_string(sel.held.size()) + " wait for an unfinished move to end";
  out.explanation = text;
  return out;
}

std::vector<failover_action> still_silent(const failover_plan& p, const std::map<std::string, std::int64_t>& silent_ms,
                                          std::int64_t wait_ms) {
  std::vector<failover_action> out;
  for (const auto& a : p.actions) {
    auto s = silent_ms.find(a.from);
    if (s != silent_ms.end() && s->second >= wait_ms) out.push_back(a);
  }
  return out;
}

void add_failover_moves(cluster_model& model, const failover_plan& p) {
  std::set<topic_partition> moved;
  for (const auto& a : p.actions) moved.insert(a.tp);
  model.in_flight.erase(std::remove_if(model.in_flight.begin(), model.in_flight.end(),
                                       [&](const in_flight_move& m) { return moved.count(m.tp) != 0; }),
                        model.in_flight.end());
  std::set<topic_partition> present;
  for (const auto& r : model.replicas) present.insert({r.topic, r.partition});
  for (const auto& a : p.actions) {
    if (!present.count(a.tp)) {
      // Owned by its destination already: the dead broker may not be a
      // broker of this model at all.
      replica_spec r;
      r.topic = a.tp.topic;
      r.partition = a.tp.partition;
      r.owner = a.to;
      model.replicas.push_back(std::move(r));
    }
    in_flight_move m;
    m.tp = a.tp;
    m.to = a.to;
    model.in_flight.push_back(std::move(m));
  }
}

}  // namespace moonmq::goals

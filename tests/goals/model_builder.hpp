#pragma once
// Small helpers to build cluster models in tests.

#include <map>
#include <string>
#include <vector>

#include "goals/builtin_goals.hpp"
#include "goals/detector.hpp"
#include "goals/model.hpp"

namespace moonmq::test {

inline goals::broker_spec broker(std::string id, bool alive = true, bool excluded = false) {
  goals::broker_spec b;
  b.id = std::move(id);
  b.alive = alive;
  b.excluded = excluded;
  return b;
}

inline goals::replica_spec replica(std::string topic, int partition, std::string owner, double nw_in = 0.0,
                                   double nw_out = 0.0, double disk = 0.0) {
  goals::replica_spec r;
  r.topic = std::move(topic);
  r.partition = partition;
  r.owner = std::move(owner);
  r.load = {nw_in, nw_out, disk};
  return r;
}

// Built field by field: GCC 12 warns maybe-uninitialized on braced lists
// of these nested structs.
inline goals::in_flight_move moving(std::string topic, int partition, std::string to) {
  goals::in_flight_move m;
  m.tp.topic = std::move(topic);
  m.tp.partition = partition;
  m.to = std::move(to);
  return m;
}

inline goals::avoided_destination avoid(std::string topic, int partition, std::string broker) {
  goals::avoided_destination a;
  a.tp.topic = std::move(topic);
  a.tp.partition = partition;
  a.broker = std::move(broker);
  return a;
}

/// `m` with every action of `p` applied (each partition on its planned owner).
inline goals::cluster_model applied(goals::cluster_model m, const goals::plan& p) {
  std::map<std::pair<std::string, std::int32_t>, const std::string*> to;
  for (const auto& a : p.actions) to[{a.topic, a.partition}] = &a.to;
  for (auto& r : m.replicas)
    if (auto it = to.find({r.topic, r.partition}); it != to.end()) r.owner = *it->second;
  return m;
}

/// Goal `name`'s report in `p`, or nullptr when it did not run.
inline const goals::goal_report* report_of(const goals::plan& p, const std::string& name) {
  for (const auto& g : p.goals)
    if (g.name == name) return &g;
  return nullptr;
}

/// The built-in goals, made once, as make_plan takes them.
inline std::vector<const goals::goal*> builtin_goals() {
  static const auto made = goals::make_builtin_goals();
  std::vector<const goals::goal*> out;
  for (const auto& g : made) out.push_back(g.get());
  return out;
}

}  // namespace moonmq::test

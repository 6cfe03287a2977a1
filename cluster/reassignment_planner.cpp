#include "cluster/reassignment_planner.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace moonmq::cluster {
namespace {

using json = nlohmann::json;

status validate(const std::vector<partition_owner>& current, const std::vector<broker_id>& targets) {
  if (targets.empty())
    return make_error(errc::invalid_argument, "no target brokers given");
  std::set<broker_id> distinct;
  for (const auto& b : targets) {
    if (!valid_broker_id(b.str()))
      return make_error(errc::invalid_argument, "invalid broker id " + quote_input(b.str()));
    if (!distinct.insert(b).second)
      return make_error(errc::invalid_argument, "broker " + b.str() + " is named twice");
  }
  std::set<topic_partition> seen;
  for (const auto& p : current) {
    if (!valid_topic(p.tp.topic))
      return make_error(errc::invalid_argument, "invalid topic name " + quote_input(p.tp.topic));
    if (is_internal_topic(p.tp.topic))
      return make_error(errc::invalid_argument, "topic " + p.tp.topic + " is internal; internal topics never move");
    if (p.tp.partition < 0)
      return make_error(errc::invalid_argument, "negative partition in " + to_string(p.tp));
    if (!valid_broker_id(p.owner.str()))
      return make_error(errc::invalid_argument, "invalid owner " + quote_input(p.owner.str()) + " of " + to_string(p.tp));
    if (!seen.insert(p.tp).second)
      return make_error(errc::invalid_argument, to_string(p.tp) + " is listed twice");
  }
  return {};
}

}  // namespace

result<std::vector<planned_move>> generate_plan(const std::vector<partition_owner>& current,
                                                const std::vector<broker_id>& targets) {
  if (auto ok = validate(current, targets); !ok)
    return ok.err();
  const size_t nb = targets.size();
  std::map<broker_id, size_t> index;
  for (size_t i = 0; i < nb; ++i)
    index[targets[i]] = i;

  std::map<std::string, std::vector<partition_owner>> by_topic;
  for (const auto& p : current)
    by_topic[p.tp.topic].push_back(p);

  std::vector<size_t> planned_total(nb, 0);  // partitions placed on each target so far, all topics
  size_t cursor = 0;                          // round-robin position, shared by all topics
  std::vector<planned_move> moves;

  for (auto& [topic, parts] : by_topic) {
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.tp < b.tp; });
    // Current holdings of this topic per target (partition order).
    std::vector<std::vector<const partition_owner*>> held(nb);
    std::vector<const partition_owner*> loose;
    for (const auto& p : parts) {
      auto it = index.find(p.owner);
      if (it == index.end())
        loose.push_back(&p);
      else
        held[it->second].push_back(&p);
    }
    const size_t base = parts.size() / nb;
    size_t extra = parts.size() % nb;
    std::vector<size_t> order(nb);
    for (size_t i = 0; i < nb; ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (held[a].size() != held[b].size())
        return held[a].size() > held[b].size();
      return planned_total[a] < planned_total[b];
    });
    std::vector<size_t> quota(nb, base);
    for (size_t k = 0; k < extra; ++k)
      quota[order[k]] = base + 1;

    std::vector<size_t> placed(nb, 0);
    for (size_t i = 0; i < nb; ++i) {
      for (const auto* p : held[i]) {
        if (placed[i] < quota[i])
          ++placed[i];
        else
          loose.push_back(p);
      }
    }
    std::sort(loose.begin(), loose.end(), [](const auto* a, const auto* b) { return a->tp < b->tp; });
    for (const auto* p : loose) {
      // Some target is under quota: quotas sum to the partition count.
      while (placed[cursor % nb] >= quota[cursor % nb])
        ++cursor;
      size_t dest = cursor % nb;
      ++cursor;
      ++placed[dest];
      moves.push_back(planned_move{p->tp, p->owner, targets[dest]});
    }
    for (size_t i = 0; i < nb; ++i)
      planned_total[i] += placed[i];
  }
  std::sort(moves.begin(), moves.end(), [](const auto& a, const auto& b) { return a.tp < b.tp; });
  return moves;
}

json plan_to_json(const std::vector<planned_move>& plan) {
  json list = json::array();
  for (const auto& m : plan)
    list.push_back({{"topic", m.tp.topic}, {"partition", m.tp.partition}, {"replicas", json::array({m.to.str()})}});
  return {{"version", 1}, {"partitions", std::move(list)}};
}

}  // namespace moonmq::cluster

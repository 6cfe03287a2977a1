// What the balance loop reads from the brokers' load reports
// (GET /cluster/loads, api/local_loads.hpp) and what it publishes
// after a pass: traffic counters, racks and weights, the slow-broker rule's
// verdicts (docs/balancer.md "Slow brokers"); the metrics go through the
// probe (actors/balancer_probe.hpp).

#include <optional>

#include "actors/balancer_impl.hpp"
#include "goals/slow_brokers.hpp"

namespace moonmq::balancer_detail {
namespace {

/// The latency a /cluster/loads body reports (api/local_loads.hpp
/// "latency"); nullopt when it has none (a broker of an older version).
std::optional<goals::broker_latency> latency_in(const json& body) {
  if (!body.is_object() || !body.contains("latency") || !body["latency"].is_object())
    return std::nullopt;
  const auto& sync = body["latency"].value("sync", json::object());
  if (!sync.is_object())
    return std::nullopt;
  goals::broker_latency out;
  out.sync_count = sync.value("count", uint64_t{0});
  out.sync_p90_ms = sync.value("p90_ms", 0.0);
  return out;
}

}  // namespace

/// Counters of the partitions a loads body reports, by (reporter, partition).
void read_counters(const json& body, std::map<std::pair<std::string, goals::topic_partition>, std::pair<uint64_t, uint64_t>>& out) {
  if (!body.is_object() || !body.contains("partitions") || !body["partitions"].is_array()
      || !body.contains("broker_id") || !body["broker_id"].is_string())
    return;
  auto reporter = body["broker_id"].get<std::string>();
  for (const auto& row : body["partitions"]) {
    if (!row.is_object() || !row.contains("topic") || !row["topic"].is_string() || !row.contains("partition")
        || !row["partition"].is_number_integer())
      continue;
    // A partition that did not answer in time is listed with "error" and no
    // figures: reading those as 0 would look like a counter reset and turn
    // the next report into a huge rate. It is simply not observed this pass.
    if (row.contains("error") || !row.contains("bytes_in") || !row["bytes_in"].is_number_unsigned()
        || !row.contains("bytes_out") || !row["bytes_out"].is_number_unsigned() || !row.contains("size_bytes"))
      continue;
    goals::topic_partition tp{row["topic"].get<std::string>(), row["partition"].get<int32_t>()};
    out[{reporter, tp}] = {row["bytes_in"].get<uint64_t>(), row["bytes_out"].get<uint64_t>()};
  }
}

/// One pass of the slow-broker rule (goals/slow_brokers.hpp) over the
/// brokers that reported, in a cluster of the brokers in `alive` (alive or
/// not). A loop pass (`counted`) advances the rule and publishes its
/// verdicts (last_slow, the log, the metric); a preview (POST
/// /admin/balancer/plan) runs it on a copy and changes nothing. Returns the
/// brokers held slow.
std::set<std::string> mark_slow_brokers(balancer_state& st, const json& in, const std::map<std::string, bool>& alive,
                                        bool counted) {
  const auto& cfg = st.settings.config;
  st.slow.set_rules({cfg.slow_broker_ratio, cfg.slow_broker_min_latency_ms, cfg.slow_broker_passes});
  std::map<std::string, goals::broker_latency> reports;
  if (in.contains("local"))
    if (auto l = latency_in(in["local"]))
      reports[st.settings.broker_id] = *l;
  for (const auto& p : in["peers"]) {
    auto id = p.value("id", std::string{});
    if (p.value("ok", false) && p.contains("body"))
      if (auto l = latency_in(p["body"]))
        reports[id] = *l;
  }
  goals::slow_detector preview = st.slow;
  auto& rule = counted ? st.slow : preview;
  if (st.settings.image)
    for (const auto& id : st.settings.image->standing()->removed)
      rule.forget(id);
  std::set<std::string> was_slow;
  for (const auto& [id, up] : alive)
    if (rule.slow(id))
      was_slow.insert(id);
  auto verdicts = rule.update(reports, alive.size());
  std::set<std::string> slow;
  for (const auto& [id, up] : alive)
    if (rule.slow(id))
      slow.insert(id);
  if (!counted)
    return slow;
  if (st.settings.traits)
    st.settings.traits->set_slow(slow);
  st.last_slow = json::array();
  for (const auto& v : verdicts) {
    if (v.slow != (was_slow.count(v.broker) > 0))
      logger()->warn("balancer.slow_broker broker={} slow={} latency_p90_ms={} bar_ms={}", v.broker, v.slow,
                     v.latency_ms ? *v.latency_ms : -1.0, v.bar_ms);
    json row{{"broker", v.broker}, {"slow", v.slow}, {"suspect", v.suspect}, {"streak", v.streak}};
    row["latency_p90_ms"] = v.latency_ms ? json(*v.latency_ms) : json(nullptr);
    row["bar_ms"] = v.bar_ms;
    st.last_slow.push_back(std::move(row));
  }
  st.probe.slow_brokers(alive, slow);
  return slow;
}

/// A broker's rack and weight as its load report gives them (Cluster.Rack,
/// Cluster.Weight; docs/balancer.md "Racks and weights"). A report of an
/// older version has neither: no rack, weight 1. A weight outside the
/// planner's bounds is replaced by 1 and reported in the pass's errors.
/// `b` keeps what it held when `body` is no report (a broker that did not
/// answer keeps its last rack and weight).
void read_traits(const json& body, const std::string& id, goals::broker_spec& b, json& errors) {
  if (!body.is_object())
    return;
  b.rack.clear();
  b.weight = 1.0;
  if (auto r = body.find("rack"); r != body.end() && r->is_string())
    b.rack = r->get<std::string>();
  if (auto w = body.find("weight"); w != body.end() && w->is_number()) {
    const double v = w->get<double>();
    if (v >= goals::kMinBrokerWeight && v <= goals::kMaxBrokerWeight)
      b.weight = v;
    else
      errors.push_back("weight of " + id + ": " + w->dump() + " is outside [0.01, 100]; 1 is used");
  }
}

}  // namespace moonmq::balancer_detail

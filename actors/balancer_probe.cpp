#include "actors/balancer_probe.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "goals/detector.hpp"
#include "util/metrics.hpp"

namespace moonmq {
namespace {

constexpr const char* kLoad = "moonmq_autobalancer_broker_load";
constexpr const char* kSlow = "moonmq_autobalancer_broker_slow";

/// The resource a built-in distribution goal balances (for the stddev series).
std::optional<size_t> resource_of(const std::string& goal) {
  if (goal == "NW_IN")
    return 0;
  if (goal == "NW_OUT")
    return 1;
  if (goal == "DISK")
    return 2;
  if (goal == "PARTITION_COUNT")
    return 3;
  return std::nullopt;
}

/// True for a series whose "broker" label `keep` refuses.
template <class Keep>
bool broker_gone(const metrics::labels& l, Keep keep) {
  for (const auto& [key, value] : l)
    if (key == "broker")
      return !keep(value);
  return false;
}

}  // namespace

metrics::counter& balancer_probe::failovers() {
  return metrics::registry::global().get_counter("moonmq_autobalancer_failover_partitions_total",
                                                 "Partitions of fenced brokers handed to a new owner (shared storage)");
}

void balancer_probe::pass_run() {
  metrics::registry::global().get_counter("moonmq_autobalancer_passes_total", "Balance loop passes run").inc();
}

void balancer_probe::action_queued(bool swap_half) {
  metrics::registry::global()
    .get_counter("moonmq_autobalancer_actions_total", "Moves the balance loop sent to a reassigner",
                 {{"type", swap_half ? "swap" : "move"}})
    .inc();
}

void balancer_probe::failover_watch() { failovers(); }

void balancer_probe::failover_applied() { failovers().inc(); }

void balancer_probe::plan_made(const goals::plan& plan, const std::set<std::string>& listed) {
  auto& reg = metrics::registry::global();
  for (size_t b = 0; b < plan.broker_ids.size() && b < plan.brokers_before.size(); ++b) {
    if (!listed.count(plan.broker_ids[b]))
      continue;
    for (size_t r = 0; r < goals::kResourceCount; ++r)
      reg.get_gauge(kLoad, "Load per broker and resource at the last pass (bytes/s, bytes, partitions)",
                    {{"broker", plan.broker_ids[b]},
                     {"resource", std::string(goals::resource_key(static_cast<goals::resource>(r)))}})
        .set(plan.brokers_before[b][r]);
  }
  reg.remove_if(kLoad, [&listed](const metrics::labels& l) {
    return broker_gone(l, [&listed](const std::string& id) { return listed.count(id) > 0; });
  });
  for (const auto& g : plan.goals) {
    reg.get_gauge("moonmq_autobalancer_load_mean", "Mean broker load a goal balances around, at the last pass",
                  {{"goal", g.name}})
      .set(g.before.mean);
    if (auto r = resource_of(g.name); r && !plan.brokers_before.empty()) {
      double sum = 0, sq = 0;
      for (const auto& loads : plan.brokers_before) {
        sum += loads[*r];
        sq += loads[*r] * loads[*r];
      }
      auto n = static_cast<double>(plan.brokers_before.size());
      auto mean = sum / n;
      reg.get_gauge("moonmq_autobalancer_load_stddev",
                    "Standard deviation of broker loads a goal balances, at the last pass", {{"goal", g.name}})
        .set(std::sqrt(std::max(0.0, sq / n - mean * mean)));
    }
  }
  reg.get_gauge("moonmq_autobalancer_last_plan_size", "Moves in the last pass's plan")
    .set(static_cast<double>(plan.actions.size()));
}

void balancer_probe::slow_brokers(const std::map<std::string, bool>& alive, const std::set<std::string>& slow) {
  auto& reg = metrics::registry::global();
  for (const auto& [id, up] : alive)
    if (up)
      reg.get_gauge(kSlow, "1 while the balancer holds a broker slow (docs/balancer.md \"Slow brokers\"), else 0",
                    {{"broker", id}})
        .set(slow.count(id) ? 1.0 : 0.0);
  reg.remove_if(kSlow, [&alive](const metrics::labels& l) {
    return broker_gone(l, [&alive](const std::string& id) {
      auto it = alive.find(id);
      return it != alive.end() && it->second;
    });
  });
}

void reassigner_probe::bytes_sent(const std::string& dest, double bytes) {
  metrics::registry::global()
    .get_counter("moonmq_reassign_bytes_total", "Bytes a move sent to its destination (copy and drain)",
                 {{"dest", dest}})
    .inc(bytes);
}

void reassigner_probe::move_done(const std::string& dest, double seconds) {
  auto& reg = metrics::registry::global();
  reg.get_counter("moonmq_reassign_partitions_total", "Partition moves finished (done) as their source",
                  {{"dest", dest}})
    .inc();
  reg.get_histogram("moonmq_reassign_duration_seconds", "Time from a move's acceptance to done",
                    {0.1, 0.5, 1, 5, 15, 60, 300, 1800, 7200})
    .observe(seconds);
}

}  // namespace moonmq

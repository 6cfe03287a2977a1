#include "placement/load_tracker.hpp"

#include <utility>

namespace moonmq::placement {

const char* to_string(observe_outcome o) {
  switch (o) {
    case observe_outcome::first: return "first";
    case observe_outcome::updated: return "updated";
    case observe_outcome::reset: return "reset";
    case observe_outcome::duplicate: return "duplicate";
    case observe_outcome::out_of_order: return "out_of_order";
    case observe_outcome::invalid: return "invalid";
  }
  return "unknown";
}

namespace {

bool restarted(const load_report& prev, const load_report& next) {
  return prev.started_ms != 0 && next.started_ms != 0 && prev.started_ms != next.started_ms;
}

}  // namespace

bool counters_went_backwards(const load_report& prev, const load_report& next) {
  return restarted(prev, next) || next.bytes_in_total < prev.bytes_in_total || next.bytes_out_total < prev.bytes_out_total;
}

observe_outcome load_tracker::observe(load_report r, int64_t now_ms) {
  if (!validate(r))
    return observe_outcome::invalid;
  auto it = brokers_.find(r.broker);
  if (it == brokers_.end()) {
    broker_id id = r.broker;
    brokers_.emplace(std::move(id), broker_load{std::move(r), now_ms, true, false});
    return observe_outcome::first;
  }
  broker_load& held = it->second;
  // A new process may have a clock behind the old one's last sample: a new
  // started_ms wins over the sample-time order.
  bool new_process = restarted(held.report, r);
  if (!new_process) {
    if (r.report_time_ms < held.report.report_time_ms)
      return observe_outcome::out_of_order;
    if (r.report_time_ms == held.report.report_time_ms)
      return observe_outcome::duplicate;
  }
  bool reset = counters_went_backwards(held.report, r);
  held.report = std::move(r);
  held.seen_ms = now_ms;
  held.alive = true;
  held.counters_reset = reset;
  return reset ? observe_outcome::reset : observe_outcome::updated;
}

void load_tracker::set_alive(const broker_id& id, bool alive) {
  if (auto it = brokers_.find(id); it != brokers_.end())
    it->second.alive = alive;
}

void load_tracker::forget(const broker_id& id) {
  brokers_.erase(id);
}

std::vector<broker_load> load_tracker::snapshot() const {
  std::vector<broker_load> out;
  out.reserve(brokers_.size());
  for (const auto& [id, b] : brokers_)
    out.push_back(b);
  return out;
}

const broker_load* load_tracker::find(const broker_id& id) const {
  auto it = brokers_.find(id);
  return it == brokers_.end() ? nullptr : &it->second;
}

}  // namespace moonmq::placement

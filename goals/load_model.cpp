#include "goals/load_model.hpp"

namespace moonmq::goals {

load_model::load_model(window_config config) : config_(config) {}

void load_model::set_brokers(std::vector<broker_spec> brokers) { brokers_ = std::move(brokers); }

void load_model::observe(const replica_observation& o) {
  auto it = replicas_.find(o.tp);
  if (it == replicas_.end())
    it = replicas_.emplace(o.tp, tracked{o.owner, {}, {}, load_window(config_), load_window(config_), load_window(config_)})
             .first;
  tracked& t = it->second;
  t.owner = o.owner;
  if (auto r = t.in_rate.observe(o.bytes_in, o.at_ms)) t.nw_in.add(*r);
  if (auto r = t.out_rate.observe(o.bytes_out, o.at_ms)) t.nw_out.add(*r);
  t.disk.add(o.disk_bytes);
}

void load_model::forget(const topic_partition& tp) { replicas_.erase(tp); }

cluster_model load_model::to_model() const {
  cluster_model m;
  m.brokers = brokers_;
  m.replicas.reserve(replicas_.size());
  for (const auto& [tp, t] : replicas_) {
    replica_spec r;
    r.topic = tp.topic;
    r.partition = tp.partition;
    r.owner = t.owner;
    const auto in = t.nw_in.value(), out = t.nw_out.value(), disk = t.disk.value();
    r.trusted = in.has_value() && out.has_value() && disk.has_value();
    r.load = {in.value_or(0.0), out.value_or(0.0), disk.value_or(0.0)};
    m.replicas.push_back(std::move(r));
  }
  return m;
}

}  // namespace moonmq::goals

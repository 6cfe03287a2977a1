#include "raft/ownership_state.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace moonmq::raft {

status ownership_state::apply(const log_entry& e) {
  if (e.index != applied_index_.next())
    return error{errc::invalid_argument,
                 "ownership_state.apply: expected index " + std::to_string(applied_index_.value + 1) + ", got " +
                     std::to_string(e.index.value),
                 {},
                 0};
  if (auto* c = std::get_if<controller_entry>(&e.payload)) {
    controller_ = c->leader;
  } else if (auto* o = std::get_if<owner_entry>(&e.payload)) {
    topic_partition tp{o->topic, o->partition};
    auto current = epoch_of(tp);
    if (o->expect_epoch != 0 && o->expect_epoch != current) {
      // A conditional change whose condition no longer holds: a no-op in
      // log order, remembered so that its proposer is told.
      refused_.insert(e.index.value);
      while (refused_.size() > max_refused_kept)
        refused_.erase(refused_.begin());
    } else {
      owners_[tp] = o->owner;
      if (current + 1 > 1)  // a partition's first owner is at epoch 1, implied
        epochs_[tp] = current + 1;
    }
  } else if (auto* b = std::get_if<broker_entry>(&e.payload)) {
    switch (b->change) {
      case broker_change::fence: fenced_.insert(b->id); break;
      case broker_change::unfence: fenced_.erase(b->id); break;
      case broker_change::drain:
        // Draining a removed broker is meaningless; a broker comes back by
        // registering again, not by a drain.
        if (!removed_.count(b->id))
          draining_.insert(b->id);
        break;
      case broker_change::undrain: draining_.erase(b->id); break;
      case broker_change::remove:
        // Decided here, in log order, so that no partition can be handed to
        // the broker between the proposer's check and the commit: a broker
        // that still owns a partition, or is not draining, stays.
        if (draining_.count(b->id) && owned_by(b->id) == 0) {
          draining_.erase(b->id);
          fenced_.erase(b->id);
          removed_.insert(b->id);
        }
        break;
      case broker_change::register_broker:
        // A broker joining (or rejoining with new endpoints): known from here
        // on; a removed one is admitted again (docs/metadata.md "Joining").
        registered_[b->id] = b->endpoints;
        removed_.erase(b->id);
        if (b->assign_node_id && !kafka_node_ids_.count(b->id)) {
          int32_t next = first_joined_kafka_node_id;
          for (const auto& [id, n] : kafka_node_ids_)
            next = std::max(next, n + 1);
          kafka_node_ids_[b->id] = next;
        }
        break;
    }
  } else if (auto* cfg = std::get_if<config_entry>(&e.payload)) {
    // Keys of the entry replace the current ones; null removes a key.
    auto current = nlohmann::json::parse(balancer_, nullptr, false);
    auto patch = nlohmann::json::parse(cfg->balancer, nullptr, false);
    if (!current.is_object())
      current = nlohmann::json::object();
    if (patch.is_object())
      for (auto it = patch.begin(); it != patch.end(); ++it) {
        if (it.value().is_null())
          current.erase(it.key());
        else
          current[it.key()] = it.value();
      }
    balancer_ = current.dump();
  } else {
    // A create of a new topic, or a growth of an existing one: the
    // partitions it adds are owned by the proposer in this same entry.
    // Partitions that already have a row keep it.
    const auto& t = std::get<topic_entry>(e.payload);
    auto it = topics_.find(t.topic);
    if (it == topics_.end() && !t.grow) {
      it = topics_.emplace(t.topic, topic_record{0, t.config, e.index}).first;
    }
    if (it != topics_.end() && (t.grow || it->second.created_at == e.index)) {
      auto& rec = it->second;
      for (int32_t p = rec.partitions; p < t.partitions; ++p)
        owners_.try_emplace(topic_partition{t.topic, p}, t.owner);
      rec.partitions = std::max(rec.partitions, t.partitions);
    }
  }
  applied_index_ = e.index;
  applied_term_ = e.entry_term;
  return {};
}

void ownership_state::load(const snapshot& s) {
  owners_ = s.owners;
  topics_ = s.topics;
  balancer_ = s.balancer;
  fenced_ = s.fenced;
  draining_ = s.draining;
  removed_ = s.removed;
  registered_ = s.registered;
  kafka_node_ids_ = s.kafka_node_ids;
  epochs_ = s.epochs;
  refused_.clear();
  controller_ = s.controller;
  applied_index_ = s.last_index;
  applied_term_ = s.last_term;
}

snapshot ownership_state::to_snapshot() const {
  snapshot s;
  s.last_index = applied_index_;
  s.last_term = applied_term_;
  s.controller = controller_;
  s.owners = owners_;
  s.topics = topics_;
  s.balancer = balancer_;
  s.fenced = fenced_;
  s.draining = draining_;
  s.removed = removed_;
  s.registered = registered_;
  s.kafka_node_ids = kafka_node_ids_;
  s.epochs = epochs_;
  return s;
}

std::size_t ownership_state::owned_by(const node_id& b) const {
  return static_cast<std::size_t>(
    std::count_if(owners_.begin(), owners_.end(), [&](const auto& row) { return row.second == b; }));
}

uint64_t ownership_state::epoch_of(const topic_partition& tp) const {
  if (auto it = epochs_.find(tp); it != epochs_.end())
    return it->second;
  return owners_.count(tp) ? 1 : 0;
}

std::optional<node_id> ownership_state::owner_of(const topic_partition& tp) const {
  auto it = owners_.find(tp);
  if (it == owners_.end())
    return std::nullopt;
  return it->second;
}

}  // namespace moonmq::raft

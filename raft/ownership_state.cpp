#include "raft/ownership_state.hpp"

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
  } else {
    const auto& o = std::get<owner_entry>(e.payload);
    owners_[topic_partition{o.topic, o.partition}] = o.owner;
  }
  applied_index_ = e.index;
  applied_term_ = e.entry_term;
  return {};
}

void ownership_state::load(const snapshot& s) {
  owners_ = s.owners;
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
  return s;
}

std::optional<node_id> ownership_state::owner_of(const topic_partition& tp) const {
  auto it = owners_.find(tp);
  if (it == owners_.end())
    return std::nullopt;
  return it->second;
}

}  // namespace moonmq::raft

#include "raft/ownership_state.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

namespace moonmq::raft {

namespace {

/// A topic's config (JSON object text, "" = none set) with a patch merged
/// in key by key: a null value removes the key. A config or patch that is
/// not a JSON object counts as empty (the proposer validated both).
std::string merge_config(const std::string& config, const std::string& patch) {
  auto current = config.empty() ? nlohmann::json::object() : nlohmann::json::parse(config, nullptr, false);
  if (!current.is_object())
    current = nlohmann::json::object();
  auto p = nlohmann::json::parse(patch, nullptr, false);
  if (p.is_object())
    for (auto it = p.begin(); it != p.end(); ++it) {
      if (it.value().is_null())
        current.erase(it.key());
      else
        current[it.key()] = it.value();
    }
  return current.empty() ? std::string{} : current.dump();
}

}  // namespace

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
    // An owner for a partition of a deleted topic (an entry proposed before
    // the deletion, committed after it) would be a row no topic covers.
    bool of_deleted = deleted_topics_.count(o->topic) && !topics_.count(o->topic);
    auto current = owners_.find(tp);
    bool owner_fenced = current != owners_.end() && fenced_.count(current->second) != 0;
    if (of_deleted || (o->expect_epoch != 0 && o->expect_epoch != epoch_of(tp)) ||
        (o->expect_owner_fenced && !owner_fenced)) {
      // A conditional change whose condition no longer holds: a no-op in
      // log order, remembered so that its proposer is told.
      refused_.insert(e.index.value);
      while (refused_.size() > max_refused_kept)
        refused_.erase(refused_.begin());
    } else {
      set_owner(tp, o->owner);
    }
  } else if (auto* x = std::get_if<txn_entry>(&e.payload)) {
    // Compare-and-set on the id's version (docs/transactions.md "Coordinator state").
    auto it = txns_.find(x->transactional_id);
    uint64_t current = it == txns_.end() ? 0 : it->second.version;
    if (current != x->expect_version) {
      refused_.insert(e.index.value);
      while (refused_.size() > max_refused_kept)
        refused_.erase(refused_.begin());
    } else if (x->remove) {
      if (it != txns_.end())
        txns_.erase(it);
      txns_changed_at_ = e.index;
    } else {
      auto& rec = txns_[x->transactional_id];
      rec = x->record;
      rec.version = e.index.value;
      txns_changed_at_ = e.index;
    }
  } else if (auto* m = std::get_if<move_entry>(&e.payload)) {
    if (!apply_move(*m, e.index)) {
      refused_.insert(e.index.value);
      while (refused_.size() > max_refused_kept)
        refused_.erase(refused_.begin());
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
  } else if (const auto& t = std::get<topic_entry>(e.payload); t.remove || t.alter) {
    // A config change replaces the config of a topic that exists; of a
    // deleted or never created one it is refused, like a deletion.
    auto it = topics_.find(t.topic);
    bool applied = t.remove ? apply_topic_delete(t, e.index) : it != topics_.end();
    if (applied && t.alter && !t.merge)
      it->second.config = t.config;
    if (applied && t.merge)
      it->second.config = merge_config(it->second.config, t.config);
    if (!applied) {
      refused_.insert(e.index.value);
      while (refused_.size() > max_refused_kept)
        refused_.erase(refused_.begin());
    }
  } else {
    // A create of a new topic, or a growth of an existing one: the
    // partitions it adds are owned by the proposer in this same entry.
    // Partitions that already have a row keep it.
    auto it = topics_.find(t.topic);
    if (it == topics_.end() && !t.grow) {
      it = topics_.emplace(t.topic, topic_record{0, t.config, e.index}).first;
    }
    if (it != topics_.end() && (t.grow || it->second.created_at == e.index)) {
      auto& rec = it->second;
      bool placed = placement_readable(t.checked);
      for (int32_t p = rec.partitions; p < t.partitions; ++p) {
        auto owner = t.owner;
        if (placed && p >= t.first && p - t.first < static_cast<int32_t>(t.owners.size())
            && !removed_.count(t.owners[p - t.first])
            && std::find(t.checked.begin(), t.checked.end(), t.owners[p - t.first]) != t.checked.end())
          owner = t.owners[p - t.first];
        owners_.try_emplace(topic_partition{t.topic, p}, owner);
      }
      rec.partitions = std::max(rec.partitions, t.partitions);
    }
  }
  applied_index_ = e.index;
  applied_term_ = e.entry_term;
  return {};
}

bool ownership_state::placement_readable(const std::vector<node_id>& checked) const {
  if (checked.empty())
    return false;
  std::set<node_id> known(checked.begin(), checked.end());
  for (const auto& [id, endpoints] : registered_)
    if (!removed_.count(id) && !known.count(id))
      return false;
  return true;
}

bool ownership_state::apply_topic_delete(const topic_entry& t, log_index at) {
  auto it = topics_.find(t.topic);
  if (it == topics_.end())
    return false;
  // A move under way holds two brokers' copies and a journal; it ends
  // (done, failed or cancelled) before its topic can go.
  for (const auto& [id, m] : moves_)
    if (m.topic == t.topic && !finished_move_state(m.state))
      return false;
  // Every row of the topic, also one beyond its count (an owner entry no
  // topic covered): a topic created again under the name starts with none.
  auto first = topic_partition{t.topic, std::numeric_limits<int32_t>::min()};
  auto last = topic_partition{t.topic, std::numeric_limits<int32_t>::max()};
  owners_.erase(owners_.lower_bound(first), owners_.upper_bound(last));
  epochs_.erase(epochs_.lower_bound(first), epochs_.upper_bound(last));
  topics_.erase(it);
  deleted_topics_[t.topic] = at;
  while (deleted_topics_.size() > max_deleted_topics_kept) {
    auto oldest = std::min_element(deleted_topics_.begin(), deleted_topics_.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
    deleted_topics_.erase(oldest);
  }
  return true;
}

void ownership_state::set_owner(const topic_partition& tp, const node_id& owner) {
  auto current = epoch_of(tp);
  owners_[tp] = owner;
  if (current + 1 > 1)  // a partition's first owner is at epoch 1, implied
    epochs_[tp] = current + 1;
}

namespace {

/// The steps of a move the log allows (docs/cluster.md "Moves in the log").
bool allowed_step(const std::string& from, const std::string& to) {
  // queued → cutover: the source does not wait for its `copying` step to
  // commit before it copies, so its cutover may find the move still queued.
  if (from == "queued")
    return to == "copying" || to == "cutover" || to == "failed" || to == "cancelled";
  if (from == "copying")
    return to == "cutover" || to == "failed" || to == "cancelled";
  if (from == "cutover")
    return to == "offsets" || to == "rolling_back" || to == "failed" || to == "done";
  if (from == "offsets")
    return to == "done" || to == "rolling_back" || to == "failed";
  if (from == "rolling_back")
    return to == "failed";
  return false;
}

}  // namespace

std::optional<std::string> ownership_state::active_move(const topic_partition& tp) const {
  for (const auto& [id, m] : moves_)
    if (m.topic == tp.topic && m.partition == tp.partition && !finished_move_state(m.state))
      return id;
  return std::nullopt;
}

bool ownership_state::apply_move(const move_entry& m, log_index at) {
  topic_partition tp{m.topic, m.partition};
  if (m.expect.empty()) {
    // A new move: of the partition's owner, one unfinished move at a time.
    if (m.state != "queued" || moves_.count(m.id) || active_move(tp) || owner_of(tp) != std::optional{m.from})
      return false;
    moves_[m.id] = move_record{m.topic, m.partition, m.from, m.to, "queued", m.error, -1, -1, 0, at};
  } else {
    auto it = moves_.find(m.id);
    if (it == moves_.end())
      return false;
    auto& rec = it->second;
    if (rec.topic != m.topic || rec.partition != m.partition || rec.from != m.from || rec.to != m.to)
      return false;
    if (std::find(m.expect.begin(), m.expect.end(), rec.state) == m.expect.end() || !allowed_step(rec.state, m.state))
      return false;
    if (m.expect_epoch != 0 && m.expect_epoch != epoch_of(tp))
      return false;
    bool past_cutover = rec.state == "cutover" || rec.state == "offsets";
    bool rollback = past_cutover && (m.state == "rolling_back" || m.state == "failed");
    // The owner change each step implies, in the same entry. A cutover
    // takes the partition from its source only; `done` needs the
    // destination's confirm: its conditional owner entry bumped the epoch
    // past the cutover's, or (shared storage) it is the destination's own
    // `done` at the cutover's epoch (expect_epoch = the cutover's, checked
    // above), which the log orders against a take-back by the move's
    // state. A rollback must name the cutover's epoch, so that it can never
    // apply over a confirm.
    if (m.state == "cutover" && owner_of(tp) != std::optional{rec.from})
      return false;
    const bool done_in_place = rec.epoch > 0 && m.expect_epoch == rec.epoch;
    if (m.state == "done" && (owner_of(tp) != std::optional{rec.to} || (epoch_of(tp) <= rec.epoch && !done_in_place)))
      return false;
    if (rollback && m.expect_epoch == 0)
      return false;
    if (m.state == "cutover") {
      set_owner(tp, rec.to);
      rec.epoch = epoch_of(tp);
    } else if (rollback) {
      set_owner(tp, rec.from);
    }
    rec.state = m.state;
    if (!m.error.empty() || finished_move_state(m.state))
      rec.error = m.error;
    if (m.end >= 0)
      rec.end = m.end;
    if (m.log_start >= 0)
      rec.log_start = m.log_start;
    rec.updated_at = at;
  }
  // Finished moves beyond the kept number go, oldest first (by the entry
  // that finished them: the same on every broker).
  std::size_t finished = 0;
  for (const auto& [id, r] : moves_)
    finished += finished_move_state(r.state) ? 1 : 0;
  while (finished > max_finished_moves_kept) {
    auto oldest = moves_.end();
    for (auto i = moves_.begin(); i != moves_.end(); ++i)
      if (finished_move_state(i->second.state)
          && (oldest == moves_.end() || i->second.updated_at < oldest->second.updated_at))
        oldest = i;
    moves_.erase(oldest);
    --finished;
  }
  return true;
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
  moves_ = s.moves;
  deleted_topics_ = s.deleted_topics;
  txns_ = s.transactions;
  txns_changed_at_ = s.last_index;
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
  s.moves = moves_;
  s.deleted_topics = deleted_topics_;
  s.transactions = txns_;
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

#include "goals/snapshot.hpp"

#include "goals/text.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace moonmq::goals {
namespace {

std::uint64_t replica_key(std::uint32_t topic, std::int32_t partition) {
  return (static_cast<std::uint64_t>(topic) << 32) | static_cast<std::uint32_t>(partition);
}

std::uint64_t avoid_key(std::uint32_t replica, std::uint32_t broker) {
  return (static_cast<std::uint64_t>(replica) << 32) | broker;
}

// Amounts above 1e18 (an exabyte, or an exabyte per second) are refused so
// that sums over millions of partitions stay far from overflow.
constexpr double kMaxAmount = 1e18;

bool good_amount(double v) { return std::isfinite(v) && v >= 0.0 && v <= kMaxAmount; }

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

std::string validate(const cluster_model& model) {
  auto s = snapshot::freeze(model);
  return s.ok() ? std::string{} : s.error();
}

outcome<snapshot> snapshot::freeze(const cluster_model& model) {
  using result = outcome<snapshot>;
  snapshot s;
  const std::size_t nb = model.brokers.size();
  s.ids_.reserve(nb);
  s.alive_.reserve(nb);
  s.excluded_.reserve(nb);
  s.capacity_.reserve(nb);
  s.broker_load_.assign(nb, {});
  for (std::size_t i = 0; i < nb; ++i) {
    const auto& b = model.brokers[i];
    const std::string where = "brokers[" + std::to_string(i) + "]";
    if (b.id.empty()) return result::failure(where + ".id: must be a non-empty string");
    if (!s.broker_by_id_.emplace(b.id, static_cast<std::uint32_t>(i)).second)
      return result::failure(where + ".id: duplicate broker " + quoted(b.id));
    std::array<double, kMeasuredResources> cap{};
    for (std::size_t r = 0; r < kMeasuredResources; ++r) {
      cap[r] = -1.0;
      if (b.capacity[r]) {
        if (!good_amount(*b.capacity[r]))
          return result::failure(where + ".capacity." +
                                 std::string(resource_key(static_cast<resource>(r))) +
                                 ": must be a number in [0, 1e18]");
        cap[r] = *b.capacity[r];
      }
    }
    if (!(b.weight >= kMinBrokerWeight && b.weight <= kMaxBrokerWeight))
      return result::failure(where + ".weight: must be a number in [" + format_amount(kMinBrokerWeight) + ", " +
                             format_amount(kMaxBrokerWeight) + "]");
    s.weight_.push_back(b.weight);
    auto rack = std::find(s.racks_.begin(), s.racks_.end(), b.rack);
    s.rack_.push_back(static_cast<std::uint32_t>(rack - s.racks_.begin()));
    if (rack == s.racks_.end()) s.racks_.push_back(b.rack);
    s.ids_.push_back(b.id);
    s.alive_.push_back(b.alive ? 1 : 0);
    s.excluded_.push_back(b.excluded ? 1 : 0);
    s.eligible_.push_back(b.alive && !b.excluded && !b.warming && !b.draining && !b.slow ? 1 : 0);
    s.draining_.push_back(b.draining ? 1 : 0);
    s.drain_target_.push_back(b.alive && !b.excluded && !b.draining && !b.slow ? 1 : 0);
    s.slow_.push_back(b.slow && b.alive && !b.excluded && !b.draining ? 1 : 0);
    s.draining_count_ += b.draining ? 1 : 0;
    s.capacity_.push_back(cap);
  }

  std::unordered_set<std::string> excluded_topics(model.excluded_topics.begin(),
                                                  model.excluded_topics.end());
  const std::size_t nr = model.replicas.size();
  s.owner_.reserve(nr);
  s.replica_load_.reserve(nr);
  s.topic_.reserve(nr);
  s.partition_.reserve(nr);
  s.movable_.reserve(nr);
  s.replica_by_key_.reserve(nr);
  std::vector<std::uint8_t> movable_topic;
  std::vector<std::uint8_t> topic_internal;
  for (std::size_t i = 0; i < nr; ++i) {
    const auto& p = model.replicas[i];
    // Built only for an error: a million replicas would each pay an allocation.
    const auto where = [i] { return "partitions[" + std::to_string(i) + "]"; };
    if (p.topic.empty()) return result::failure(where() + ".topic: must be a non-empty string");
    if (p.partition < 0) return result::failure(where() + ".partition: must be >= 0");
    auto owner = s.broker_by_id_.find(p.owner);
    if (owner == s.broker_by_id_.end())
      return result::failure(where() + ".owner: unknown broker " + quoted(p.owner));
    // find first: emplace would build (and drop) a node for every replica of a known topic.
    auto t = s.topic_by_name_.find(p.topic);
    if (t == s.topic_by_name_.end()) {
      t = s.topic_by_name_.emplace(p.topic, static_cast<std::uint32_t>(s.topics_.size())).first;
      s.topics_.push_back(p.topic);
      const bool internal = p.topic.size() >= 2 && p.topic[0] == '_' && p.topic[1] == '_';
      movable_topic.push_back(internal || excluded_topics.count(p.topic) ? 0 : 1);
      topic_internal.push_back(internal ? 1 : 0);
    }
    if (!s.replica_by_key_.emplace(replica_key(t->second, p.partition), static_cast<std::uint32_t>(i)).second)
      return result::failure(where() + ": duplicate partition " + p.topic + "-" + std::to_string(p.partition));
    std::array<double, kMeasuredResources> load{};
    for (std::size_t r = 0; r < kMeasuredResources; ++r) {
      if (!good_amount(p.load[r]))
        return result::failure(where() + ".load." + std::string(resource_key(static_cast<resource>(r))) +
                               ": must be a number in [0, 1e18]");
      load[r] = p.trusted ? p.load[r] : 0.0;
    }
    s.owner_.push_back(owner->second);
    s.replica_load_.push_back(load);
    s.topic_.push_back(t->second);
    s.partition_.push_back(p.partition);
    s.movable_.push_back(p.trusted && movable_topic[t->second] ? 1 : 0);
    s.drainable_.push_back(topic_internal[t->second] ? 0 : 1);
  }

  for (std::size_t i = 0; i < model.in_flight.size(); ++i) {
    const auto& m = model.in_flight[i];
    const std::string where = "in_flight[" + std::to_string(i) + "]";
    auto r = s.find_replica(m.tp.topic, m.tp.partition);
    if (!r) return result::failure(where + ": unknown partition " + m.tp.topic + "-" + std::to_string(m.tp.partition));
    auto to = s.find_broker(m.to);
    if (!to) return result::failure(where + ".to: unknown broker " + quoted(m.to));
    s.owner_[r->value] = to->value;
    s.movable_[r->value] = 0;
    s.drainable_[r->value] = 0;
  }
  for (const auto& tp : model.cooldown) {
    // Unknown cooldown partitions are harmless (deleted since): ignored.
    if (auto r = s.find_replica(tp.topic, tp.partition)) s.movable_[r->value] = 0;
  }
  for (const auto& a : model.avoid) {
    // Like cooldown: a partition deleted or a broker removed since is moot.
    auto r = s.find_replica(a.tp.topic, a.tp.partition);
    auto b = s.find_broker(a.broker);
    if (r && b) s.avoided_.push_back(avoid_key(r->value, b->value));
  }
  std::sort(s.avoided_.begin(), s.avoided_.end());
  s.avoided_.erase(std::unique(s.avoided_.begin(), s.avoided_.end()), s.avoided_.end());
  s.origin_ = s.owner_;

  for (std::size_t i = 0; i < nr; ++i) {
    auto& bl = s.broker_load_[s.owner_[i]];
    for (std::size_t r = 0; r < kMeasuredResources; ++r) bl[r] += s.replica_load_[i][r];
    bl[index_of(resource::partition_count)] += 1.0;
  }
  s.index_topics(movable_topic);
  for (std::size_t r = 0; r < kResourceCount; ++r) s.all_capacity_[r] = r < kMeasuredResources;
  for (std::size_t b = 0; b < nb; ++b) {
    if (!s.eligible(broker_index{static_cast<std::uint32_t>(b)})) continue;
    ++s.eligible_count_;
    s.eligible_weight_ += s.weight_[b];
    s.weighted_ = s.weighted_ || s.weight_[b] != 1.0;
    for (std::size_t r = 0; r < kResourceCount; ++r) {
      s.eligible_total_[r] += s.broker_load_[b][r];
      if (r < kMeasuredResources) {
        if (s.capacity_[b][r] > 0.0)
          s.eligible_capacity_[r] += s.capacity_[b][r];
        else
          s.all_capacity_[r] = false;
      }
    }
  }
  for (std::size_t r = 0; r < kResourceCount; ++r) {
    if (s.eligible_count_ == 0 || !s.all_capacity_[r]) {
      s.all_capacity_[r] = false;
      s.eligible_capacity_[r] = 0.0;
    }
  }
  return s;
}

void snapshot::index_topics(const std::vector<std::uint8_t>& movable) {
  const std::size_t nt = topics_.size(), nb = ids_.size();
  topic_movable_ = movable;
  topic_start_.assign(nt + 1, 0);
  for (std::uint32_t t : topic_) ++topic_start_[t + 1];
  for (std::size_t t = 0; t < nt; ++t) topic_start_[t + 1] += topic_start_[t];
  topic_members_.resize(topic_.size());
  std::vector<std::uint32_t> next(topic_start_.begin(), topic_start_.end() - 1);
  for (std::size_t i = 0; i < topic_.size(); ++i) topic_members_[next[topic_[i]]++] = static_cast<std::uint32_t>(i);
  // A count row per topic with at least as many partitions as brokers: the
  // rows hold at most as many entries as there are partitions.
  topic_row_.assign(nt, kNoRow);
  topic_eligible_.assign(nt, 0);
  std::size_t rows = 0;
  for (std::size_t t = 0; t < nt; ++t)
    if (nb > 0 && topic_start_[t + 1] - topic_start_[t] >= nb) topic_row_[t] = static_cast<std::uint32_t>(nb * rows++);
  topic_counts_.assign(nb * rows, 0);
  for (std::size_t i = 0; i < topic_.size(); ++i) {
    const std::uint32_t t = topic_[i];
    if (topic_row_[t] != kNoRow) ++topic_counts_[topic_row_[t] + owner_[i]];
    if (eligible_[owner_[i]]) ++topic_eligible_[t];
  }
}

std::uint32_t snapshot::topic_partitions_on(std::uint32_t t, broker_index b) const {
  if (topic_row_[t] != kNoRow) return topic_counts_[topic_row_[t] + b.value];
  std::uint32_t n = 0;
  for (const std::uint32_t* r = topic_replicas_begin(t); r != topic_replicas_end(t); ++r) n += owner_[*r] == b.value;
  return n;
}

std::optional<broker_index> snapshot::find_broker(std::string_view id) const {
  auto it = broker_by_id_.find(std::string(id));
  if (it == broker_by_id_.end()) return std::nullopt;
  return broker_index{it->second};
}

std::optional<double> snapshot::capacity(broker_index b, resource r) const {
  if (r == resource::partition_count) return std::nullopt;
  const double c = capacity_[b.value][index_of(r)];
  if (c < 0.0) return std::nullopt;
  return c;
}

double snapshot::total_load(resource r) const {
  double sum = 0.0;
  for (const auto& bl : broker_load_) sum += bl[index_of(r)];
  return sum;
}

std::optional<replica_index> snapshot::find_replica(std::string_view topic, std::int32_t partition) const {
  auto t = topic_by_name_.find(std::string(topic));
  if (t == topic_by_name_.end() || partition < 0) return std::nullopt;
  auto it = replica_by_key_.find(replica_key(t->second, partition));
  if (it == replica_by_key_.end()) return std::nullopt;
  return replica_index{it->second};
}

bool snapshot::avoided(replica_index r, broker_index b) const {
  if (avoided_.empty()) return false;
  return std::binary_search(avoided_.begin(), avoided_.end(), avoid_key(r.value, b.value));
}

void snapshot::move_replica(std::uint32_t r, std::uint32_t to) {
  const std::uint32_t from = owner_[r];
  const bool from_eligible = eligible(broker_index{from});
  const bool to_eligible = eligible(broker_index{to});
  for (std::size_t k = 0; k < kResourceCount; ++k) {
    const double x = k < kMeasuredResources ? replica_load_[r][k] : 1.0;
    broker_load_[from][k] -= x;
    broker_load_[to][k] += x;
    if (from_eligible) eligible_total_[k] -= x;
    if (to_eligible) eligible_total_[k] += x;
  }
  const std::uint32_t t = topic_[r];
  if (topic_row_[t] != kNoRow) {
    --topic_counts_[topic_row_[t] + from];
    ++topic_counts_[topic_row_[t] + to];
  }
  topic_eligible_[t] = topic_eligible_[t] - (from_eligible ? 1u : 0u) + (to_eligible ? 1u : 0u);
  if (owner_[r] != origin_[r]) --moved_count_;
  owner_[r] = to;
  if (owner_[r] != origin_[r]) ++moved_count_;
}

bool snapshot::apply(const action& a) {
  if (!valid_replica(a.replica) || !valid_broker(a.from) || !valid_broker(a.to) || a.from == a.to) return false;
  if (owner_[a.replica.value] != a.from.value) return false;
  if (a.type == action_type::swap) {
    if (!valid_replica(a.other) || a.other == a.replica || owner_[a.other.value] != a.to.value) return false;
    move_replica(a.other.value, a.from.value);
  }
  move_replica(a.replica.value, a.to.value);
  return true;
}

bool snapshot::undo(const action& a) {
  if (!valid_replica(a.replica) || !valid_broker(a.from) || !valid_broker(a.to) || a.from == a.to) return false;
  if (owner_[a.replica.value] != a.to.value) return false;
  if (a.type == action_type::swap) {
    if (!valid_replica(a.other) || a.other == a.replica || owner_[a.other.value] != a.from.value) return false;
    move_replica(a.other.value, a.to.value);
  }
  move_replica(a.replica.value, a.from.value);
  return true;
}

}  // namespace moonmq::goals

#include "groups/group_state.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "util/logging.hpp"

namespace moonmq::groups {
namespace {

/// splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number
/// generators", 2014): a well-mixed 64-bit value from (seed, counter).
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::string join_names(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) {
    if (!s.empty())
      s += ',';
    s += n;
  }
  return s;
}

}  // namespace

topic_lookup lookup_from(partition_counts counts) {
  return [counts = std::move(counts)](const std::string& topic) -> std::optional<int32_t> {
    auto it = counts.find(topic);
    if (it == counts.end())
      return std::nullopt;
    return it->second;
  };
}

const char* to_string(group_phase p) {
  switch (p) {
    case group_phase::empty: return "Empty";
    case group_phase::stable: return "Stable";
  }
  return "Unknown";
}

const char* to_string(rebalance_reason r) {
  switch (r) {
    case rebalance_reason::none: return "none";
    case rebalance_reason::member_joined: return "member_joined";
    case rebalance_reason::member_left: return "member_left";
    case rebalance_reason::member_evicted: return "member_evicted";
    case rebalance_reason::subscription_changed: return "subscription_changed";
    case rebalance_reason::partitions_changed: return "partitions_changed";
  }
  return "unknown";
}

group_state::group_state(std::string group_id, group_config config, topic_lookup lookup)
    : id_(std::move(group_id)), config_(config), lookup_(std::move(lookup)) {}

result<membership> group_state::join(const std::optional<std::string>& member_id,
                                     const std::vector<std::string>& topics, int64_t now_ms) {
  if (topics.empty())
    return make_error(errc::invalid_argument, "join of group " + id_ + " names no topic");
  std::set<std::string> wanted;
  for (const auto& t : topics) {
    if (t.empty())
      return make_error(errc::invalid_argument, "join of group " + id_ + " names an empty topic");
    wanted.insert(t);
  }
  const bool is_new = !member_id || member_id->empty();
  if (!is_new && members_.count(*member_id) == 0)
    return make_error(errc::unknown_member, "member " + *member_id + " is not in group " + id_);

  // Resolve every topic before changing anything: a failed join is a no-op.
  partition_counts found;
  for (const auto& t : wanted) {
    auto count = lookup_ ? lookup_(t) : std::nullopt;
    if (!count || *count <= 0)
      return make_error(errc::unknown_topic, "topic " + t + " does not exist (join of group " + id_ + ")");
    found[t] = *count;
  }

  bool counts_changed = false;
  for (const auto& [t, n] : found) {
    auto it = counts_.find(t);
    if (it != counts_.end() && it->second != n)
      counts_changed = true;
    counts_[t] = n;
  }

  std::string id;
  auto reason = rebalance_reason::none;
  if (is_new) {
    id = next_member_id();
    members_[id] = member{wanted, now_ms};
    reason = rebalance_reason::member_joined;
  } else {
    id = *member_id;
    auto& m = members_[id];
    if (m.topics != wanted)
      reason = rebalance_reason::subscription_changed;
    m.topics = std::move(wanted);
    m.last_seen_ms = now_ms;
  }
  if (reason == rebalance_reason::none && counts_changed)
    reason = rebalance_reason::partitions_changed;
  if (reason != rebalance_reason::none)
    rebalance(reason);
  log::get("groups")->info("group.joined group={} member={} topics={} generation={} new={}", id_, id,
                           join_names(members_[id].topics), generation_.value, is_new);
  return answer(id);
}

result<membership> group_state::heartbeat(const std::string& member_id, int64_t now_ms) {
  auto it = members_.find(member_id);
  if (it == members_.end())
    return make_error(errc::unknown_member, "member " + member_id + " is not in group " + id_);
  it->second.last_seen_ms = std::max(it->second.last_seen_ms, now_ms);
  return answer(member_id);
}

status group_state::leave(const std::string& member_id) {
  if (members_.erase(member_id) == 0)
    return make_error(errc::unknown_member, "member " + member_id + " is not in group " + id_);
  rebalance(rebalance_reason::member_left);
  log::get("groups")->info("group.left group={} member={} generation={}", id_, member_id, generation_.value);
  return {};
}

std::vector<std::string> group_state::expire(int64_t now_ms) {
  std::vector<std::string> evicted;
  for (auto it = members_.begin(); it != members_.end();) {
    if (now_ms - it->second.last_seen_ms >= config_.session_timeout_ms) {
      evicted.push_back(it->first);
      it = members_.erase(it);
    } else {
      ++it;
    }
  }
  if (!evicted.empty()) {
    rebalance(rebalance_reason::member_evicted);
    for (const auto& m : evicted)
      log::get("groups")->info("group.evicted group={} member={} session_timeout_ms={} generation={}", id_, m,
                               config_.session_timeout_ms, generation_.value);
  }
  return evicted;  // std::map order: already sorted by id
}

result<bool> group_state::set_partition_count(const std::string& topic, int32_t count) {
  if (count <= 0)
    return make_error(errc::invalid_argument,
                      "partition count " + std::to_string(count) + " for topic " + topic + " must be > 0");
  auto it = counts_.find(topic);
  if (it == counts_.end() || it->second == count)
    return false;  // nobody subscribes to it, or nothing changed
  it->second = count;
  rebalance(rebalance_reason::partitions_changed);
  log::get("groups")->info("group.partitions_changed group={} topic={} partitions={} generation={}", id_, topic,
                           count, generation_.value);
  return true;
}

status group_state::check_commit(const std::optional<std::string>& member_id,
                                 const std::optional<generation>& gen) const {
  if (member_id && !member_id->empty() && members_.count(*member_id) == 0)
    return make_error(errc::unknown_member, "member " + *member_id + " is not in group " + id_);
  if (gen && *gen != generation_)
    return make_error(errc::illegal_generation, "generation " + std::to_string(gen->value) +
                                                    " is not group " + id_ + "'s current generation " +
                                                    std::to_string(generation_.value));
  return {};
}

std::vector<member_info> group_state::describe() const {
  std::vector<member_info> out;
  for (const auto& [id, m] : members_) {
    auto it = assignments_.find(id);
    out.push_back(member_info{id, m.topics, m.last_seen_ms, it == assignments_.end() ? assignment{} : it->second});
  }
  return out;
}

std::string group_state::next_member_id() {
  for (;;) {
    ++joins_;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(splitmix64(config_.id_seed ^ splitmix64(joins_))));
    std::string id = "m-" + std::to_string(joins_) + "-" + hex;
    // The counter alone makes ids unique within this object; the check keeps
    // them unique even if a caller reuses a generated-looking id.
    if (members_.count(id) == 0)
      return id;
  }
}

void group_state::rebalance(rebalance_reason why) {
  subscriptions subs;
  std::set<std::string> in_use;
  for (const auto& [id, m] : members_) {
    subs[id] = m.topics;
    in_use.insert(m.topics.begin(), m.topics.end());
  }
  for (auto it = counts_.begin(); it != counts_.end();)
    it = in_use.count(it->first) ? std::next(it) : counts_.erase(it);
  assignments_ = assign_range(subs, counts_);
  generation_ = generation{generation_.value + 1};
  last_reason_ = why;
  log::get("groups")->debug("group.rebalanced group={} generation={} members={} reason={}", id_,
                            generation_.value, members_.size(), to_string(why));
}

membership group_state::answer(const std::string& member_id) const {
  auto it = assignments_.find(member_id);
  // Every current member is in assignments_: rebalance() runs after every
  // membership change and assigns every member of members_.
  return membership{member_id, generation_, it == assignments_.end() ? assignment{} : it->second};
}

}  // namespace moonmq::groups

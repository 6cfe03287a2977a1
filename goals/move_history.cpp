#include "goals/move_history.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace moonmq::goals {
namespace {

using json = nlohmann::json;

std::string string_or_empty(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

/// True when `row` ended less than `window_ms` before `now_ms` (or after
/// it). The age is taken in unsigned arithmetic: any two int64 stamps give
/// their exact distance, so no stamp can overflow it.
bool ended_within(const journal_move& row, std::int64_t now_ms, std::int64_t window_ms) {
  if (window_ms <= 0) return false;
  if (row.updated_ms >= now_ms) return true;
  const std::uint64_t age = static_cast<std::uint64_t>(now_ms) - static_cast<std::uint64_t>(row.updated_ms);
  return age < static_cast<std::uint64_t>(window_ms);
}

/// Seconds as ms, clamped to [0, 1e12 s] so that the product cannot overflow.
std::int64_t seconds_to_ms(std::int64_t seconds) {
  constexpr std::int64_t kMaxSeconds = 1'000'000'000'000;
  return std::clamp<std::int64_t>(seconds, 0, kMaxSeconds) * 1000;
}

}  // namespace

std::optional<journal_move> journal_move_from_json(const json& row) {
  if (!row.is_object()) return std::nullopt;
  journal_move m;
  m.tp.topic = string_or_empty(row, "topic");
  auto part = row.find("partition");
  if (m.tp.topic.empty() || part == row.end() || !part->is_number_integer() || part->get<long long>() < 0 ||
      part->get<long long>() > std::numeric_limits<std::int32_t>::max())
    return std::nullopt;
  m.tp.partition = static_cast<std::int32_t>(part->get<long long>());
  m.from = string_or_empty(row, "from");
  m.to = string_or_empty(row, "to");
  m.state = string_or_empty(row, "state");
  m.origin = string_or_empty(row, "origin");
  if (auto t = row.find("updated_ms"); t != row.end() && t->is_number_integer())
    m.updated_ms = t->is_number_unsigned() && t->get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()
                     ? std::numeric_limits<std::int64_t>::max()
                     : t->get<std::int64_t>();
  return m;
}

std::int64_t stability_windows::cooldown_for(const std::string& origin) const {
  return origin == "operator" ? std::max(cooldown_ms, manual_cooldown_ms) : cooldown_ms;
}

std::int64_t stability_windows::avoid_for(const std::string& origin) const {
  return std::max(avoid_ms, cooldown_for(origin));
}

stability_windows make_stability_windows(std::int64_t interval_seconds, std::int64_t manual_seconds,
                                         std::int64_t avoid_seconds) {
  stability_windows w;
  w.cooldown_ms = kCooldownIntervals * seconds_to_ms(interval_seconds);
  w.manual_cooldown_ms = std::max(w.cooldown_ms, seconds_to_ms(manual_seconds));
  w.avoid_ms = seconds_to_ms(avoid_seconds);
  return w;
}

void add_move_history(cluster_model& model, const std::vector<journal_move>& rows, const stability_windows& w,
                      std::int64_t now_ms) {
  std::set<std::string> known, alive;
  for (const auto& b : model.brokers) {
    known.insert(b.id);
    if (b.alive) alive.insert(b.id);
  }
  std::map<topic_partition, std::string> owner;  // of every modelled partition
  for (const auto& r : model.replicas) owner[{r.topic, r.partition}] = r.owner;
  std::set<topic_partition> cooldown(model.cooldown.begin(), model.cooldown.end());
  std::set<std::pair<topic_partition, std::string>> avoid;
  for (const auto& a : model.avoid) avoid.insert({a.tp, a.broker});
  for (const auto& row : rows) {
    const bool done = row.state == "done";
    const bool ended_without_moving = row.state == "failed" || row.state == "cancelled";
    if (!done && !ended_without_moving) {
      // Running: the partition ends on `to`, or on `from` when rolling back.
      const std::string& lands = row.state == "rolling_back" ? row.from : row.to;
      if (!owner.count(row.tp)) continue;  // nothing to count, nothing that could move
      if (known.count(lands)) model.in_flight.push_back({row.tp, lands});
      else cooldown.insert(row.tp);
      continue;
    }
    // Superseded: the broker the move left the partition on is dead (or
    // gone) and the partition lives on another, alive broker, handed over
    // since by a failover (shared storage). The row no longer says where
    // the partition is: holding it, or keeping it off the move's other
    // broker, would only block rebalancing the survivors.
    const std::string& rests = done ? row.to : row.from;
    if (auto o = owner.find(row.tp); o != owner.end() && o->second != rests && alive.count(o->second) &&
                                     !alive.count(rests))
      continue;
    if (ended_within(row, now_ms, w.cooldown_for(row.origin))) cooldown.insert(row.tp);
    if (ended_within(row, now_ms, w.avoid_for(row.origin))) {
      const std::string& shun = done ? row.from : row.to;
      if (known.count(shun)) avoid.insert({row.tp, shun});
    }
  }
  model.cooldown.assign(cooldown.begin(), cooldown.end());
  model.avoid.clear();
  for (const auto& [tp, b] : avoid) model.avoid.push_back({tp, b});
}

}  // namespace moonmq::goals

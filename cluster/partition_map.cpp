#include "cluster/partition_map.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace moonmq::cluster {
namespace {

using json = nlohmann::json;

/// The reports about one partition, at most one per reporter (the first).
std::vector<const partition_report*> distinct_reporters(const std::vector<const partition_report*>& rows) {
  std::vector<const partition_report*> out;
  std::set<broker_id> seen;
  for (const auto* r : rows)
    if (seen.insert(r->reporter).second)
      out.push_back(r);
  return out;
}

broker_id choose_owner(const std::vector<const partition_report*>& rows, bool& conflict) {
  std::set<broker_id> self_owners;
  for (const auto* r : rows)
    if (r->owner == r->reporter)
      self_owners.insert(r->owner);
  if (!self_owners.empty()) {
    conflict = self_owners.size() > 1;
    return *self_owners.begin();  // std::set: lowest id first
  }
  std::map<broker_id, size_t> votes;
  for (const auto* r : rows)
    ++votes[r->owner];
  auto best = votes.begin();
  for (auto it = votes.begin(); it != votes.end(); ++it)
    if (it->second > best->second)  // strict: on a tie the lower id (met first) stays
      best = it;
  return best->first;
}

bool optional_int(const json& row, const char* key, int64_t& out) {
  auto it = row.find(key);
  if (it == row.end())
    return true;
  if (!it->is_number_integer())
    return false;
  out = it->get<int64_t>();
  return true;
}

}  // namespace

std::map<topic_partition, partition_placement> merge_partition_reports(const std::vector<partition_report>& reports) {
  std::map<topic_partition, std::vector<const partition_report*>> by_tp;
  for (const auto& r : reports)
    by_tp[r.tp].push_back(&r);
  std::map<topic_partition, partition_placement> out;
  for (const auto& [tp, all] : by_tp) {
    auto rows = distinct_reporters(all);
    partition_placement p;
    p.tp = tp;
    p.owner = choose_owner(rows, p.conflict);
    for (const auto* r : rows)
      p.holders.push_back(r->reporter);
    std::sort(p.holders.begin(), p.holders.end());
    auto reported_by = [&rows](const broker_id& id) -> const partition_report* {
      for (const auto* r : rows)
        if (r->reporter == id)
          return r;
      return nullptr;
    };
    const auto* source = reported_by(p.owner);
    if (!source)
      source = reported_by(p.holders.front());  // a reporter: never null
    p.log_start_offset = source->log_start_offset;
    p.log_end_offset = source->log_end_offset;
    p.size_bytes = source->size_bytes;
    out.emplace(tp, std::move(p));
  }
  return out;
}

std::vector<partition_report> parse_loads(const json& body) {
  std::vector<partition_report> out;
  if (!body.is_object())
    return out;
  auto id = body.find("broker_id");
  auto list = body.find("partitions");
  if (id == body.end() || !id->is_string() || !valid_broker_id(id->get<std::string>()) || list == body.end()
      || !list->is_array())
    return out;
  broker_id reporter{id->get<std::string>()};
  for (const auto& row : *list) {
    if (!row.is_object())
      continue;
    auto t = row.find("topic");
    auto p = row.find("partition");
    auto o = row.find("owner");
    if (t == row.end() || !t->is_string() || !valid_topic(t->get<std::string>()))
      continue;
    if (p == row.end() || !p->is_number_integer() || p->get<int64_t>() < 0
        || p->get<int64_t>() > std::numeric_limits<int32_t>::max())
      continue;
    if (o == row.end() || !o->is_string() || !valid_broker_id(o->get<std::string>()))
      continue;
    partition_report r;
    r.tp = topic_partition{t->get<std::string>(), static_cast<int32_t>(p->get<int64_t>())};
    r.reporter = reporter;
    r.owner = broker_id{o->get<std::string>()};
    if (!optional_int(row, "log_start_offset", r.log_start_offset) || !optional_int(row, "log_end_offset", r.log_end_offset)
        || !optional_int(row, "size_bytes", r.size_bytes))
      continue;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace moonmq::cluster

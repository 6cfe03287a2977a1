#include "cluster/ownership_table.hpp"

#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "cluster/json_file.hpp"
#include "util/logging.hpp"

namespace moonmq::cluster {
namespace {

using json = nlohmann::json;
constexpr int file_version = 1;
constexpr const char* what = "ownership table";

status validate_tp(const topic_partition& tp) {
  if (!valid_topic(tp.topic))
    return make_error(errc::invalid_argument, "invalid topic name " + quote_input(tp.topic));
  if (tp.partition < 0)
    return make_error(errc::invalid_argument, "partition " + std::to_string(tp.partition) + " of topic " +
                                                  tp.topic + " is negative");
  return {};
}

bool is_epoch(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

result<std::map<topic_partition, ownership_entry>> decode(const json& doc, const std::string& file,
                                                          epoch& floor) {
  auto f = doc.find("floor_epoch");
  if (f == doc.end() || !is_epoch(*f))
    return detail::corrupt_file(what, file, "\"floor_epoch\" is missing or not an integer >= 0");
  floor = epoch{f->get<uint64_t>()};
  auto list = doc.find("entries");
  if (list == doc.end() || !list->is_array())
    return detail::corrupt_file(what, file, "\"entries\" is missing or not an array");
  std::map<topic_partition, ownership_entry> rows;
  for (size_t i = 0; i < list->size(); ++i) {
    const auto& e = (*list)[i];
    auto where = "entries[" + std::to_string(i) + "]";
    if (!e.is_object())
      return detail::corrupt_file(what, file, where + " is not an object");
    auto t = e.find("topic");
    auto p = e.find("partition");
    auto o = e.find("owner");
    auto ep = e.find("epoch");
    if (t == e.end() || !t->is_string() || !valid_topic(t->get<std::string>()))
      return detail::corrupt_file(what, file, where + ".topic is missing or not a valid topic name");
    if (p == e.end() || !p->is_number_integer() || p->get<int64_t>() < 0 ||
        p->get<int64_t>() > std::numeric_limits<int32_t>::max())
      return detail::corrupt_file(what, file, where + ".partition is missing or not an integer in [0, 2^31)");
    if (o == e.end() || !(o->is_null() || (o->is_string() && valid_broker_id(o->get<std::string>()))))
      return detail::corrupt_file(what, file, where + ".owner is missing or neither null nor a valid broker id");
    if (ep == e.end() || !is_epoch(*ep))
      return detail::corrupt_file(what, file, where + ".epoch is missing or not an integer >= 0");
    topic_partition tp{t->get<std::string>(), static_cast<int32_t>(p->get<int64_t>())};
    ownership_entry row;
    if (o->is_string())
      row.owner = broker_id{o->get<std::string>()};
    row.changed_at = epoch{ep->get<uint64_t>()};
    if (!rows.emplace(tp, std::move(row)).second)
      return detail::corrupt_file(what, file, where + " repeats " + to_string(tp));
  }
  return rows;
}

}  // namespace

result<ownership_table> ownership_table::open(const std::string& data_dir) {
  if (auto ok = detail::ensure_dir(data_dir); !ok)
    return ok.err();
  ownership_table table{(std::filesystem::path{data_dir} / file_name).string()};
  auto loaded = detail::load_json_file(table.file_, what, file_version);
  if (!loaded)
    return loaded.err();
  if (*loaded) {
    auto rows = decode(**loaded, table.file_, table.floor_);
    if (!rows)
      return rows.err();
    table.rows_ = std::move(rows).value();
  }
  log::get("cluster")->info("ownership.opened file={} entries={} floor_epoch={}", table.file_, table.rows_.size(),
                            table.floor_.value);
  return table;
}

std::optional<broker_id> ownership_table::owner_of(const topic_partition& tp) const {
  auto it = rows_.find(tp);
  if (it == rows_.end())
    return std::nullopt;
  return it->second.owner;
}

broker_id ownership_table::owner_or(const topic_partition& tp, const broker_id& local) const {
  auto owner = owner_of(tp);
  return owner ? *owner : local;
}

status ownership_table::check_change(const topic_partition& tp, epoch at) const {
  if (auto ok = validate_tp(tp); !ok)
    return ok;
  epoch highest = floor_;
  auto it = rows_.find(tp);
  if (it != rows_.end() && it->second.changed_at > highest)
    highest = it->second.changed_at;
  if (at < highest) {
    auto e = make_error(errc::stale_epoch, "stale ownership change for " + to_string(tp) + " at epoch " +
                                               std::to_string(at.value) + ": the table holds epoch " +
                                               std::to_string(highest.value));
    e.highest = highest;
    return e;
  }
  return {};
}

status ownership_table::write(const std::map<topic_partition, ownership_entry>& rows, epoch floor) const {
  json list = json::array();
  for (const auto& [tp, row] : rows) {
    list.push_back({{"topic", tp.topic},
                    {"partition", tp.partition},
                    {"owner", row.owner ? json(row.owner->str()) : json(nullptr)},
                    {"epoch", row.changed_at.value}});
  }
  return detail::save_json_file(file_, {{"version", file_version}, {"floor_epoch", floor.value}, {"entries", list}});
}

status ownership_table::set_owner(const topic_partition& tp, const broker_id& owner, epoch at) {
  if (!valid_broker_id(owner.str()))
    return make_error(errc::invalid_argument, "invalid broker id " + quote_input(owner.str()));
  if (auto ok = check_change(tp, at); !ok)
    return ok;
  auto next = rows_;
  next[tp] = ownership_entry{owner, at};
  if (auto ok = write(next, floor_); !ok)
    return ok;
  rows_ = std::move(next);
  log::get("cluster")->info("ownership.set topic={} partition={} owner={} epoch={}", tp.topic, tp.partition,
                            owner.str(), at.value);
  return {};
}

status ownership_table::clear(const topic_partition& tp, epoch at) {
  if (auto ok = check_change(tp, at); !ok)
    return ok;
  auto next = rows_;
  next[tp] = ownership_entry{std::nullopt, at};
  if (auto ok = write(next, floor_); !ok)
    return ok;
  rows_ = std::move(next);
  log::get("cluster")->info("ownership.cleared topic={} partition={} epoch={}", tp.topic, tp.partition, at.value);
  return {};
}

status ownership_table::replace_all(const std::map<topic_partition, broker_id>& owners, epoch at) {
  epoch highest = floor_;
  for (const auto& [tp, row] : rows_)
    highest = row.changed_at > highest ? row.changed_at : highest;
  if (at < highest) {
    auto e = make_error(errc::stale_epoch, "stale ownership replacement at epoch " + std::to_string(at.value) +
                                               ": the table holds epoch " + std::to_string(highest.value));
    e.highest = highest;
    return e;
  }
  std::map<topic_partition, ownership_entry> next;
  for (const auto& [tp, owner] : owners) {
    if (auto ok = validate_tp(tp); !ok)
      return ok;
    if (!valid_broker_id(owner.str()))
      return make_error(errc::invalid_argument, "invalid broker id " + quote_input(owner.str()) + " for " + to_string(tp));
    next[tp] = ownership_entry{owner, at};
  }
  if (auto ok = write(next, at); !ok)
    return ok;
  rows_ = std::move(next);
  floor_ = at;
  log::get("cluster")->info("ownership.replaced entries={} epoch={}", rows_.size(), at.value);
  return {};
}

std::map<topic_partition, broker_id> ownership_table::snapshot() const {
  std::map<topic_partition, broker_id> out;
  for (const auto& [tp, row] : rows_) {
    if (row.owner)
      out.emplace(tp, *row.owner);
  }
  return out;
}

}  // namespace moonmq::cluster

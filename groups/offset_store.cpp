#include "groups/offset_store.hpp"

#include <cerrno>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "util/atomic_file.hpp"
#include "util/logging.hpp"

namespace moonmq::groups {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int file_version = 1;
constexpr const char* offsets_file = "offsets.json";

error io_failure(const std::string& what, const std::string& path, std::error_code ec) {
  return make_error(errc::io_error, what + " " + path + ": " + ec.message(), ec.value());
}

error corrupt(const std::string& file, const std::string& why) {
  return make_error(errc::corrupt_state, "corrupt offsets file " + file + ": " + why);
}

status validate_entry(const std::string& topic, int32_t partition, int64_t offset, const std::string& metadata) {
  if (metadata.size() > max_offset_metadata_bytes)
    return make_error(errc::invalid_argument, "metadata of " + std::to_string(metadata.size()) + " bytes for " + topic
                                                + "/" + std::to_string(partition) + " exceeds "
                                                + std::to_string(max_offset_metadata_bytes));
  if (topic.empty())
    return make_error(errc::invalid_argument, "offset commit names an empty topic");
  if (partition < 0)
    return make_error(errc::invalid_argument,
                      "partition " + std::to_string(partition) + " of topic " + topic + " is negative");
  if (offset < 0)
    return make_error(errc::invalid_argument, "offset " + std::to_string(offset) + " for " + topic + "/" +
                                                  std::to_string(partition) + " is negative");
  return {};
}

/// Decodes one group file. Every field is checked: the file is untrusted.
template <class Table>
result<Table> decode(const std::string& text, const std::string& group, const std::string& file) {
  auto doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return corrupt(file, text.empty() ? "file is empty" : "not valid JSON (truncated or overwritten?)");
  if (!doc.is_object())
    return corrupt(file, "top level is not an object");
  auto v = doc.find("version");
  if (v == doc.end() || !v->is_number_integer() || v->get<int64_t>() != file_version)
    return corrupt(file, "\"version\" is missing or not 1");
  auto g = doc.find("group");
  if (g == doc.end() || !g->is_string() || g->get<std::string>() != group)
    return corrupt(file, "\"group\" does not name group " + group);
  auto list = doc.find("offsets");
  if (list == doc.end() || !list->is_array())
    return corrupt(file, "\"offsets\" is missing or not an array");
  Table out;
  for (size_t i = 0; i < list->size(); ++i) {
    const auto& e = (*list)[i];
    auto where = "offsets[" + std::to_string(i) + "]";
    if (!e.is_object())
      return corrupt(file, where + " is not an object");
    auto t = e.find("topic");
    auto p = e.find("partition");
    auto o = e.find("offset");
    if (t == e.end() || !t->is_string() || t->get<std::string>().empty())
      return corrupt(file, where + ".topic is missing or not a non-empty string");
    if (p == e.end() || !p->is_number_integer() || p->get<int64_t>() < 0 ||
        p->get<int64_t>() > std::numeric_limits<int32_t>::max())
      return corrupt(file, where + ".partition is missing or not an integer in [0, 2^31)");
    if (o == e.end() || !o->is_number_integer() || (o->is_number_unsigned() && o->get<uint64_t>() >
                                                    static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) ||
        o->get<int64_t>() < 0)
      return corrupt(file, where + ".offset is missing or not an integer >= 0");
    auto m = e.find("metadata");
    if (m != e.end() && !m->is_string())
      return corrupt(file, where + ".metadata is not a string");
    auto key = std::make_pair(t->get<std::string>(), static_cast<int32_t>(p->get<int64_t>()));
    typename Table::mapped_type value;
    value.offset = o->get<int64_t>();
    if (m != e.end())
      value.metadata = m->get<std::string>();
    if (!out.emplace(key, std::move(value)).second)
      return corrupt(file, where + " repeats " + key.first + "/" + std::to_string(key.second));
  }
  return out;
}

}  // namespace

result<offset_store> offset_store::open(const std::string& data_dir) { return load(data_dir, true); }

result<offset_store> offset_store::open_read_only(const std::string& data_dir) { return load(data_dir, false); }

result<offset_store> offset_store::load(const std::string& data_dir, bool writable) {
  auto dir = (fs::path{data_dir} / "__groups").string();
  std::error_code ec;
  if (!writable) {
    if (!fs::exists(dir, ec))
      return ec ? result<offset_store>(io_failure("cannot stat", dir, ec)) : offset_store{dir, false};
  } else if (fs::create_directories(dir, ec)) {
    if (auto sync_ec = util::fsync_dir(fs::path{dir}.parent_path().string()))
      return io_failure("cannot fsync the parent of", dir, sync_ec);
  }
  if (ec)
    return io_failure("cannot create", dir, ec);
  offset_store store{dir, writable};
  auto logger = log::get("groups");
  for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec)) {
    auto name = it->path().filename().string();
    std::error_code type_ec;
    if (!it->is_directory(type_ec) || !is_valid_group_id(name)) {
      logger->warn("offsets.stray_entry path={}", it->path().string());
      continue;
    }
    auto file = (it->path() / offsets_file).string();
    auto tmp = file + ".tmp";
    if (writable && fs::exists(tmp, type_ec)) {
      // Left by a write that never reached its rename: never acknowledged.
      logger->info("offsets.tmp_discarded file={}", tmp);
      fs::remove(tmp, type_ec);
    }
    std::string text;
    if (auto read_ec = util::read_file(file, text)) {
      if (read_ec.value() == ENOENT)
        continue;  // directory created, first write never completed
      return io_failure("cannot read", file, read_ec);
    }
    auto decoded = decode<table>(text, name, file);
    if (!decoded)
      return decoded.err();
    store.groups_.emplace(name, std::move(decoded).value());
  }
  if (ec)
    return io_failure("cannot list", dir, ec);
  logger->info("offsets.opened dir={} groups={}{}", dir, store.groups_.size(), writable ? "" : " read_only=true");
  return store;
}

std::string offset_store::file_of(const std::string& group) const {
  return (fs::path{dir_} / group / offsets_file).string();
}

status offset_store::write_group(const std::string& group, const table& offsets) {
  if (!writable_)
    return make_error(errc::io_error, "the offsets under " + dir_ + " were opened read-only");
  auto group_dir = (fs::path{dir_} / group).string();
  std::error_code ec;
  if (fs::create_directory(group_dir, ec)) {
    if (auto sync_ec = util::fsync_dir(dir_))
      return io_failure("cannot fsync", dir_, sync_ec);
  } else if (ec) {
    return io_failure("cannot create", group_dir, ec);
  }
  json list = json::array();
  for (const auto& [key, entry] : offsets) {
    json e = {{"topic", key.first}, {"partition", key.second}, {"offset", entry.offset}};
    if (!entry.metadata.empty())
      e["metadata"] = entry.metadata;
    list.push_back(std::move(e));
  }
  json doc = {{"version", file_version}, {"group", group}, {"offsets", std::move(list)}};
  auto file = file_of(group);
  if (auto write_ec = util::write_file_atomic(file, doc.dump() + "\n"))
    return io_failure("cannot write", file, write_ec);
  return {};
}

status offset_store::commit(const std::string& group, const std::vector<partition_offset>& offsets,
                            const commit_fence& fence) {
  if (auto ok = validate_group_id(group); !ok)
    return ok;
  if (fence.request && *fence.request != fence.current)
    return make_error(errc::illegal_generation, "generation " + std::to_string(fence.request->value) +
                                                    " is not group " + group + "'s current generation " +
                                                    std::to_string(fence.current.value));
  for (const auto& e : offsets) {
    if (auto ok = validate_entry(e.topic, e.partition, e.offset, e.metadata); !ok)
      return ok;
  }
  auto it = groups_.find(group);
  table next = it == groups_.end() ? table{} : it->second;
  for (const auto& e : offsets)
    next[{e.topic, e.partition}] = stored{e.offset, e.metadata};
  if (auto ok = write_group(group, next); !ok)
    return ok;
  groups_[group] = std::move(next);
  log::get("groups")->debug("offsets.committed group={} entries={}", group, offsets.size());
  return {};
}

result<std::vector<partition_offset>> offset_store::fetch(const std::string& group,
                                                          const std::optional<std::string>& topic) const {
  if (auto ok = validate_group_id(group); !ok)
    return ok.err();
  std::vector<partition_offset> out;
  auto it = groups_.find(group);
  if (it == groups_.end())
    return out;
  for (const auto& [key, entry] : it->second) {
    if (!topic || key.first == *topic)
      out.push_back(partition_offset{key.first, key.second, entry.offset, entry.metadata});
  }
  return out;
}

std::optional<int64_t> offset_store::committed(const std::string& group, const std::string& topic,
                                               int32_t partition) const {
  auto g = groups_.find(group);
  if (g == groups_.end())
    return std::nullopt;
  auto o = g->second.find({topic, partition});
  if (o == g->second.end())
    return std::nullopt;
  return o->second.offset;
}

result<bool> offset_store::set_if_higher(const std::string& group, const std::string& topic, int32_t partition,
                                         int64_t offset, const std::string& metadata) {
  if (auto ok = validate_group_id(group); !ok)
    return ok.err();
  if (auto ok = validate_entry(topic, partition, offset, metadata); !ok)
    return ok.err();
  auto current = committed(group, topic, partition);
  if (current && *current >= offset)
    return false;
  auto it = groups_.find(group);
  table next = it == groups_.end() ? table{} : it->second;
  next[{topic, partition}] = stored{offset, metadata};
  if (auto ok = write_group(group, next); !ok)
    return ok.err();
  groups_[group] = std::move(next);
  log::get("groups")->info("offsets.raised group={} topic={} partition={} offset={}", group, topic, partition,
                           offset);
  return true;
}

std::vector<group_offset> offset_store::offsets_for_partition(const std::string& topic, int32_t partition) const {
  std::vector<group_offset> out;
  for (const auto& [group, offsets] : groups_) {
    auto o = offsets.find({topic, partition});
    if (o != offsets.end())
      out.push_back(group_offset{group, o->second.offset, o->second.metadata});
  }
  return out;
}

result<size_t> offset_store::remove_partition(const std::string& topic, int32_t partition) {
  size_t changed = 0;
  for (auto& [group, offsets] : groups_) {
    if (offsets.count({topic, partition}) == 0)
      continue;
    table next = offsets;
    next.erase({topic, partition});
    if (auto ok = write_group(group, next); !ok)
      return ok.err();
    offsets = std::move(next);
    ++changed;
  }
  if (changed > 0)
    log::get("groups")->info("offsets.partition_removed topic={} partition={} groups={}", topic, partition,
                             changed);
  return changed;
}

result<size_t> offset_store::remove_offsets(const std::string& group, const std::string& topic,
                                            const std::vector<int32_t>& partitions) {
  if (auto ok = validate_group_id(group); !ok)
    return ok.err();
  auto it = groups_.find(group);
  if (it == groups_.end())
    return size_t{0};
  table next = it->second;
  size_t removed = 0;
  for (auto p : partitions)
    removed += next.erase({topic, p});
  if (removed == 0)
    return size_t{0};
  if (next.empty()) {
    // Nothing left: the group goes as with remove_group (Kafka drops an
    // Empty group without offsets).
    if (auto gone = remove_group(group); !gone)
      return gone.err();
    return removed;
  }
  if (auto ok = write_group(group, next); !ok)
    return ok.err();
  it->second = std::move(next);
  log::get("groups")->info("offsets.deleted group={} topic={} partitions={}", group, topic, removed);
  return removed;
}

result<bool> offset_store::remove_group(const std::string& group) {
  if (auto ok = validate_group_id(group); !ok)
    return ok.err();
  auto group_dir = (fs::path{dir_} / group).string();
  std::error_code ec;
  const bool on_disk = fs::exists(group_dir, ec);
  if (!groups_.count(group) && !on_disk)
    return false;
  if (on_disk && !writable_)
    return make_error(errc::io_error, "the offsets under " + dir_ + " were opened read-only");
  if (on_disk) {
    fs::remove_all(group_dir, ec);
    if (ec)
      return io_failure("cannot delete", group_dir, ec);
    if (auto sync_ec = util::fsync_dir(dir_))
      return io_failure("cannot fsync", dir_, sync_ec);
  }
  groups_.erase(group);
  log::get("groups")->info("offsets.group_deleted group={}", group);
  return true;
}

std::vector<std::string> offset_store::list_groups() const {
  std::vector<std::string> out;
  for (const auto& [group, offsets] : groups_)
    out.push_back(group);
  return out;
}

}  // namespace moonmq::groups

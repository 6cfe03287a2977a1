// JSON of a transactional id's record: the fields of a `txn` entry and of a
// snapshot's "transactions" rows (raft/types.hpp txn_entry,
// docs/transactions.md "Coordinator state").
#include <limits>

#include "raft/json_reader.hpp"
#include "raft/types.hpp"

namespace moonmq::raft::detail {

using nlohmann::json;

bool valid_transactional_id(const std::string& id) {
  return !id.empty() && id.size() <= cluster::max_transactional_id_bytes;
}

void write_txn_record(json& j, const cluster::txn_record& r) {
  j["producer_id"] = r.producer_id;
  j["producer_epoch"] = r.producer_epoch;
  j["state"] = cluster::to_string(r.state);
  j["timeout_ms"] = r.timeout_ms;
  j["started_ms"] = r.started_ms;
  if (r.updated_ms > 0)
    j["updated_ms"] = r.updated_ms;
  json parts = json::array();
  for (const auto& p : r.partitions)
    parts.push_back(json{{"topic", p.topic}, {"partition", p.partition}});
  j["partitions"] = std::move(parts);
  j["groups"] = r.groups;
  json offsets = json::array();
  for (const auto& o : r.offsets)
    offsets.push_back(json{{"group", o.group},
                           {"topic", o.topic},
                           {"partition", o.partition},
                           {"offset", o.offset},
                           {"metadata", o.metadata}});
  j["offsets"] = std::move(offsets);
}

cluster::txn_record read_txn_record(json_reader& r) {
  cluster::txn_record out;
  auto pid = r.u64("producer_id");
  if (r.ok() && pid > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    r.fail("producer_id", "expected a producer id in [0, 2^63)");
  out.producer_id = static_cast<int64_t>(pid);
  auto epoch = r.u64("producer_epoch");
  if (r.ok() && epoch > static_cast<uint64_t>(std::numeric_limits<int16_t>::max()))
    r.fail("producer_epoch", "expected an epoch in [0, 32767]");
  out.producer_epoch = static_cast<int16_t>(epoch);
  auto state = cluster::txn_state_from(r.string("state"));
  if (r.ok() && !state)
    r.fail("state", "expected a transaction state (empty, ongoing, prepare_commit, prepare_abort, "
                    "complete_commit, complete_abort)");
  out.state = state.value_or(cluster::txn_state::empty);
  out.timeout_ms = r.partition("timeout_ms");
  auto started = r.u64("started_ms");
  if (r.ok() && started > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    r.fail("started_ms", "expected a time in ms");
  out.started_ms = static_cast<int64_t>(started);
  if (r.ok() && r.has("updated_ms")) {
    auto updated = r.u64("updated_ms");
    if (r.ok() && updated > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      r.fail("updated_ms", "expected a time in ms");
    out.updated_ms = static_cast<int64_t>(updated);
  }
  if (const json* parts = r.array("partitions"))
    for (const auto& row : *parts) {
      json_reader rp(row, "txn.partitions[]");
      cluster::txn_partition p{rp.topic("topic"), rp.partition("partition")};
      if (!rp.ok()) {
        r.fail("partitions", rp.err().message);
        break;
      }
      out.partitions.push_back(std::move(p));
    }
  if (const json* groups = r.array("groups"))
    for (const auto& g : *groups) {
      if (!g.is_string() || g.get<std::string>().empty()) {
        r.fail("groups", "expected an array of group ids");
        break;
      }
      out.groups.push_back(g.get<std::string>());
    }
  if (const json* offsets = r.array("offsets"))
    for (const auto& row : *offsets) {
      json_reader ro(row, "txn.offsets[]");
      cluster::txn_offset o;
      o.group = ro.string("group");
      o.topic = ro.topic("topic");
      o.partition = ro.partition("partition");
      auto off = ro.u64("offset");
      if (ro.ok() && off > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        ro.fail("offset", "expected an offset");
      o.offset = static_cast<int64_t>(off);
      o.metadata = ro.string("metadata");
      if (ro.ok() && o.group.empty())
        ro.fail("group", "expected a group id");
      if (!ro.ok()) {
        r.fail("offsets", ro.err().message);
        break;
      }
      out.offsets.push_back(std::move(o));
    }
  return out;
}

json txn_rows(const std::map<std::string, cluster::txn_record>& txns) {
  json rows = json::array();
  for (const auto& [id, rec] : txns) {
    json row{{"transactional_id", id}, {"version", rec.version}};
    write_txn_record(row, rec);
    rows.push_back(std::move(row));
  }
  return rows;
}

result<std::map<std::string, cluster::txn_record>> read_txn_rows(const json& rows) {
  if (!rows.is_array())
    return error{errc::malformed, "snapshot.transactions: expected an array", {}, 0};
  std::map<std::string, cluster::txn_record> out;
  for (const auto& row : rows) {
    json_reader r(row, "snapshot.transactions[]");
    auto id = r.string("transactional_id");
    if (r.ok() && !valid_transactional_id(id))
      r.fail("transactional_id", "expected 1.." + std::to_string(cluster::max_transactional_id_bytes) + " bytes");
    auto version = r.u64("version");
    auto rec = read_txn_record(r);
    rec.version = version;
    if (!r.ok())
      return r.err();
    if (!out.emplace(std::move(id), std::move(rec)).second)
      return error{errc::malformed, "snapshot.transactions: duplicate transactional id", {}, 0};
  }
  return out;
}

}  // namespace moonmq::raft::detail

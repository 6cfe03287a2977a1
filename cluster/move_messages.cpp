#include "cluster/move_messages.hpp"

#include <limits>

#include "util/names.hpp"

namespace moonmq::cluster {
namespace {

using json = nlohmann::json;

bool is_int(const json& j, const char* key) { return j.contains(key) && j[key].is_number_integer(); }
bool is_str(const json& j, const char* key) { return j.contains(key) && j[key].is_string(); }

/// A partition index: an integer in [0, 2^31).
bool is_partition(const json& j, const char* key) {
  if (!is_int(j, key))
    return false;
  auto v = j[key].get<int64_t>();
  return v >= 0 && v <= std::numeric_limits<int32_t>::max();
}

error bad(const char* shape) { return make_error(errc::invalid_request, std::string("body must be ") + shape); }

}  // namespace

json to_json(const move_request& m) {
  json j{{"topic", m.tp.topic}, {"partition", m.tp.partition}, {"to", m.to}, {"origin", m.origin}};
  if (!m.reason.empty())
    j["reason"] = m.reason;
  if (!m.submission.empty())
    j["submission"] = m.submission;
  return j;
}

result<move_request> move_request_from_json(const json& j) {
  if (!j.is_object() || !is_str(j, "topic") || !is_partition(j, "partition") || !is_str(j, "to"))
    return bad(R"({"topic","partition","to","origin"?,"reason"?,"submission"?})");
  move_request m;
  m.tp = topic_partition{j["topic"].get<std::string>(), j["partition"].get<int32_t>()};
  m.to = j["to"].get<std::string>();
  if (j.contains("origin")) {
    if (!j["origin"].is_string() || (j["origin"] != "operator" && j["origin"] != "balancer"))
      return make_error(errc::invalid_request, "origin must be \"operator\" or \"balancer\"");
    m.origin = j["origin"].get<std::string>();
  }
  if (j.contains("reason")) {
    if (!j["reason"].is_string())
      return make_error(errc::invalid_request, "reason must be a string");
    m.reason = j["reason"].get<std::string>();
  }
  if (j.contains("submission")) {
    if (!j["submission"].is_string() || !util::is_name(j["submission"].get_ref<const std::string&>(), 1,
                                                       max_submission_bytes))
      return make_error(errc::invalid_request, "submission must be 1 to " + std::to_string(max_submission_bytes)
                                                 + " characters of [A-Za-z0-9._-]");
    m.submission = j["submission"].get<std::string>();
  }
  return m;
}

json to_json(const move_ensure& m) {
  json owners = json::array();
  for (const auto& [p, owner] : m.owners)
    owners.push_back({{"partition", p}, {"owner", owner}});
  json j{{"from", m.from}, {"partitions", m.partitions}, {"log_start_offset", m.log_start_offset}, {"owners", owners}};
  if (!m.config.is_null())
    j["config"] = m.config;
  if (!m.move_id.empty()) {
    j["move_id"] = m.move_id;
    j["attempt"] = m.attempt;
  }
  return j;
}

result<move_ensure> move_ensure_from_json(const json& j, int32_t partition) {
  const char* shape =
    R"({"from","partitions" (> the partition),"log_start_offset","config"?,"owners"?,"move_id"?,"attempt"?})";
  if (!j.is_object() || !is_str(j, "from") || !is_int(j, "partitions") || !is_int(j, "log_start_offset"))
    return bad(shape);
  // A move id comes with its attempt (a positive integer), or neither.
  if (j.contains("move_id") != j.contains("attempt")
      || (j.contains("move_id")
          && (!is_str(j, "move_id") || !util::is_name(j["move_id"].get_ref<const std::string&>(), 1, 128)
              || !is_int(j, "attempt") || j["attempt"].get<int64_t>() <= 0)))
    return bad(shape);
  auto count = j["partitions"].get<int64_t>();
  move_ensure m;
  m.from = j["from"].get<std::string>();
  m.log_start_offset = j["log_start_offset"].get<int64_t>();
  if (m.log_start_offset < 0 || count <= partition || count > move_max_partitions)
    return bad(shape);
  m.partitions = static_cast<int32_t>(count);
  // Owners the source could not name (a malformed row) are left to the
  // destination's own image, as before they were sent at all.
  if (j.contains("owners") && j["owners"].is_array())
    for (const auto& o : j["owners"])
      if (o.is_object() && is_partition(o, "partition") && is_str(o, "owner"))
        m.owners[o["partition"].get<int32_t>()] = o["owner"].get<std::string>();
  if (j.contains("config") && j["config"].is_object())
    m.config = j["config"];
  if (j.contains("move_id")) {
    m.move_id = j["move_id"].get<std::string>();
    m.attempt = j["attempt"].get<int64_t>();
  }
  return m;
}

json to_json(const move_offsets& m) {
  return json{{"topic", m.topic}, {"partition", m.partition}, {"offsets", m.offsets}};
}

result<move_offsets> move_offsets_from_json(const json& j) {
  if (!j.is_object() || !is_str(j, "topic") || !is_partition(j, "partition") || !j.contains("offsets")
      || !j["offsets"].is_array())
    return bad(R"({"topic","partition","offsets":[...]})");
  return move_offsets{j["topic"].get<std::string>(), j["partition"].get<int32_t>(), j["offsets"]};
}

json to_json(const move_confirm& m) {
  json j{{"from", m.from}, {"log_end_offset", m.log_end_offset}};
  if (m.log_start_offset >= 0)
    j["log_start_offset"] = m.log_start_offset;
  if (m.owner_epoch > 0)
    j["owner_epoch"] = m.owner_epoch;
  return j;
}

result<move_confirm> move_confirm_from_json(const json& j) {
  if (!j.is_object() || !is_int(j, "log_end_offset"))
    return bad(R"({"from","log_end_offset","log_start_offset"?,"owner_epoch"?})");
  move_confirm m;
  m.log_end_offset = j["log_end_offset"].get<int64_t>();
  if (is_int(j, "log_start_offset"))
    m.log_start_offset = j["log_start_offset"].get<int64_t>();
  if (is_str(j, "from"))
    m.from = j["from"].get<std::string>();
  if (is_int(j, "owner_epoch"))
    m.owner_epoch = j["owner_epoch"].get<int64_t>();
  return m;
}

json to_json(const move_cleanup& m) {
  json j{{"owner", m.owner}};
  if (!m.move_id.empty())
    j["move_id"] = m.move_id;
  return j;
}

result<move_cleanup> move_cleanup_from_json(const json& j) {
  if (!j.is_object() || !is_str(j, "owner")
      || (j.contains("move_id")
          && (!is_str(j, "move_id") || !util::is_name(j["move_id"].get_ref<const std::string&>(), 1, 128))))
    return bad(R"({"owner","move_id"?})");
  return move_cleanup{j["owner"].get<std::string>(), j.value("move_id", std::string{})};
}

json to_json(const move_answer& a) {
  json j{{"log_end_offset", a.log_end_offset}};
  if (a.log_start_offset >= 0)
    j["log_start_offset"] = a.log_start_offset;
  if (a.copy_none)
    j["copy"] = "none";
  if (!a.owner.empty())
    j["owner"] = a.owner;
  if (a.already_confirmed)
    j["already_confirmed"] = true;
  return j;
}

result<move_answer> move_answer_from_json(const json& j) {
  if (!j.is_object() || !is_int(j, "log_end_offset"))
    return bad(R"({"log_end_offset","log_start_offset"?,"copy"?,"owner"?,"already_confirmed"?})");
  move_answer a;
  a.log_end_offset = j["log_end_offset"].get<int64_t>();
  if (is_int(j, "log_start_offset"))
    a.log_start_offset = j["log_start_offset"].get<int64_t>();
  a.copy_none = is_str(j, "copy") && j["copy"] == "none";
  if (is_str(j, "owner"))
    a.owner = j["owner"].get<std::string>();
  a.already_confirmed = j.contains("already_confirmed") && j["already_confirmed"] == true;
  return a;
}

}  // namespace moonmq::cluster

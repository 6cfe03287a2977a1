#include "placement/load_report.hpp"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace moonmq::placement {
namespace {

using json = nlohmann::json;

field_error fail(std::string field, std::string message) {
  return field_error{std::move(field), std::move(message)};
}

bool valid_rate(double v) {
  return std::isfinite(v) && v >= 0 && v <= max_byte_rate;
}

bool valid_cpu(double v) {
  return std::isfinite(v) && v >= 0 && v <= 1;
}

const char* const rate_message = "expected a finite number in [0, 1e15] (bytes/s)";
const char* const cpu_message = "expected a number in [0, 1]";

status validate_client(const std::string& field, const std::string& id, const client_load& c) {
  if (!valid_client_id(id))
    return fail(field + ".client_id", "expected 1..256 bytes without control characters, got " + cluster::quote_input(id));
  if (c.sessions < 0)
    return fail(field + ".sessions", "expected an integer >= 0");
  if (!valid_rate(c.bytes_in_per_sec))
    return fail(field + ".bytes_in_per_sec", rate_message);
  if (!valid_rate(c.bytes_out_per_sec))
    return fail(field + ".bytes_out_per_sec", rate_message);
  return {};
}

// ---- JSON readers: each names the field it refuses -------------------------

result<const json*> member(const json& obj, const std::string& prefix, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end())
    return fail(prefix + key, "missing");
  return &*it;
}

result<int64_t> read_int(const json& obj, const std::string& prefix, const char* key) {
  auto m = member(obj, prefix, key);
  if (!m)
    return m.err();
  const json& v = **m;
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return fail(prefix + key, "expected an integer >= 0 below 2^63");
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    return fail(prefix + key, "expected an integer >= 0");
  return v.get<int64_t>();
}

result<uint64_t> read_counter(const json& obj, const std::string& prefix, const char* key) {
  auto m = member(obj, prefix, key);
  if (!m)
    return m.err();
  const json& v = **m;
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
    return fail(prefix + key, "expected an integer >= 0 (a cumulative byte counter)");
  return v.get<uint64_t>();
}

result<double> read_number(const json& obj, const std::string& prefix, const char* key, bool cpu) {
  auto m = member(obj, prefix, key);
  if (!m)
    return m.err();
  const json& v = **m;
  if (!v.is_number())
    return fail(prefix + key, cpu ? cpu_message : rate_message);
  double d = v.get<double>();
  if (cpu ? !valid_cpu(d) : !valid_rate(d))
    return fail(prefix + key, cpu ? cpu_message : rate_message);
  return d;
}

result<bool> read_bool(const json& obj, const std::string& prefix, const char* key) {
  auto m = member(obj, prefix, key);
  if (!m)
    return m.err();
  if (!(*m)->is_boolean())
    return fail(prefix + key, "expected true or false");
  return (*m)->get<bool>();
}

result<std::string> read_string(const json& obj, const std::string& prefix, const char* key) {
  auto m = member(obj, prefix, key);
  if (!m)
    return m.err();
  if (!(*m)->is_string())
    return fail(prefix + key, "expected a string");
  return (*m)->get<std::string>();
}

// Assigns the parsed value or returns its error from the enclosing function.
#define MOONMQ_READ(target, expr) \
  do {                            \
    auto r_ = (expr);             \
    if (!r_)                      \
      return r_.err();            \
    target = *r_;                 \
  } while (false)

result<std::pair<std::string, client_load>> client_from_json(const json& row, const std::string& prefix) {
  if (!row.is_object())
    return fail(prefix.substr(0, prefix.size() - 1), "expected an object");
  std::string id;
  client_load c;
  MOONMQ_READ(id, read_string(row, prefix, "client_id"));
  MOONMQ_READ(c.sessions, read_int(row, prefix, "sessions"));
  MOONMQ_READ(c.bytes_in_per_sec, read_number(row, prefix, "bytes_in_per_sec", false));
  MOONMQ_READ(c.bytes_out_per_sec, read_number(row, prefix, "bytes_out_per_sec", false));
  if (!valid_client_id(id))
    return fail(prefix + "client_id", "expected 1..256 bytes without control characters, got " + cluster::quote_input(id));
  return std::make_pair(std::move(id), c);
}

}  // namespace

std::string to_string(const field_error& e) {
  return e.field.empty() ? e.message : e.field + ": " + e.message;
}

bool valid_client_id(std::string_view id) {
  if (id.empty() || id.size() > max_client_id_length)
    return false;
  for (char c : id) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      return false;
  }
  return true;
}

status validate(const load_report& r) {
  if (!cluster::valid_broker_id(r.broker.str()))
    return fail("broker_id", "expected 1..64 characters of [A-Za-z0-9._-], got " + cluster::quote_input(r.broker.str()));
  if (r.report_time_ms < 0)
    return fail("report_time_ms", "expected an integer >= 0");
  if (r.started_ms < 0)
    return fail("started_ms", "expected an integer >= 0");
  if (r.active_sessions < 0)
    return fail("active_sessions", "expected an integer >= 0");
  if (!valid_rate(r.bytes_in_per_sec))
    return fail("bytes_in_per_sec", rate_message);
  if (!valid_rate(r.bytes_out_per_sec))
    return fail("bytes_out_per_sec", rate_message);
  if (!valid_cpu(r.process_cpu))
    return fail("process_cpu", cpu_message);
  if (!valid_cpu(r.machine_cpu))
    return fail("machine_cpu", cpu_message);
  if (r.clients.size() > max_report_clients)
    return fail("clients", "more than " + std::to_string(max_report_clients) + " rows");
  int64_t client_sessions = 0;
  size_t i = 0;
  for (const auto& [id, c] : r.clients) {
    if (auto ok = validate_client("clients[" + std::to_string(i++) + "]", id, c); !ok)
      return ok;
    // Each term is < 2^63 and the running sum is checked against
    // active_sessions before the next addition: no overflow.
    client_sessions += c.sessions;
    if (client_sessions > r.active_sessions)
      return fail("clients", "client sessions add up to more than active_sessions (" +
                                 std::to_string(r.active_sessions) + ")");
  }
  return {};
}

json to_json(const load_report& r) {
  json clients = json::array();
  for (const auto& [id, c] : r.clients)
    clients.push_back({{"client_id", id},
                       {"sessions", c.sessions},
                       {"bytes_in_per_sec", c.bytes_in_per_sec},
                       {"bytes_out_per_sec", c.bytes_out_per_sec}});
  return json{{"broker_id", r.broker.str()},
              {"report_time_ms", r.report_time_ms},
              {"started_ms", r.started_ms},
              {"active_sessions", r.active_sessions},
              {"bytes_in_per_sec", r.bytes_in_per_sec},
              {"bytes_out_per_sec", r.bytes_out_per_sec},
              {"bytes_in_total", r.bytes_in_total},
              {"bytes_out_total", r.bytes_out_total},
              {"process_cpu", r.process_cpu},
              {"machine_cpu", r.machine_cpu},
              {"draining", r.draining},
              {"clients", std::move(clients)}};
}

result<load_report> report_from_json(const json& j) {
  if (!j.is_object())
    return fail("", "expected a JSON object (a session-load report)");
  const std::string top;
  load_report r;
  std::string id;
  MOONMQ_READ(id, read_string(j, top, "broker_id"));
  r.broker = broker_id{id};
  MOONMQ_READ(r.report_time_ms, read_int(j, top, "report_time_ms"));
  MOONMQ_READ(r.started_ms, read_int(j, top, "started_ms"));
  MOONMQ_READ(r.active_sessions, read_int(j, top, "active_sessions"));
  MOONMQ_READ(r.bytes_in_per_sec, read_number(j, top, "bytes_in_per_sec", false));
  MOONMQ_READ(r.bytes_out_per_sec, read_number(j, top, "bytes_out_per_sec", false));
  MOONMQ_READ(r.bytes_in_total, read_counter(j, top, "bytes_in_total"));
  MOONMQ_READ(r.bytes_out_total, read_counter(j, top, "bytes_out_total"));
  MOONMQ_READ(r.process_cpu, read_number(j, top, "process_cpu", true));
  MOONMQ_READ(r.machine_cpu, read_number(j, top, "machine_cpu", true));
  MOONMQ_READ(r.draining, read_bool(j, top, "draining"));
  auto clients = member(j, top, "clients");
  if (!clients)
    return clients.err();
  if (!(*clients)->is_array())
    return fail("clients", "expected an array");
  if ((*clients)->size() > max_report_clients)
    return fail("clients", "more than " + std::to_string(max_report_clients) + " rows");
  size_t i = 0;
  for (const auto& row : **clients) {
    std::string prefix = "clients[" + std::to_string(i++) + "].";
    auto c = client_from_json(row, prefix);
    if (!c)
      return c.err();
    if (!r.clients.emplace(c->first, c->second).second)
      return fail(prefix + "client_id", "duplicate " + cluster::quote_input(c->first));
  }
  if (auto ok = validate(r); !ok)  // broker id syntax, session sum
    return ok.err();
  return r;
}

#undef MOONMQ_READ

}  // namespace moonmq::placement

#include <csignal>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "dataplane/records_binary.hpp"
#include "dataplane/records_json.hpp"
#include "tools/moonmqctl/commands.hpp"
#include "net/blocking_client.hpp"

namespace moonmq::ctl {
namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

std::atomic<bool> stopping{false};

void on_signal(int) {
  stopping = true;
}

/// Answers 200 with a JSON body, or prints why not and returns discarded json.
/// A 503 coordinator_unavailable (the group's coordinator broker is down or
/// unreachable, docs/groups.md "Cluster-wide groups") is retried with
/// backoff, 100 ms doubling to 2 s, for up to 60 s or until interrupted.
json call(transport::http_connection& conn, const std::string& method, const std::string& target,
          const std::string& body = {}) {
  auto res = conn.call(method, target, body);
  auto backoff = std::chrono::milliseconds(100);
  auto give_up = clock_type::now() + std::chrono::seconds(60);
  while (res.status == 503 && !stopping && clock_type::now() < give_up
         && json::parse(res.body, nullptr, false).value("error", "") == "coordinator_unavailable") {
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    res = conn.call(method, target, body);
  }
  if (res.status != 200) {
    std::cerr << "moonmqctl: " << method << " " << target << " failed: "
              << (res.status ? std::to_string(res.status) + " " + res.body : res.error) << "\n";
    return json(json::value_t::discarded);
  }
  return json::parse(res.body, nullptr, false);
}

/// Appends a record of a JSON fetch answer to `out` as one line in
/// `format` (value, kv or json).
void print(const json& rec, int partition, const std::string& format, std::string& out) {
  auto text = [](const json& r, const char* name) -> std::string {
    if (r.contains(name) && r[name].is_string())
      return r[name].get<std::string>();
    auto b64 = std::string(name) + "_base64";
    return r.contains(b64) ? "base64:" + r[b64].get<std::string>() : std::string{};
  };
  if (format == "json") {
    json line = rec;
    line["partition"] = partition;
    out += line.dump();
  } else if (format == "kv") {
    out += text(rec, "key");
    out += '\t';
    out += text(rec, "value");
  } else {
    out += text(rec, "value");
  }
  out += '\n';
}

/// Appends a key or value as print() prints it from the JSON form: the
/// text when it is UTF-8, else "base64:<base64>"; nothing when null.
void put_text(std::optional<std::string_view> bytes, std::string& out) {
  if (!bytes)
    return;
  if (dataplane::is_utf8(*bytes)) {
    out += *bytes;
  } else {
    out += "base64:";
    out += dataplane::base64_encode(*bytes);
  }
}

/// Appends a record of a binary fetch answer exactly as print() appends
/// the same record fetched as JSON.
void print(const storage::record_view& rec, int partition, const std::string& format, std::string& out) {
  if (format == "json") {
    auto line = dataplane::record_json(rec);
    line["partition"] = partition;
    out += line.dump();
  } else if (format == "kv") {
    put_text(rec.key, out);
    out += '\t';
    put_text(rec.value, out);
  } else {
    put_text(rec.value, out);
  }
  out += '\n';
}

struct group_session {
  std::string member;
  int64_t generation = -1;
  std::vector<int> partitions;
};

/// Joins (or re-joins) the group and reads its assignment for `topic`.
bool join(transport::http_connection& conn, const consume_options& o, group_session& s) {
  json body{{"topics", {o.topic}}};
  if (!s.member.empty())
    body["member_id"] = s.member;
  auto j = call(conn, "POST", "/v1/groups/" + o.group + "/members", body.dump());
  if (j.is_discarded() && !s.member.empty()) {
    s.member.clear();  // evicted meanwhile: join as a new member
    j = call(conn, "POST", "/v1/groups/" + o.group + "/members", json{{"topics", {o.topic}}}.dump());
  }
  if (j.is_discarded())
    return false;
  s.member = j["member_id"].get<std::string>();
  s.generation = j["generation"].get<int64_t>();
  s.partitions = j["assignment"].value(o.topic, std::vector<int>{});
  return true;
}

/// The "host:port" of a client URL "http://host:port"; "" when malformed.
std::string authority_of(const std::string& url) {
  auto start = url.find("://");
  auto rest = start == std::string::npos ? url : url.substr(start + 3);
  auto slash = rest.find('/');
  return slash == std::string::npos ? rest : rest.substr(0, slash);
}

/// Keep-alive connections to the brokers that own partitions (421
/// not_owner names them), by "host:port"; "" is the broker given on the
/// command line.
class broker_connections {
public:
  explicit broker_connections(transport::http_connection& home) : home_(home) {}
  transport::http_connection& get(const std::string& authority) {
    if (authority.empty())
      return home_;
    auto it = others_.find(authority);
    if (it != others_.end())
      return *it->second;
    auto colon = authority.rfind(':');
    auto host = authority.substr(0, colon);
    auto port = static_cast<uint16_t>(std::atoi(authority.c_str() + colon + 1));
    return *others_.emplace(authority, std::make_unique<transport::http_connection>(host, port)).first->second;
  }

private:
  transport::http_connection& home_;
  std::map<std::string, std::unique_ptr<transport::http_connection>> others_;
};

}  // namespace

int consume(const endpoint& ep, const consume_options& o) {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  transport::http_connection conn{ep.host, ep.port};
  auto topics = call(conn, "GET", "/v1/topics");
  if (topics.is_discarded())
    return 1;
  int partitions = -1;
  for (const auto& t : topics["topics"])
    if (t["name"] == o.topic)
      partitions = t["partitions"].get<int>();
  // With a group the assignment names the partitions: the topic may live
  // on other brokers only (the coordinator knows its partition count).
  if (partitions < 0 && o.group.empty()) {
    std::cerr << "moonmqctl: unknown topic " << o.topic << "\n";
    return 1;
  }
  broker_connections brokers{conn};
  std::map<int, std::string> served_by;  // partition -> "host:port" of its owner ("" = the given broker)
  group_session session;
  std::map<int, int64_t> position;  // partition -> next offset to read (-1 = log start)
  auto assign = [&](const std::vector<int>& parts) {
    std::map<int, int64_t> next;
    if (!o.group.empty()) {
      auto c = call(conn, "GET", "/v1/groups/" + o.group + "/offsets?topic=" + o.topic);
      if (!c.is_discarded())
        for (const auto& e : c["offsets"])
          next[e["partition"].get<int>()] = e["offset"].get<int64_t>();
    }
    position.clear();
    for (int p : parts)
      position[p] = next.count(p) ? next[p] : o.offset;
  };
  if (!o.group.empty()) {
    if (!join(conn, o, session))
      return 1;
    assign(session.partitions);
  } else if (o.partition >= 0) {
    assign({o.partition});
  } else {
    std::vector<int> all;
    for (int p = 0; p < partitions; ++p)
      all.push_back(p);
    assign(all);
  }
  const bool binary = o.form == "binary";
  transport::header_list accept;
  if (binary)
    accept = {{"Accept", std::string(dataplane::records_binary_type)}};
  dataplane::fetched_page page;
  std::string lines;  // the current page's output
  int64_t printed = 0;
  auto last_beat = clock_type::now();
  auto last_record = clock_type::now();
  int rc = 0;
  while (!stopping && (o.count < 0 || printed < o.count)) {
    bool any = false, all_caught_up = true;
    json commit = json::array();
    for (auto& [p, next] : position) {
      std::string target = "/v1/topics/" + o.topic + "/partitions/" + std::to_string(p) + "/records?max_records=1000";
      if (next >= 0)
        target += "&offset=" + std::to_string(next);
      auto res = brokers.get(served_by[p]).call("GET", target, {}, std::chrono::seconds(10), accept);
      // A binary answer says so in its Content-Type; errors, and every
      // answer of a broker without the binary form, are JSON.
      auto binary_answer = [&] {
        auto ct = res.headers.find("content-type");
        return binary && res.status == 200 && ct != res.headers.end()
               && dataplane::names_records_binary(ct->second);
      };
      bool got_binary = binary_answer();
      auto j = got_binary ? json{} : json::parse(res.body, nullptr, false);
      // Owned elsewhere (a move, or a partition that lives on another
      // broker): fetch from the owner the 421 names, at most 3 hops.
      for (int hop = 0; hop < 3 && res.status == 421 && !j.is_discarded() && j.value("error", "") == "not_owner"
                        && j.contains("url") && j["url"].is_string();
           ++hop) {
        served_by[p] = authority_of(j["url"].get<std::string>());
        res = brokers.get(served_by[p]).call("GET", target, {}, std::chrono::seconds(10), accept);
        got_binary = binary_answer();
        j = got_binary ? json{} : json::parse(res.body, nullptr, false);
      }
      if (res.status == 400 && !j.is_discarded() && j.value("error", "") == "offset_out_of_range") {
        // Retention moved the log start past us: resume at the log start.
        next = j.value("log_start_offset", int64_t{0});
        continue;
      }
      std::string malformed;
      if (got_binary) {
        if (auto e = dataplane::decode_fetch_binary(res.body, page))
          malformed = "malformed answer: " + e.to_string();
      } else if (res.status == 200 && j.is_discarded()) {
        malformed = "malformed answer: not JSON";
      }
      if (res.status != 200 || !malformed.empty()) {
        std::cerr << "moonmqctl: fetch failed: "
                  << (!malformed.empty() ? malformed
                      : res.status       ? std::to_string(res.status) + " " + res.body
                                         : res.error)
                  << "\n";
        rc = 1;
        stopping = true;
        break;
      }
      int64_t log_end = 0;
      if (got_binary) {
        for (const auto& rec : page.records) {
          if (o.count >= 0 && printed >= o.count)
            break;
          print(rec, p, o.format, lines);
          ++printed;
          any = true;
          next = rec.off.value + 1;
        }
        if (page.records.empty())
          next = page.next_offset;
        log_end = page.log_end_offset;
      } else {
        for (const auto& rec : j["records"]) {
          if (o.count >= 0 && printed >= o.count)
            break;
          print(rec, p, o.format, lines);
          ++printed;
          any = true;
          next = rec["offset"].get<int64_t>() + 1;
        }
        if (j["records"].empty())
          next = j["next_offset"].get<int64_t>();
        log_end = j["log_end_offset"].get<int64_t>();
      }
      if (next < log_end)
        all_caught_up = false;
      // A partition not read from yet (-1: "from the log start") has nothing to commit.
      if (next >= 0)
        commit.push_back(json{{"topic", o.topic}, {"partition", p}, {"offset", next}});
      // One write per fetched page, not one per record.
      std::cout.write(lines.data(), static_cast<std::streamsize>(lines.size()));
      lines.clear();
    }
    std::cout.flush();
    if (!o.group.empty() && any) {
      json body{{"offsets", commit}, {"generation", session.generation}, {"member_id", session.member}};
      if (call(conn, "POST", "/v1/groups/" + o.group + "/offsets", body.dump()).is_discarded()) {
        // Fenced by a rebalance: re-join and resume from committed offsets.
        if (!join(conn, o, session))
          return 1;
        assign(session.partitions);
      }
    }
    if (any)
      last_record = clock_type::now();
    if (!o.group.empty() && clock_type::now() - last_beat > std::chrono::seconds(1)) {
      last_beat = clock_type::now();
      auto beat = call(conn, "POST", "/v1/groups/" + o.group + "/members/" + session.member + "/heartbeat");
      if (beat.is_discarded() || beat["generation"].get<int64_t>() != session.generation) {
        if (!join(conn, o, session))
          return 1;
        assign(session.partitions);
      }
    }
    if (all_caught_up && !any) {
      if (!o.follow)
        break;
      if (o.idle_exit_ms > 0 && clock_type::now() - last_record > std::chrono::milliseconds(o.idle_exit_ms))
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (!o.group.empty() && !session.member.empty())
    conn.call("DELETE", "/v1/groups/" + o.group + "/members/" + session.member);
  return rc;
}

}  // namespace moonmq::ctl

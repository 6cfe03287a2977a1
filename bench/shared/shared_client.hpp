#pragma once
// The client side of shared_bench (bench/shared/README.md): produce bodies,
// who owns what, moves, and reading acknowledged records back, over the
// client, admin and cluster HTTP APIs of a bench::raft_cluster.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/raft_cluster.hpp"
#include "net/blocking_client.hpp"

namespace moonmq::bench::shared {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using moonmq::transport::http_call;
using moonmq::transport::http_connection;

/// The Content-Type of the binary records form (docs/client-api.md "Binary records").
inline constexpr const char* binary_type = "application/vnd.moonmq.records.v1";

inline double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

inline void put_i32(std::string& out, int32_t v) {
  auto u = static_cast<uint32_t>(v);
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((u >> shift) & 0xff));
}

/// A binary produce body: every value of `values` as one record to
/// `partition`, with no key and no header (4 + n · (16 + value bytes) bytes).
inline std::string binary_body(int partition, const std::vector<std::string>& values) {
  std::string out;
  size_t total = 4;
  for (const auto& v : values)
    total += 16 + v.size();
  out.reserve(total);
  put_i32(out, static_cast<int32_t>(values.size()));
  for (const auto& v : values) {
    put_i32(out, partition);
    put_i32(out, -1);  // null key
    put_i32(out, static_cast<int32_t>(v.size()));
    out += v;
    put_i32(out, 0);  // no header
  }
  return out;
}

/// Partition → owner id of `topic` as the metadata image of the broker on
/// cluster port `cluster_port` names them (GET /cluster/owners); empty when
/// it does not answer.
inline std::map<int, std::string> owners_of(uint16_t cluster_port, const std::string& topic) {
  std::map<int, std::string> out;
  auto r = http_call(cluster_port, "GET", "/cluster/owners", {}, {{"X-Cluster-Token", raft_cluster::token}},
                     std::chrono::seconds(5));
  auto j = json::parse(r.body, nullptr, false);
  if (r.status != 200 || !j.is_object())
    return out;
  for (const auto& row : j.value("owners", json::array()))
    if (row.value("topic", "") == topic && row["owner"].is_string())
      out[row.value("partition", -1)] = row["owner"].get<std::string>();
  return out;
}

/// The index of broker `id` in `c.ids`, or nullopt.
inline std::optional<size_t> index_of(const raft_cluster& c, const std::string& id) {
  for (size_t i = 0; i < c.ids.size(); ++i)
    if (c.ids[i] == id)
      return i;
  return std::nullopt;
}

/// `size_bytes` of topic/partition on the broker of `cluster_port`, which
/// must hold it open (GET /cluster/partitions/{t}/{p}/log-end); -1 otherwise.
inline int64_t partition_bytes(uint16_t cluster_port, const std::string& topic, int partition) {
  auto r = http_call(cluster_port, "GET", "/cluster/partitions/" + topic + "/" + std::to_string(partition) + "/log-end",
                     {}, {{"X-Cluster-Token", raft_cluster::token}});
  auto j = json::parse(r.body, nullptr, false);
  if (r.status != 200 || !j.is_object() || !j.contains("size_bytes"))
    return -1;
  return j["size_bytes"].get<int64_t>();
}

/// Whether broker `id` is fenced in the image of the broker on `admin_port`
/// (GET /admin/brokers); nullopt when it does not answer.
inline std::optional<bool> fenced(uint16_t admin_port, const std::string& id) {
  auto r = http_call(admin_port, "GET", "/admin/brokers", {}, {}, std::chrono::seconds(5));
  auto j = json::parse(r.body, nullptr, false);
  if (r.status != 200 || !j.is_object())
    return std::nullopt;
  for (const auto& b : j.value("brokers", json::array()))
    if (b.value("id", "") == id)
      return b.value("fenced", false);
  return std::nullopt;
}

/// One finished move as the bench saw it.
struct move_result {
  double seen_s = 0;  ///< submission to the row seen `done`, polling every 10 ms
  double row_s = 0;   ///< the row's updated_ms − started_ms (the source's journal)
};

/// POST /admin/reassignments of topic/partition to `to` through `admin_port`,
/// then polls GET /admin/reassignments every 10 ms until the move's row is
/// `done`. Throws when it is refused, fails or takes over `timeout`.
inline move_result move_partition(uint16_t admin_port, const std::string& topic, int partition, const std::string& to,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  auto t0 = clock_type::now();
  json body{{"version", 1}, {"partitions", {{{"topic", topic}, {"partition", partition}, {"replicas", {to}}}}}};
  auto sub = http_call(admin_port, "POST", "/admin/reassignments", body.dump());
  auto sj = json::parse(sub.body, nullptr, false);
  if (sub.status != 202 || !sj.is_object() || sj["accepted"].size() != 1)
    throw std::runtime_error("move " + topic + "/" + std::to_string(partition) + " to " + to +
                             " refused: " + std::to_string(sub.status) + " " + sub.body);
  const auto& acc = sj["accepted"][0];
  if (acc.value("state", "") == "done")
    return {seconds_between(t0, clock_type::now()), 0};
  auto id = acc["move_id"];
  for (auto deadline = t0 + timeout; clock_type::now() < deadline;) {
    auto r = http_call(admin_port, "GET", "/admin/reassignments");
    auto now = clock_type::now();
    auto j = json::parse(r.body, nullptr, false);
    if (r.status == 200 && j.is_object())
      for (const auto& row : j.value("reassignments", json::array()))
        if (row["move_id"] == id) {
          auto state = row.value("state", "");
          if (state == "done")
            return {seconds_between(t0, now),
                    static_cast<double>(row.value("updated_ms", int64_t{0}) - row.value("started_ms", int64_t{0})) / 1000};
          if (state == "failed" || state == "cancelled")
            throw std::runtime_error("move ended " + state + ": " + row.dump());
        }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("move " + topic + "/" + std::to_string(partition) + " to " + to + " did not finish");
}

/// Offset → value of the records of topic/partition from `from` to its log
/// end, fetched (JSON, 10,000 records a page) from the broker on client port
/// `client`, which must own it. Throws on any answer other than 200.
inline std::map<int64_t, std::string> read_values(uint16_t client, const std::string& topic, int partition,
                                                  int64_t from) {
  std::map<int64_t, std::string> out;
  http_connection conn{"127.0.0.1", client};
  const std::string base = "/v1/topics/" + topic + "/partitions/" + std::to_string(partition) + "/records?max_records=10000";
  int64_t next = from;
  for (;;) {
    auto r = conn.call("GET", base + "&offset=" + std::to_string(next), {}, std::chrono::seconds(30));
    auto page = json::parse(r.body, nullptr, false);
    if (r.status != 200 || !page.is_object())
      throw std::runtime_error("fetch " + topic + "/" + std::to_string(partition) + " at " + std::to_string(next) +
                               ": " + std::to_string(r.status) + " " + r.body + r.error);
    for (const auto& rec : page["records"])
      out[rec["offset"].get<int64_t>()] = rec["value"].is_string() ? rec["value"].get<std::string>() : "";
    auto end = page["log_end_offset"].get<int64_t>();
    auto got = page["next_offset"].get<int64_t>();
    if (got >= end || got == next)
      return out;
    next = got;
  }
}

/// Milliseconds since local midnight of the first line of `log` at or after
/// `after_ms` (same scale) that contains `needle`; spdlog's
/// "%Y-%m-%dT%H:%M:%S.%e" stamp starts each line. nullopt when none.
inline std::optional<int64_t> log_stamp_ms(const std::string& log, const std::string& needle, int64_t after_ms) {
  size_t at = 0;
  while ((at = log.find(needle, at)) != std::string::npos) {
    auto line = log.rfind('\n', at);
    line = line == std::string::npos ? 0 : line + 1;
    int h = 0, m = 0, s = 0, ms = 0;
    if (std::sscanf(log.c_str() + line, "%*4d-%*2d-%*2dT%2d:%2d:%2d.%3d", &h, &m, &s, &ms) == 4) {
      int64_t t = ((h * 60 + m) * 60 + s) * int64_t{1000} + ms;
      if (t >= after_ms)
        return t;
    }
    at += needle.size();
  }
  return std::nullopt;
}

/// Now as milliseconds since local midnight (the scale of log_stamp_ms).
inline int64_t wall_ms_of_day() {
  auto now = std::chrono::system_clock::now();
  auto t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  return ((tm.tm_hour * 60 + tm.tm_min) * 60 + tm.tm_sec) * int64_t{1000} + ms;
}

}  // namespace moonmq::bench::shared

#pragma once
// Helpers for the single-broker data-plane tests: a started node with its
// client port, JSON calls, an independent base64 codec (so that the tests do
// not check the broker against its own encoder) and a full read of one
// partition through the fetch pages.

#include <catch2/catch.hpp>

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/node/node_harness.hpp"
#include "net/blocking_client.hpp"

namespace moonmq::test::broker {

using nlohmann::json;

/// A moonmq-node on ephemeral ports whose client port is known.
struct running_node {
  std::unique_ptr<node_process> node;
  uint16_t admin = 0;
  uint16_t client = 0;

  /// Starts a node on `dir` (DataDir = <dir>/data) and waits for node.ready.
  static running_node start(const temp_dir& dir, std::vector<std::string> overrides = {}) {
    running_node r;
    r.node = std::make_unique<node_process>(dir, std::move(overrides));
    auto admin = r.node->wait_ready();
    if (!admin || !r.node->client_port())
      FAIL("moonmq-node did not become ready:\n" << r.node->log());
    r.admin = *admin;
    r.client = *r.node->client_port();
    return r;
  }

  /// SIGTERM and a clean exit.
  void stop() {
    node->process().signal(SIGTERM);
    auto rc = node->process().wait(std::chrono::seconds(10));
    CHECK(rc == 0);
  }

  /// SIGKILL, no shutdown at all.
  void kill() {
    node->process().signal(SIGKILL);
    CHECK(node->process().wait(std::chrono::seconds(10)) == 128 + SIGKILL);
  }
};

/// The answer of one request: status and parsed body (discarded when not JSON).
struct answer {
  int status = 0;
  json body;
  std::string raw;
};

inline answer call(uint16_t port, const std::string& method, const std::string& target, const std::string& body = {}) {
  auto r = transport::http_call(port, method, target, body, {}, std::chrono::seconds(30));
  return {r.status, json::parse(r.body, nullptr, false), r.body};
}

inline answer call(uint16_t port, const std::string& method, const std::string& target, const json& body) {
  return call(port, method, target, body.dump());
}

/// Creates a topic and checks that it answered 201 or 200.
inline void create_topic(uint16_t port, const std::string& name, int partitions, const json& config = nullptr) {
  json body{{"name", name}, {"partitions", partitions}};
  if (!config.is_null())
    body["config"] = config;
  auto a = call(port, "POST", "/v1/topics", body);
  INFO(a.raw);
  REQUIRE((a.status == 201 || a.status == 200));
}

inline std::string base64_encode(const std::string& in) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    out += abc[v >> 18];
    out += abc[(v >> 12) & 63];
    out += abc[(v >> 6) & 63];
    out += abc[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    out += abc[v >> 18];
    out += abc[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8);
    out += abc[v >> 18];
    out += abc[(v >> 12) & 63];
    out += abc[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

inline std::string base64_decode(const std::string& in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    if (c == '+')
      return 62;
    if (c == '/')
      return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=')
      break;
    int v = val(c);
    if (v < 0)
      throw std::runtime_error("not base64: " + in);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

/// Produces `n` records `value_prefix`<i> to one partition in one request,
/// acks=leader; returns the acknowledged offsets.
inline std::vector<int64_t> produce_values(uint16_t port, const std::string& topic, int partition, int n,
                                           const std::string& value_prefix) {
  json records = json::array();
  for (int i = 0; i < n; ++i)
    records.push_back(json{{"partition", partition}, {"value", value_prefix + std::to_string(i)}});
  auto a = call(port, "POST", "/v1/topics/" + topic + "/records?acks=leader", json{{"records", records}});
  INFO(a.raw);
  REQUIRE(a.status == 200);
  std::vector<int64_t> out;
  for (const auto& o : a.body["offsets"])
    out.push_back(o["offset"].get<int64_t>());
  return out;
}

/// The bytes of `name` in a fetched record or header: `name` (UTF-8 text),
/// `name_base64`, or nullopt for JSON null.
inline std::optional<std::string> bytes_of(const json& obj, const std::string& name) {
  if (obj.contains(name) && obj[name].is_string())
    return obj[name].get<std::string>();
  if (obj.contains(name + "_base64"))
    return base64_decode(obj[name + "_base64"].get<std::string>());
  return std::nullopt;
}

/// Everything in one partition from `from` (-1: its log start) to its log
/// end, page by page (at most `max_records` per fetch), checking that every
/// page continues where the previous one ended. `pages` counts the fetches
/// that returned records.
inline std::vector<json> fetch_all(uint16_t port, const std::string& topic, int partition, int max_records = 10000,
                                   int* pages = nullptr, int64_t* log_start = nullptr, int64_t from = -1) {
  std::vector<json> out;
  std::string base = "/v1/topics/" + topic + "/partitions/" + std::to_string(partition) + "/records";
  auto first = call(port, "GET", base + "?max_records=" + std::to_string(max_records)
                                   + (from >= 0 ? "&offset=" + std::to_string(from) : std::string()));
  INFO(first.raw.substr(0, 500));
  REQUIRE(first.status == 200);
  int64_t start = first.body["log_start_offset"].get<int64_t>();
  if (log_start)
    *log_start = start;
  int64_t next = from >= 0 ? from : start;
  auto page = std::move(first);
  int n_pages = 0;
  for (;;) {
    const auto& recs = page.body["records"];
    if (!recs.empty())
      ++n_pages;
    for (const auto& r : recs) {
      REQUIRE(r["offset"].get<int64_t>() == next);
      ++next;
      out.push_back(r);
    }
    REQUIRE(page.body["next_offset"].get<int64_t>() == next);
    if (next >= page.body["log_end_offset"].get<int64_t>())
      break;
    REQUIRE(!recs.empty());
    page = call(port, "GET",
                base + "?offset=" + std::to_string(next) + "&max_records=" + std::to_string(max_records));
    INFO(page.raw.substr(0, 500));
    REQUIRE(page.status == 200);
  }
  if (pages)
    *pages = n_pages;
  return out;
}

}  // namespace moonmq::test::broker

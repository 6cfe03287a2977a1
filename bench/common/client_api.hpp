#pragma once
// Request bodies for benchmarks that load a node through the client HTTP API
// (docs/client-api.md): POST /v1/topics/<topic>/records.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace moonmq::bench {

/// The produce requests that load a node: `connections` keep-alive
/// connections, each posting requests of `records` text values of
/// `value_bytes` bytes (a benchmark's options struct derives from this).
struct produce_load {
  int connections = 1;
  int records = 1000;
  size_t value_bytes = 1024;
};

/// The `load.records` values of one request: `load.value_bytes` lowercase
/// letters each, from an xorshift64 stream seeded by `salt` (the same salt
/// gives the same values).
inline std::vector<std::string> request_values(const produce_load& load, int salt) {
  std::vector<std::string> out;
  std::string value(load.value_bytes, 'a');
  uint64_t x = 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(salt);
  for (int i = 0; i < load.records; ++i) {
    for (auto& c : value) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>('a' + x % 26);
    }
    out.push_back(value);
  }
  return out;
}

/// A produce body `{"records":[{"value":...}, ...]}` of request_values(load,
/// salt). With `partition` >= 0 each record also names that partition;
/// otherwise the node picks one.
inline std::string records_body(const produce_load& load, int salt, int partition = -1) {
  auto list = nlohmann::json::array();
  for (auto& value : request_values(load, salt)) {
    nlohmann::json record{{"value", std::move(value)}};
    if (partition >= 0)
      record["partition"] = partition;
    list.push_back(std::move(record));
  }
  return nlohmann::json{{"records", list}}.dump();
}

}  // namespace moonmq::bench

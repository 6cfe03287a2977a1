#pragma once
// Core value types of the raft module: strong ids (term, log_index, node_id),
// log entries (controller / owner), the hard state and the snapshot.
// JSON (nlohmann) shapes are given on each type; decoding is strict and
// returns errc::malformed naming the offending field.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "raft/result.hpp"

namespace moonmq::raft {

/// Strong unsigned counter (terms and log indexes). Zero means "none":
/// term 0 precedes every election, index 0 precedes the first entry.
template <class Tag>
struct counter {
  uint64_t value = 0;

  constexpr counter() = default;
  constexpr explicit counter(uint64_t v) : value(v) {}

  constexpr counter next() const { return counter{value + 1}; }
  constexpr counter prev() const { return counter{value == 0 ? 0 : value - 1}; }

  friend constexpr bool operator==(counter a, counter b) { return a.value == b.value; }
  friend constexpr bool operator!=(counter a, counter b) { return a.value != b.value; }
  friend constexpr bool operator<(counter a, counter b) { return a.value < b.value; }
  friend constexpr bool operator<=(counter a, counter b) { return a.value <= b.value; }
  friend constexpr bool operator>(counter a, counter b) { return a.value > b.value; }
  friend constexpr bool operator>=(counter a, counter b) { return a.value >= b.value; }
  friend constexpr counter operator+(counter a, uint64_t n) { return counter{a.value + n}; }
};

struct term_tag {};
struct log_index_tag {};

/// Raft term (Raft paper §5.1). Also the controller epoch when Raft is on.
using term = counter<term_tag>;
/// Position of an entry in the replicated log; the first entry has index 1.
using log_index = counter<log_index_tag>;

/// A broker id ("b1"). Empty means "nobody" (no vote, no known leader).
struct node_id {
  std::string value;

  node_id() = default;
  explicit node_id(std::string v) : value(std::move(v)) {}
  bool empty() const { return value.empty(); }
  const std::string& str() const { return value; }

  friend bool operator==(const node_id& a, const node_id& b) { return a.value == b.value; }
  friend bool operator!=(const node_id& a, const node_id& b) { return a.value != b.value; }
  friend bool operator<(const node_id& a, const node_id& b) { return a.value < b.value; }
};

/// True when `id` is a valid broker id: 1..64 characters of [A-Za-z0-9._-].
bool valid_node_id(const std::string& id);
/// True when `name` is a valid topic name (DESIGN §2): [A-Za-z0-9._-]{1,249}, no "..".
bool valid_topic(const std::string& name);

/// Payload of a `controller` entry: written by a new leader as its
/// current-term no-op (Raft paper §8; thesis §6.4) and naming it controller.
/// JSON: {"type":"controller","leader":"b1"}
struct controller_entry {
  node_id leader;
  friend bool operator==(const controller_entry& a, const controller_entry& b) { return a.leader == b.leader; }
};

/// Payload of an `owner` entry: one ownership change.
/// JSON: {"type":"owner","topic":"orders","partition":3,"owner":"b2"}
struct owner_entry {
  std::string topic;
  int32_t partition = 0;  ///< >= 0
  node_id owner;
  friend bool operator==(const owner_entry& a, const owner_entry& b) {
    return a.topic == b.topic && a.partition == b.partition && a.owner == b.owner;
  }
};

using entry_payload = std::variant<controller_entry, owner_entry>;

/// One log entry. JSON: {"term":3,"index":7,<payload fields>}.
struct log_entry {
  term entry_term;
  log_index index;
  entry_payload payload;
  friend bool operator==(const log_entry& a, const log_entry& b) {
    return a.entry_term == b.entry_term && a.index == b.index && a.payload == b.payload;
  }
  friend bool operator!=(const log_entry& a, const log_entry& b) { return !(a == b); }
};

/// State that must be durable before any message depending on it is sent
/// (Raft paper Figure 2 "persistent state", plus the commit index so a
/// restart re-applies exactly the committed prefix).
/// JSON: {"term":3,"vote":"b1","commit":7} (vote "" = none).
struct hard_state {
  term current_term;
  node_id voted_for;
  log_index commit;
  friend bool operator==(const hard_state& a, const hard_state& b) {
    return a.current_term == b.current_term && a.voted_for == b.voted_for && a.commit == b.commit;
  }
  friend bool operator!=(const hard_state& a, const hard_state& b) { return !(a == b); }
};

/// (topic, partition) key of the ownership table.
struct topic_partition {
  std::string topic;
  int32_t partition = 0;
  friend bool operator<(const topic_partition& a, const topic_partition& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  }
  friend bool operator==(const topic_partition& a, const topic_partition& b) {
    return a.topic == b.topic && a.partition == b.partition;
  }
};

/// Compacted log prefix (Raft paper §7): the applied ownership table and the
/// controller as of `last_index`, whose entry had term `last_term`.
/// JSON: {"last_index":512,"last_term":3,"controller":"b1",
///        "owners":[{"topic":"orders","partition":3,"owner":"b2"}]}
struct snapshot {
  log_index last_index;
  term last_term;
  node_id controller;
  std::map<topic_partition, node_id> owners;
  friend bool operator==(const snapshot& a, const snapshot& b) {
    return a.last_index == b.last_index && a.last_term == b.last_term && a.controller == b.controller &&
           a.owners == b.owners;
  }
};

// JSON encoding (never fails) and strict decoding (errc::malformed).
nlohmann::json to_json(const log_entry& e);
result<log_entry> entry_from_json(const nlohmann::json& j);
nlohmann::json to_json(const hard_state& h);
result<hard_state> hard_state_from_json(const nlohmann::json& j);
nlohmann::json to_json(const snapshot& s);
result<snapshot> snapshot_from_json(const nlohmann::json& j);

/// Human-readable one-line form of an entry ("3/7 owner orders-3=b2"), for logs and test output.
std::string describe(const log_entry& e);

}  // namespace moonmq::raft

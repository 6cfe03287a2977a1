#pragma once
// Basic vocabulary of the autobalancer: resources, strong index types,
// actions and per-goal configuration. Plain data, no behaviour.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moonmq::goals {

/// A balanced resource. NW_IN / NW_OUT are bytes per second, DISK is bytes,
/// PARTITION_COUNT counts partitions (each replica weighs 1).
enum class resource : std::uint8_t { nw_in = 0, nw_out = 1, disk = 2, partition_count = 3 };

/// Number of resources; loads are stored as std::array<double, kResourceCount>.
inline constexpr std::size_t kResourceCount = 4;
/// Resources that carry a measured load (the first three); PARTITION_COUNT is derived.
inline constexpr std::size_t kMeasuredResources = 3;

/// "NW_IN", "NW_OUT", "DISK", "PARTITION_COUNT" (goal-name spelling).
std::string_view resource_name(resource r);
/// "nw_in", "nw_out", "disk", "partitions" (JSON key spelling of CONTRACT §6).
std::string_view resource_key(resource r);
/// Index of `r` into load arrays.
constexpr std::size_t index_of(resource r) { return static_cast<std::size_t>(r); }

/// Position of a broker inside one snapshot (0 .. broker_count-1). Not stable
/// across snapshots; the stable id is the broker's string id.
struct broker_index {
  std::uint32_t value = 0;
  friend bool operator==(broker_index a, broker_index b) { return a.value == b.value; }
  friend bool operator!=(broker_index a, broker_index b) { return a.value != b.value; }
};

/// Position of a replica (one topic-partition) inside one snapshot.
struct replica_index {
  std::uint32_t value = 0;
  friend bool operator==(replica_index a, replica_index b) { return a.value == b.value; }
  friend bool operator!=(replica_index a, replica_index b) { return a.value != b.value; }
};

/// Stable name of a partition.
struct topic_partition {
  std::string topic;
  std::int32_t partition = 0;
  friend bool operator==(const topic_partition& a, const topic_partition& b) {
    return a.partition == b.partition && a.topic == b.topic;
  }
  friend bool operator<(const topic_partition& a, const topic_partition& b) {
    return a.topic != b.topic ? a.topic < b.topic : a.partition < b.partition;
  }
};

enum class action_type : std::uint8_t { move, swap };

/// One step of a plan inside a snapshot.
/// MOVE: `replica` goes from broker `from` to broker `to`.
/// SWAP: `replica` goes from `from` to `to` and `other` goes from `to` to `from`.
struct action {
  action_type type = action_type::move;
  replica_index replica;
  broker_index from;
  broker_index to;
  replica_index other;  // SWAP only
};

/// Effective configuration of one goal for one plan (defaults merged with
/// the model's `goals` overrides). See docs/balancer.md for the defaults.
struct goal_config {
  bool enabled = true;
  /// Band half-width as a fraction of the mean: band = mean·(1 ± avg_deviation).
  double avg_deviation = 0.2;
  /// The goal is idle while the mean raw load per eligible broker is below
  /// this (resource units: bytes/s, bytes or partitions).
  double detect_threshold = 0.0;
  /// Higher runs earlier.
  int priority = 0;
  /// Capacity goals: limit = capacity × capacity_threshold.
  double capacity_threshold = 0.8;
};

/// Optional per-goal overrides as given in a model's `goals` object.
struct goal_overrides {
  std::optional<bool> enabled;
  std::optional<double> avg_deviation;
  std::optional<double> detect_threshold;
  std::optional<int> priority;
  std::optional<double> capacity_threshold;

  /// `base` with every present override applied.
  goal_config apply_to(goal_config base) const;
};

}  // namespace moonmq::goals

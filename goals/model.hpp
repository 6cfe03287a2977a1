#pragma once
// The cluster model: the planner's input as plain data (CONTRACT §6 "Model").
// Built by the balance loop from live load reports or parsed from JSON by
// model_json.hpp; frozen into a snapshot for one planning pass.

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "goals/types.hpp"
#include "util/names.hpp"

namespace moonmq::goals {

/// One broker. `capacity[i]` is the capacity of measured resource i
/// (nw_in, nw_out bytes/s; disk bytes); absent = unknown/unlimited.
struct broker_spec {
  std::string id;
  std::string rack;
  bool alive = true;
  /// Excluded by the operator (ExcludedBrokers): neither source nor destination.
  bool excluded = false;
  /// Its load window is still filling (a partition moved to it recently):
  /// not a destination of goals, but a drain may still move onto it.
  bool warming = false;
  /// Being drained (POST /admin/brokers/{id}/drain): every partition it owns
  /// moves off before any goal runs, and nothing moves onto it.
  bool draining = false;
  /// Marked slow by the balance loop (docs/balancer.md "Slow brokers": its
  /// sync or produce latency stays far above its peers'): never a
  /// destination, not counted in the goals' means, and the SLOW_BROKER goal
  /// moves its partitions off.
  bool slow = false;
  std::array<std::optional<double>, kMeasuredResources> capacity{};
  /// Relative size of the broker (Cluster.Weight; AutoMQ's broker weight):
  /// the distribution goals give it a share of each resource proportional
  /// to its weight among the eligible brokers. A finite number in
  /// [kMinBrokerWeight, kMaxBrokerWeight]; 1 for every broker gives equal shares.
  double weight = 1.0;
};

/// Bounds of broker_spec::weight (a weight outside them is refused when the
/// model is frozen, and by the config loader).
inline constexpr double kMinBrokerWeight = 0.01;
inline constexpr double kMaxBrokerWeight = 100.0;

/// A rack name as Cluster.Rack takes it: "" (none) or at most 64 letters,
/// digits, '.', '_' and '-' (util/names.hpp, shared with the config loader).
using util::valid_rack_name;

/// One partition (single replica: its owner). `load[i]` is measured resource
/// i (nw_in, nw_out bytes/s; disk bytes). An untrusted replica (fewer than
/// MinValid samples) contributes no load and never moves.
struct replica_spec {
  std::string topic;
  std::int32_t partition = 0;
  std::string owner;
  std::array<double, kMeasuredResources> load{};
  bool trusted = true;
};

/// A move that is executing right now: the model already counts the
/// partition on `to`, and the partition does not move again in this plan.
struct in_flight_move {
  topic_partition tp;
  std::string to;
};

/// A broker that one partition must not move to in this plan
/// (docs/balancer.md "Stability rules"): the destination of its recent
/// failed or cancelled move, or a broker a recent move took it from. Goals
/// never choose it; a drain chooses it only when no other drain target
/// accepts the partition.
struct avoided_destination {
  topic_partition tp;
  std::string broker;
};

/// Everything one planning pass needs.
struct cluster_model {
  std::vector<broker_spec> brokers;
  std::vector<replica_spec> replicas;
  /// Topics that never move (their load still counts on their owner).
  /// Internal topics (`__` prefix) never move whether listed or not.
  std::vector<std::string> excluded_topics;
  /// Per-goal overrides by goal name; a missing goal runs with its defaults.
  std::map<std::string, goal_overrides> goals;
  /// Cap on the number of partitions the plan moves (MaxActionsPerDetect).
  std::size_t max_actions = 50;
  /// Recently moved partitions that must not move again yet.
  std::vector<topic_partition> cooldown;
  /// Moves still running; applied to the model before planning.
  std::vector<in_flight_move> in_flight;
  /// Per-partition brokers not to move to. Entries naming an unknown
  /// partition or broker (deleted or removed since) are ignored.
  std::vector<avoided_destination> avoid;
  /// Shared storage (Storage.SharedDir, docs/shared-storage.md): partition
  /// data lives on a directory every broker mounts, so a move copies no
  /// byte (metadata only, about 100 ms whatever the size) and a broker's
  /// DISK load is not on its own disk. The plan then (docs/balancer.md
  /// "Shared storage: cost model"): leaves DISK and DISK_CAPACITY off
  /// unless the model enables them; narrows the distribution goals' default
  /// band to kSharedStorageAvgDeviation; and lets the cap on moves rise to
  /// the partitions brokers below the mean count lack (shared_storage_cap),
  /// so that a new broker is filled in one pass. False: local storage.
  bool shared_storage = false;
};

/// Checks the references inside a model: unique non-empty broker ids, owners
/// and in-flight destinations that name a broker, unique (topic, partition),
/// non-negative finite loads and capacities, 0 ≤ partition.
/// Returns an empty string when valid, else a message naming the offending
/// element (e.g. "partitions[3].owner: unknown broker \"b9\"").
std::string validate(const cluster_model& model);

}  // namespace moonmq::goals

#pragma once
// Band arithmetic shared by the built-in goals (see docs/balancer.md).
//
// A distribution goal compares each eligible broker's normalized load n_b
// with band = mean·(1 ± deviation). Normalized load is the utilization
// load/capacity when every eligible broker declares a capacity for the
// resource (then mean = Σ load / Σ capacity over eligible brokers), else
// the load per unit of weight load/weight (mean = Σ load / Σ weight: each
// broker's share is proportional to its weight, AutoMQ's weighted
// distribution; with every weight 1 that is the raw load and mean).

#include "goals/snapshot.hpp"
#include "goals/types.hpp"

namespace moonmq::goals {

/// Optimization band = mean·(1 ± kTargetFraction·AvgDeviation): a triggered
/// goal aims inside this narrower band so that the next pass, which detects
/// with the full band, finds nothing to do (hysteresis; AutoMQ picks the
/// detection and optimization ranges separately for the same reason).
inline constexpr double kTargetFraction = 0.8;

/// Moves of a measured resource that shift less than the trivial amount are
/// not worth a data copy and are never proposed (PARTITION_COUNT moves
/// always shift one whole partition and are exempt). The trivial amount is
/// the smaller of kTrivialFraction of a broker's mean (normalized) and
/// kTrivialPartitionFraction of the mean partition's load (the broker mean
/// divided by the mean partition count per eligible broker). The second
/// term matters with thousands of partitions per broker: at 5,000 per
/// broker, 0.01% of a broker's mean is half the mean partition, and a goal
/// that could move only the heavier half would leave the light ones behind
/// (200 × 1M in bench_goals --skew ended with a broker at 1.66× the mean
/// partition count, every later goal vetoed at NW_IN's lower edge).
inline constexpr double kTrivialFraction = 1e-4;
inline constexpr double kTrivialPartitionFraction = 0.01;

/// Default AvgDeviation of the distribution goals NW_IN, NW_OUT and
/// PARTITION_COUNT with shared storage (cluster_model::shared_storage),
/// instead of 0.2: a move copies nothing there, so chasing a tighter
/// balance costs a ~100 ms handover per partition, not a copy. The
/// hysteresis (kTargetFraction) and the stability rules (cooldown, avoided
/// brokers) keep it from churning down to 0.15: on the seeded skewed
/// clusters of tests/goals/churn.test.cpp (40–80 partitions on 3–5 brokers)
/// 0.1 moved a partition twice in 2 of 30 stationary runs (the band is then
/// narrower than a few partitions' load), 0.15 in none of 150. A configured
/// AvgDeviation wins.
inline constexpr double kSharedStorageAvgDeviation = 0.15;

struct band {
  resource res = resource::nw_in;
  bool utilization = false;  // normalized by capacity (else by weight)
  bool whole = false;        // PARTITION_COUNT by count: limits widened to whole partitions
  double mean = 0.0;         // normalized
  double lower = 0.0;
  double upper = 0.0;
  double raw_mean = 0.0;     // Σ load / eligible brokers (resource units)
  bool idle = true;          // < 2 eligible brokers counts as idle for moving, see optimize
  double eps = 1e-12;        // comparison tolerance (relative 1e-9 of the mean)

  /// 1 / capacity in utilization mode, else 1 / weight.
  double scale(const snapshot& s, broker_index b) const;
  /// Normalized load of `b`.
  double norm(const snapshot& s, broker_index b) const { return s.load(b, res) * scale(s, b); }
  /// Distance of normalized load `n` outside [lower, upper]; 0 inside.
  double outside(double n) const;
  /// Broker `b`'s own limits: [lower, upper], except for PARTITION_COUNT
  /// with unequal weights, where each broker's are widened to hold
  /// floor(w·mean)/w and ceil(w·mean)/w (w its weight): a whole number of
  /// partitions near its share. One shared widening would let a light
  /// broker (w 0.05: ceil(0.05·mean)/0.05 can be 20 partitions per unit of
  /// weight) loosen every other broker's limits.
  double lower_of(const snapshot& s, broker_index b) const;
  double upper_of(const snapshot& s, broker_index b) const;
  /// Distance of `b`'s normalized load `n` outside its own limits; 0 inside.
  double outside_of(const snapshot& s, broker_index b, double n) const;
};

/// Band of `r` over eligible brokers with half-width `deviation`·mean. For
/// PARTITION_COUNT by count with every weight 1 the band always holds
/// floor(mean) and ceil(mean): a narrower one has no whole number of
/// partitions in it (Cruise Control's replica distribution goal rounds its
/// thresholds outward for the same reason); with unequal weights each
/// broker's limits are widened on their own (lower_of, upper_of).
/// Idle when there is no eligible broker, the mean is 0, or the raw mean is
/// below `detect_threshold`. Never divides by zero; all fields finite.
band make_band(const snapshot& s, resource r, double deviation, double detect_threshold);

}  // namespace moonmq::goals

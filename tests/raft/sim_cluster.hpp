#pragma once
// Deterministic simulation of a raft cluster: N raft_core instances, an
// in-memory "disk" per node (persisted_state, changed only by apply_ready as
// a real store would after fsync), and a lossy network that drops,
// duplicates, delays (reorders) and partitions messages. Nodes crash at any
// point of the ready() cycle: before persisting, after a partial persist
// (log but not hard state), or after persisting but before sending. All
// randomness comes from one seed, so a run is replayed exactly from it.
//
// Invariants checked after every tick (Raft paper Figure 3):
//   election safety     at most one leader per term, ever;
//   log matching        two logs with an equal (index, term) agree on every entry up to it;
//   leader completeness an entry seen committed in term T is in the log of every leader of a term > T;
//   state machine safety every node applies the same entry at each index, and
//                        every applied / snapshot-loaded ownership state equals the
//                        reference state at that index.
// Liveness: after the chaos phase the network heals and every node restarts;
// a leader must be elected and a fresh proposal applied on all nodes within
// heal_ticks.

#include <cstdint>
#include <string>
#include <vector>

namespace moonmq::raft::sim {

struct sim_options {
  std::size_t nodes = 3;
  uint64_t seed = 1;
  uint32_t chaos_ticks = 300;   ///< ticks with faults injected
  uint32_t heal_ticks = 300;    ///< budget for the liveness phase
  double p_drop = 0.05;         ///< per delivered message
  double p_dup = 0.03;          ///< per delivered message
  uint32_t max_delay = 3;       ///< extra delivery delay in ticks (uniform 0..max_delay): reordering
  double p_partition = 0.01;    ///< per tick: new random partition
  double p_heal = 0.04;         ///< per tick while partitioned
  double p_crash = 0.004;       ///< per tick per node: crash at tick start
  double p_crash_in_ready = 0.004;  ///< per ready: crash before/partially/after persisting
  double p_restart = 0.08;      ///< per tick per crashed node
  double p_propose = 0.25;      ///< per tick: the (or a stale) leader gets a proposal
  std::size_t max_log_entries = 8;
  uint32_t election_ticks = 10;
  uint32_t heartbeat_ticks = 2;
  bool json_roundtrip = false;  ///< pass every message through its JSON encoding
  bool trace = false;           ///< print every event to stdout
};

struct sim_result {
  bool ok = true;
  std::string failure;  ///< first violated invariant, with the tick
  uint64_t seed = 0;
  uint32_t first_election_ticks = 0;     ///< cold start -> first leader (0 = none in chaos phase)
  std::vector<uint32_t> failover_ticks;  ///< leader crash -> next leader elected
  uint32_t heal_election_ticks = 0;      ///< heal -> a leader with a majority
  uint32_t heal_commit_ticks = 0;        ///< heal -> fresh proposal applied on every node
  uint64_t committed_entries = 0;        ///< highest index applied anywhere
  uint64_t snapshots_installed = 0;
  uint64_t crashes = 0;
  uint64_t messages = 0;
};

/// Runs one simulated cluster to completion (or to the first violation).
sim_result run_simulation(const sim_options& opts);

/// Reads an unsigned integer from environment variable `name`; `fallback` if unset or invalid.
uint64_t env_u64(const char* name, uint64_t fallback);

}  // namespace moonmq::raft::sim

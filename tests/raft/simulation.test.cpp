// Seeded simulation runs of 3- and 5-node clusters (see sim_cluster.hpp).
// Replay one seed with trace output:
//   MOONMQ_RAFT_SEED=123 MOONMQ_RAFT_NODES=5 MOONMQ_RAFT_TRACE=1 build/<dir>/tests/raft_sim_tests
// (MOONMQ_RAFT_SEEDS=N changes how many seeds each test case runs.)

#include <catch2/catch.hpp>

#include <cstdio>

#include "sim_cluster.hpp"

using namespace moonmq::raft::sim;

namespace {

struct range_summary {
  uint64_t runs = 0, failures = 0, snapshots = 0, crashes = 0, committed = 0, failovers = 0;
};

range_summary run_range(std::size_t nodes, uint64_t first_seed, uint64_t count) {
  range_summary s;
  uint64_t only = env_u64("MOONMQ_RAFT_SEED", UINT64_MAX);
  uint64_t only_nodes = env_u64("MOONMQ_RAFT_NODES", nodes);
  if (only != UINT64_MAX) {
    if (only_nodes != nodes)
      return s;
    first_seed = only;
    count = 1;
  }
  for (uint64_t seed = first_seed; seed < first_seed + count; ++seed) {
    sim_options o;
    o.nodes = nodes;
    o.seed = seed;
    o.json_roundtrip = seed % 32 == 0;
    if (seed % 4 == 1) {  // crash-heavy profile: many restarts, many crashes inside the ready cycle
      o.p_crash = 0.02;
      o.p_crash_in_ready = 0.03;
      o.p_restart = 0.3;
    } else if (seed % 4 == 2) {  // lossy profile
      o.p_drop = 0.2;
      o.p_dup = 0.1;
      o.max_delay = 6;
    }
    o.trace = only != UINT64_MAX && env_u64("MOONMQ_RAFT_TRACE", 0) != 0;
    sim_result r = run_simulation(o);
    ++s.runs;
    s.snapshots += r.snapshots_installed;
    s.crashes += r.crashes;
    s.committed += r.committed_entries;
    s.failovers += r.failover_ticks.size();
    if (!r.ok) {
      ++s.failures;
      if (s.failures <= 5)
        std::printf("raft simulation FAILED nodes=%zu seed=%llu: %s\n  replay: MOONMQ_RAFT_SEED=%llu "
                    "MOONMQ_RAFT_NODES=%zu MOONMQ_RAFT_TRACE=1 %s\n",
                    nodes, static_cast<unsigned long long>(seed), r.failure.c_str(),
                    static_cast<unsigned long long>(seed), nodes, "raft_sim_tests");
    }
  }
  return s;
}

}  // namespace

TEST_CASE("simulation: 3 nodes keep every invariant and recover after healing", "[raft][sim]") {
  range_summary s = run_range(3, 0, moonmq::raft::sim::env_u64("MOONMQ_RAFT_SEEDS", 1200));
  INFO("runs=" << s.runs << " failures=" << s.failures);
  CHECK(s.failures == 0);
  if (s.runs > 100) {  // the faults really happened
    CHECK(s.snapshots > 0);
    CHECK(s.crashes > 0);
    CHECK(s.failovers > 0);
    CHECK(s.committed > s.runs * 5);
  }
}

TEST_CASE("simulation: 5 nodes keep every invariant and recover after healing", "[raft][sim]") {
  range_summary s = run_range(5, 100000, moonmq::raft::sim::env_u64("MOONMQ_RAFT_SEEDS", 800));
  INFO("runs=" << s.runs << " failures=" << s.failures);
  CHECK(s.failures == 0);
  if (s.runs > 100) {
    CHECK(s.snapshots > 0);
    CHECK(s.crashes > 0);
    CHECK(s.failovers > 0);
    CHECK(s.committed > s.runs * 5);
  }
}

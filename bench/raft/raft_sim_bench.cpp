// raft_sim_bench: runs seeded raft cluster simulations (3 and 5 nodes, the
// fault mix of tests/raft/simulation.test.cpp) and prints throughput in
// runs/s plus leader-election times in logical ticks
// (election timeout 10..19 ticks, heartbeat 2 ticks).
//
//   raft_sim_bench [--seeds N] [--first S] [--nodes 3|5|0]   (0 = both, default)
//   raft_sim_bench --replay S --nodes 3                      (one seed with full trace)
// Exit status 1 when any run violates an invariant (its seed is printed).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sim_cluster.hpp"

using namespace moonmq::raft::sim;

namespace {

void print_stats(const char* name, std::vector<uint32_t> v) {
  if (v.empty()) {
    std::printf("  %-28s n=0\n", name);
    return;
  }
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (auto x : v)
    sum += x;
  auto pct = [&](double p) { return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))]; };
  std::printf("  %-28s n=%zu mean=%.1f p50=%u p90=%u p99=%u max=%u\n", name, v.size(), sum / static_cast<double>(v.size()),
              pct(0.5), pct(0.9), pct(0.99), v.back());
}

sim_options profile(std::size_t nodes, uint64_t seed) {
  sim_options o;
  o.nodes = nodes;
  o.seed = seed;
  if (seed % 4 == 1) {
    o.p_crash = 0.02;
    o.p_crash_in_ready = 0.03;
    o.p_restart = 0.3;
  } else if (seed % 4 == 2) {
    o.p_drop = 0.2;
    o.p_dup = 0.1;
    o.max_delay = 6;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seeds = 10000, first = 0, replay = UINT64_MAX;
  int nodes = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    uint64_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (a == "--seeds")
      seeds = v;
    else if (a == "--first")
      first = v;
    else if (a == "--nodes")
      nodes = static_cast<int>(v);
    else if (a == "--replay")
      replay = v;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (replay != UINT64_MAX) {
    sim_options o = profile(nodes == 5 ? 5 : 3, replay);
    o.trace = true;
    sim_result r = run_simulation(o);
    std::printf("seed=%llu nodes=%zu %s %s\n", static_cast<unsigned long long>(replay), o.nodes,
                r.ok ? "ok" : "FAILED", r.failure.c_str());
    return r.ok ? 0 : 1;
  }

  std::vector<uint32_t> first_election, failover, heal_election, heal_commit;
  uint64_t failures = 0, runs = 0, messages = 0, committed = 0, snapshots = 0, crashes = 0;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t s = first; s < first + seeds; ++s) {
    std::size_t n = nodes == 0 ? (s % 2 ? 5 : 3) : static_cast<std::size_t>(nodes);
    sim_result r = run_simulation(profile(n, s));
    ++runs;
    messages += r.messages;
    committed += r.committed_entries;
    snapshots += r.snapshots_installed;
    crashes += r.crashes;
    if (!r.ok) {
      ++failures;
      std::printf("FAILED seed=%llu nodes=%zu: %s (replay: raft_sim_bench --replay %llu --nodes %zu)\n",
                  static_cast<unsigned long long>(s), n, r.failure.c_str(), static_cast<unsigned long long>(s), n);
      continue;
    }
    if (r.first_election_ticks)
      first_election.push_back(r.first_election_ticks);
    failover.insert(failover.end(), r.failover_ticks.begin(), r.failover_ticks.end());
    heal_election.push_back(r.heal_election_ticks);
    heal_commit.push_back(r.heal_commit_ticks);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("raft simulation: %llu runs (%s nodes) in %.2f s = %.0f runs/s, failures=%llu\n",
              static_cast<unsigned long long>(runs), nodes == 0 ? "3+5" : std::to_string(nodes).c_str(), secs,
              static_cast<double>(runs) / secs, static_cast<unsigned long long>(failures));
  std::printf("  messages=%llu committed_entries=%llu snapshots_installed=%llu crashes=%llu\n",
              static_cast<unsigned long long>(messages), static_cast<unsigned long long>(committed),
              static_cast<unsigned long long>(snapshots), static_cast<unsigned long long>(crashes));
  std::printf("leader election, ticks:\n");
  print_stats("cold start -> first leader", first_election);
  print_stats("leader crash -> next leader", failover);
  print_stats("heal -> stable leader", heal_election);
  print_stats("heal -> proposal applied", heal_commit);
  return failures == 0 ? 0 : 1;
}

// raft_failover_bench: controller failover and commit latency of a real
// 3-broker moonmq cluster with Cluster.Raft over HTTP on loopback.
//
//   raft_failover_bench [--kills 50] [--proposals 200] [--election-ms 1000]
//                       [--heartbeat-ms 100] [--node PATH] [--dir D]
//
// Failover: `--kills` times, SIGKILL the controller and time until the other
// two agree on a new leader (polling /admin/cluster every 5 ms), then restart
// the killed broker and wait until all three agree again. Printed as p50 /
// p99 / max against 2 x ElectionTimeoutMs + HeartbeatMs, the worst case of a
// randomized election timeout in [T, 2T) plus one heartbeat of detection
// slack (Raft paper §5.2, §9.3).
//
// Commit latency: `--proposals` owner changes POSTed one at a time to the
// leader's /cluster/raft/propose, which answers once the entry is fsynced on
// a majority, committed and applied on the leader (p50 / p99 / max).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/latency_stats.hpp"
#include "bench/common/node_options.hpp"
#include "bench/common/raft_cluster.hpp"
#include "net/blocking_client.hpp"

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;
using moonmq::bench::ms_since;
using moonmq::bench::percentile;
using moonmq::bench::print_stats;

const char* usage =
  "raft_failover_bench [--kills N] [--proposals N] [--election-ms MS] [--heartbeat-ms MS] [--node PATH] [--dir D]\n"
  "  Times controller failover over N leader kills and the commit latency of owner changes\n"
  "  on a local 3-broker cluster with Cluster.Raft.\n";

struct options : moonmq::bench::node_options {
  int kills = 50;
  int proposals = 200;
  int election_ms = 1000;
  int heartbeat_ms = 100;
};

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (int rc = moonmq::bench::parse_node_options(argc, argv, usage, o,
                                                 {{"--kills", &o.kills},
                                                  {"--proposals", &o.proposals},
                                                  {"--election-ms", &o.election_ms},
                                                  {"--heartbeat-ms", &o.heartbeat_ms}}))
    return rc;
  o.dir += "/raft-failover-bench";
  std::filesystem::remove_all(o.dir);
  moonmq::bench::raft_cluster c{o.node, o.dir,
                                {"Cluster.Raft.ElectionTimeoutMs=" + std::to_string(o.election_ms),
                                 "Cluster.Raft.HeartbeatMs=" + std::to_string(o.heartbeat_ms)}};
  auto bound = std::chrono::milliseconds(10 * o.election_ms);
  try {
    c.start_all();
    auto t0 = clock_type::now();
    auto leader = c.agreed(0, bound);
    if (!leader) {
      std::fprintf(stderr, "no controller elected within %lld ms\n", static_cast<long long>(bound.count()));
      return 1;
    }
    std::printf("raft_failover_bench: 3 brokers, ElectionTimeoutMs=%d HeartbeatMs=%d\n", o.election_ms,
                o.heartbeat_ms);
    std::printf("first controller %s at term %lld after %.0f ms (from the last broker ready)\n",
                c.ids[leader->first].c_str(), static_cast<long long>(leader->second), ms_since(t0));

    // Commit latency of owner changes through the leader.
    std::vector<double> commit_ms;
    auto leader_port = c.cluster_ports[leader->first];
    for (int n = 0; n < o.proposals; ++n) {
      json body{{"topic", "bench"}, {"partition", n % 64}, {"owner", c.ids[static_cast<size_t>(n) % c.ids.size()]}};
      auto t = clock_type::now();
      auto r = moonmq::transport::http_call(leader_port, "POST", "/cluster/raft/propose", body.dump(),
                                            {{"X-Cluster-Token", moonmq::bench::raft_cluster::token}}, 10s);
      if (r.status != 200) {
        std::fprintf(stderr, "proposal %d: HTTP %d %s\n", n, r.status, r.body.c_str());
        return 1;
      }
      commit_ms.push_back(ms_since(t));
    }
    print_stats("commit latency (owner entry)", commit_ms);

    // Failover over `kills` leader kills.
    std::vector<double> failover_ms;
    for (int k = 0; k < o.kills; ++k) {
      auto killed = leader->first;
      c.stop(killed, SIGKILL);
      auto t = clock_type::now();
      auto next = c.agreed(leader->second, bound);
      if (!next) {
        std::fprintf(stderr, "kill %d: no new controller within %lld ms\n", k, static_cast<long long>(bound.count()));
        return 1;
      }
      failover_ms.push_back(ms_since(t));
      c.start(killed);
      leader = c.agreed(next->second - 1, bound);
      if (!leader) {
        std::fprintf(stderr, "kill %d: %s did not rejoin\n", k, c.ids[killed].c_str());
        return 1;
      }
    }
    print_stats("failover (leader killed)", failover_ms);
    std::printf("reference: 2 x ElectionTimeoutMs + HeartbeatMs = %d ms; p99 within it: %s\n",
                2 * o.election_ms + o.heartbeat_ms,
                percentile(failover_ms, 0.99) <= 2 * o.election_ms + o.heartbeat_ms ? "yes" : "no");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "raft_failover_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

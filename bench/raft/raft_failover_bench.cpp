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

#include "bench/common/node_child.hpp"
#include "bench/common/node_options.hpp"
#include "tests/support/ports.hpp"
#include "transport/blocking_client.hpp"

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

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

constexpr const char* token = "bench";

struct cluster {
  std::vector<std::string> ids{"b1", "b2", "b3"};
  std::vector<uint16_t> cluster_ports;
  std::vector<std::unique_ptr<moonmq::bench::node_child>> nodes;
  std::vector<std::string> common;
  options o;

  void start(size_t i) {
    json peers = json::array();
    for (size_t j = 0; j < ids.size(); ++j)
      if (j != i)
        peers.push_back({{"Id", ids[j]}, {"Address", "127.0.0.1:" + std::to_string(cluster_ports[j])}});
    std::vector<std::string> sets{"Cluster.BrokerId=" + ids[i], "Cluster.Port=" + std::to_string(cluster_ports[i]),
                                  std::string("Cluster.Token=") + token, "Cluster.Peers=" + peers.dump(),
                                  "LogLevel=info"};
    sets.insert(sets.end(), common.begin(), common.end());
    // A restart must not find the previous run's node.ready line.
    std::filesystem::remove(o.dir + "/" + ids[i] + "/node.log");
    nodes[i] = std::make_unique<moonmq::bench::node_child>(o.node, o.dir + "/" + ids[i], sets);
  }

  /// (term, leader, role) as broker i reports it; nullopt when it does not answer.
  std::optional<std::tuple<int64_t, std::string, std::string>> belief(size_t i) {
    if (!nodes[i])
      return std::nullopt;
    auto r = moonmq::transport::http_call(nodes[i]->admin_port, "GET", "/admin/cluster", "", {}, 2s);
    auto j = json::parse(r.body, nullptr, false);
    if (r.status != 200 || !j.is_object() || !j.contains("raft") || !j["controller"]["id"].is_string())
      return std::nullopt;
    return std::make_tuple(j["controller"].value("term", int64_t{0}), j["controller"]["id"].get<std::string>(),
                           j["raft"].value("role", std::string{}));
  }

  /// Waits until every running broker names the same leader above `above`;
  /// (leader index, term) or nullopt after `timeout`.
  std::optional<std::pair<size_t, int64_t>> agreed(int64_t above, std::chrono::milliseconds timeout) {
    auto deadline = clock_type::now() + timeout;
    while (clock_type::now() < deadline) {
      std::optional<std::pair<std::string, int64_t>> first;
      bool agree = true;
      for (size_t i = 0; i < nodes.size() && agree; ++i) {
        if (!nodes[i])
          continue;
        auto b = belief(i);
        agree = b && std::get<0>(*b) > above
                && (!first || (first->first == std::get<1>(*b) && first->second == std::get<0>(*b)));
        if (agree && !first)
          first = std::make_pair(std::get<1>(*b), std::get<0>(*b));
      }
      if (agree && first)
        for (size_t i = 0; i < nodes.size(); ++i)
          if (nodes[i] && ids[i] == first->first) {
            auto b = belief(i);
            if (b && std::get<2>(*b) == "leader")
              return std::make_pair(i, first->second);
          }
      std::this_thread::sleep_for(5ms);
    }
    return std::nullopt;
  }
};

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  auto at = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(at, v.size() - 1)];
}

void print_stats(const char* what, const std::vector<double>& ms) {
  std::printf("%-28s n=%zu p50=%.1f ms p99=%.1f ms max=%.1f ms\n", what, ms.size(), percentile(ms, 0.5),
              percentile(ms, 0.99), ms.empty() ? 0.0 : *std::max_element(ms.begin(), ms.end()));
}

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

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
  cluster c;
  c.o = o;
  c.common = {"Cluster.Raft.Enabled=true", "Cluster.Raft.ElectionTimeoutMs=" + std::to_string(o.election_ms),
              "Cluster.Raft.HeartbeatMs=" + std::to_string(o.heartbeat_ms)};
  for (size_t i = 0; i < c.ids.size(); ++i)
    c.cluster_ports.push_back(moonmq::test::reserve_port());
  c.nodes.resize(c.ids.size());
  auto bound = std::chrono::milliseconds(10 * o.election_ms);
  try {
    for (size_t i = 0; i < c.ids.size(); ++i)
      c.start(i);
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
                                            {{"X-Cluster-Token", token}}, 10s);
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
      c.nodes[killed]->stop(SIGKILL);
      c.nodes[killed].reset();
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

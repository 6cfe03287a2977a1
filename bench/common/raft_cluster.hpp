#pragma once
// A cluster of moonmq-node brokers b1..bN with Cluster.Raft on loopback for
// benchmarks: every port (client, admin, cluster) claimed below the
// ephemeral range (tests/support/ports.hpp), each broker's data and node.log
// under <dir>/<id>, each broker stopped by its own pid (node_child).

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/node_child.hpp"
#include "tests/support/ports.hpp"
#include "net/blocking_client.hpp"

namespace moonmq::bench {

/// What one broker's GET /admin/cluster says about the controller.
struct raft_belief {
  int64_t term = 0;    ///< the Raft term it is in
  std::string leader;  ///< the leader it knows
  std::string role;    ///< its own role: leader, follower, candidate
};

class raft_cluster {
public:
  /// The cluster token every broker is given (X-Cluster-Token).
  static constexpr const char* token = "bench";

  /// Brokers b1..b`n`, none started: `node` is the moonmq-node binary,
  /// `common` extra `--set` overrides given to every broker (say
  /// Cluster.Raft.HeartbeatMs=100). Claims 3 ports per broker.
  raft_cluster(std::string node, std::string dir, std::vector<std::string> common, size_t n = 3)
      : node_(std::move(node)), dir_(std::move(dir)), common_(std::move(common)) {
    for (size_t i = 0; i < n; ++i) {
      ids.push_back("b" + std::to_string(i + 1));
      cluster_ports.push_back(moonmq::test::reserve_port());
      client_ports.push_back(moonmq::test::reserve_port());
      admin_ports.push_back(moonmq::test::reserve_port());
    }
    nodes.resize(n);
  }

  /// Starts broker `i` (after a stop: the same ports and data), waiting for
  /// its node.ready line (node_child throws after 30 s).
  void start(size_t i) {
    nlohmann::json peers = nlohmann::json::array();
    for (size_t j = 0; j < ids.size(); ++j)
      if (j != i)
        peers.push_back({{"Id", ids[j]},
                         {"Address", "127.0.0.1:" + std::to_string(cluster_ports[j])},
                         {"ClientAddress", "127.0.0.1:" + std::to_string(client_ports[j])}});
    std::vector<std::string> sets{"Cluster.BrokerId=" + ids[i],
                                  "Cluster.Port=" + std::to_string(cluster_ports[i]),
                                  "Port=" + std::to_string(client_ports[i]),
                                  "Admin.Port=" + std::to_string(admin_ports[i]),
                                  std::string("Cluster.Token=") + token,
                                  "Cluster.Peers=" + peers.dump(),
                                  "Cluster.Raft.Enabled=true",
                                  "Cluster.TopicPlacement=proposer",  // topics start where the bench creates them
                                  "LogLevel=info"};
    sets.insert(sets.end(), common_.begin(), common_.end());
    // A restart must not find the previous run's node.ready line.
    std::filesystem::remove(log_path(i));
    nodes[i] = std::make_unique<node_child>(node_, dir_ + "/" + ids[i], sets);
  }

  void start_all() {
    for (size_t i = 0; i < ids.size(); ++i)
      start(i);
  }

  /// Stops broker `i` with `sig` (SIGTERM, or SIGKILL for a crash) and reaps it.
  void stop(size_t i, int sig = SIGTERM) {
    if (nodes[i])
      nodes[i]->stop(sig);
    nodes[i].reset();
  }

  std::string log_path(size_t i) const { return dir_ + "/" + ids[i] + "/node.log"; }

  /// What broker `i` believes; nullopt when it is down or does not answer.
  std::optional<raft_belief> belief(size_t i) const {
    if (!nodes[i])
      return std::nullopt;
    auto r = moonmq::transport::http_call(admin_ports[i], "GET", "/admin/cluster", "", {}, std::chrono::seconds(2));
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200 || !j.is_object() || !j.contains("raft") || !j["controller"]["id"].is_string())
      return std::nullopt;
    return raft_belief{j["controller"].value("term", int64_t{0}), j["controller"]["id"].get<std::string>(),
                       j["raft"].value("role", std::string{})};
  }

  /// Waits (polling every 5 ms) until every running broker names the same
  /// leader at a term above `above` and that leader says it leads: (leader
  /// index, term), or nullopt after `timeout`.
  std::optional<std::pair<size_t, int64_t>> agreed(int64_t above, std::chrono::milliseconds timeout) const {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::optional<raft_belief> first;
      bool agree = true;
      for (size_t i = 0; i < nodes.size() && agree; ++i) {
        if (!nodes[i])
          continue;
        auto b = belief(i);
        agree = b && b->term > above && (!first || (first->leader == b->leader && first->term == b->term));
        if (agree && !first)
          first = b;
      }
      if (agree && first)
        for (size_t i = 0; i < nodes.size(); ++i)
          if (nodes[i] && ids[i] == first->leader) {
            auto b = belief(i);
            if (b && b->role == "leader")
              return std::make_pair(i, first->term);
          }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return std::nullopt;
  }

  std::vector<std::string> ids;  ///< b1..bN
  std::vector<uint16_t> cluster_ports, client_ports, admin_ports;
  std::vector<std::unique_ptr<node_child>> nodes;  ///< null while a broker is down

private:
  std::string node_;
  std::string dir_;
  std::vector<std::string> common_;
};

}  // namespace moonmq::bench

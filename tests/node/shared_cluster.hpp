#pragma once
// Shared by the shared-storage scenarios on three brokers sharing one
// directory (node_shared.test.cpp, node_shared_move.test.cpp): the
// brokers' settings and where a partition's files are.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/node/metadata_cluster.hpp"

namespace moonmq::test::shared_storage {

/// Raft brokers on one shared directory (Storage.SharedDir). SessionTimeoutMs
/// must be at least max(ElectionTimeoutMs, LeaseMs) + LeaseMs + LeaseMarginMs
/// (docs/shared-storage.md "The lease"): 1000 + 600 + 100 here, so a
/// failover takes a few seconds.
inline std::vector<std::string> shared_config(const temp_dir& shared, int session_timeout_ms = 2000) {
  return meta::raft_config({"Storage.SharedDir=" + shared.path(),
                            "Cluster.Raft.SessionTimeoutMs=" + std::to_string(session_timeout_ms),
                            "Cluster.Raft.LeaseMs=600", "Cluster.Raft.LeaseMarginMs=100"});
}

/// The partition's directory under `shared` (`<topic>-<p>~<created_at>`), or "".
inline std::string partition_root(const std::string& shared, const std::string& name) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(shared, ec))
    if (e.path().filename().string().rfind(name + "~", 0) == 0)
      return e.path().string();
  return {};
}

/// The takeover records of a partition root (their file names), by epoch.
inline std::vector<std::string> epochs_of(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root + "/epochs", ec))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace moonmq::test::shared_storage

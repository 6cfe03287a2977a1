#pragma once
// Starts real moonmq-node processes on loopback with ephemeral ports and a
// scratch data dir, and finds the ports they bound from their log.

#include <optional>
#include <string>
#include <vector>

#include "tests/support/process.hpp"

namespace moonmq::test {

class node_process {
public:
  /// Starts moonmq-node with `--set` overrides (Admin.Port=0, Port=0,
  /// DataDir=<dir>/data and Kafka.Enabled=false unless given) plus `extra_args`.
  node_process(const temp_dir& dir, std::vector<std::string> overrides = {},
               std::vector<std::string> extra_args = {});

  /// Waits for node.ready and returns the admin port (nullopt on timeout or exit).
  /// The client port of the same line is then available from client_port().
  std::optional<uint16_t> wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(15));

  /// The client API port from node.ready (nullopt before wait_ready succeeded).
  std::optional<uint16_t> client_port() const { return client_port_; }

  child_process& process() { return proc_; }
  std::string log() const { return read_text(proc_.log_file()); }

private:
  child_process proc_;
  std::optional<uint16_t> client_port_;
};

/// Runs moonmq-node to completion with `args`; returns the exit code and the
/// combined output.
std::pair<int, std::string> run_node(const temp_dir& dir, const std::vector<std::string>& args);

}  // namespace moonmq::test

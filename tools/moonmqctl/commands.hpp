#pragma once
// moonmqctl subcommands. Each returns the process exit code: 0 success,
// 1 a request failed, 2 bad usage.

#include <cstdint>
#include <string>

namespace moonmq::ctl {

struct endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
};

struct produce_options {
  std::string topic;
  std::string key_separator;  ///< "" = no keys; else split each line at the first separator
  int partition = -1;         ///< -1 = by key / sticky
  int batch = 500;            ///< lines per request at most
  std::string acks = "leader";
  bool print_offsets = false;  ///< print "partition<TAB>offset<TAB>line" per acknowledged record
};

struct consume_options {
  std::string topic;
  int partition = -1;       ///< -1 = every partition (without a group)
  int64_t offset = -1;      ///< start offset; -1 = log-start (or the committed offset with a group)
  std::string group;        ///< consumer group: committed offsets, assignment
  bool follow = false;      ///< keep polling at the log end
  int64_t count = -1;       ///< stop after this many records
  std::string format = "value";  ///< value | json | kv (key<TAB>value)
  int idle_exit_ms = 0;     ///< with --follow: exit after this long without records (0 = never)
};

int produce(const endpoint& ep, const produce_options& o);
int consume(const endpoint& ep, const consume_options& o);

}  // namespace moonmq::ctl

#pragma once
// A cluster of real moonmq-node processes on loopback for the partition-move
// scenarios (tests/node/node_move.test.cpp): fixed cluster and client ports
// per broker (peers must know them before anyone starts, and a restarted
// broker comes back on the same ones), one scratch data dir per broker that
// survives restarts, plus the client and admin calls the scenarios make.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/node/node_harness.hpp"
#include "net/blocking_client.hpp"

namespace moonmq::test::move {

using nlohmann::json;

/// The cluster token every broker of the fixture shares.
inline constexpr const char* cluster_token = "tok";

/// The answer of one request: status, parsed body (discarded when not JSON)
/// and the raw text for failure messages.
struct answer {
  int status = 0;
  json body;
  std::string raw;
};

/// One request on a fresh connection to 127.0.0.1:`port` (30 s bound).
answer call(uint16_t port, const std::string& method, const std::string& target, const std::string& body = {},
            const transport::header_list& headers = {});

/// The same with the cluster token (and `extra` headers) on a cluster port.
answer cluster_call(uint16_t port, const std::string& method, const std::string& target, const std::string& body = {},
                    transport::header_list extra = {});

class move_cluster {
public:
  /// Brokers `ids` with free loopback ports; none is started. `common` are
  /// `--set` overrides given to every broker (PeerTimeout=2 unless given).
  explicit move_cluster(std::vector<std::string> ids, std::vector<std::string> common = {});
  ~move_cluster();

  /// Starts broker `i` with its own `extra` overrides (kept for restarts) and
  /// waits for node.ready.
  void start(size_t i, std::vector<std::string> extra = {});
  /// Makes broker `i` one that joins at runtime (docs/metadata.md
  /// "Joining"): the others do not list it among their peers, and it starts
  /// with the others as its peers and Cluster.Raft.Voters. Before start(i).
  void joins_at_runtime(size_t i) { brokers_[i].joiner = true; }
  /// SIGKILL, then reaps it.
  void kill(size_t i);
  /// SIGTERM, then REQUIREs a clean exit (0) within 15 s.
  void stop(size_t i);
  /// Sends `sig` to broker `i` (SIGSTOP / SIGCONT freeze and thaw it).
  void signal(size_t i, int sig);
  /// After SIGSTOP: waits (at most `timeout`) until every thread of broker
  /// `i` is stopped, as /proc/<pid>/task/*/stat shows it: the signal takes
  /// effect on a thread when the kernel next schedules it, which on a
  /// loaded machine can be milliseconds after kill(2) returned. Whether
  /// they all are.
  bool wait_stopped(size_t i, std::chrono::milliseconds timeout);
  /// Starts broker `i` again on the same data dir, ports and overrides.
  void restart(size_t i);
  /// start() in two halves, to have several brokers start at once: launch
  /// the process, then wait for its node.ready.
  void launch(size_t i, std::vector<std::string> extra = {});
  void wait_ready(size_t i);

  uint16_t client(size_t i) const { return brokers_[i].client_port; }
  uint16_t cluster_port(size_t i) const { return brokers_[i].cluster_port; }
  uint16_t admin(size_t i) const { return brokers_[i].admin_port; }
  /// Broker i's Kafka port (reserved; bound only with Kafka.Enabled=true).
  uint16_t kafka(size_t i) const { return brokers_[i].kafka_port; }
  const std::string& id(size_t i) const { return brokers_[i].id; }
  std::string url(size_t i) const { return "http://127.0.0.1:" + std::to_string(client(i)); }
  const std::string& data_dir(size_t i) const { return brokers_[i].data_dir; }
  /// Every log of broker `i` (all its starts), for failure messages.
  std::string logs(size_t i) const;
  /// Every broker's logs, labelled.
  std::string all_logs() const;

private:
  struct broker {
    std::string id;
    uint16_t cluster_port = 0;
    uint16_t client_port = 0;
    uint16_t admin_port = 0;
    uint16_t kafka_port = 0;  ///< the Kafka listener; peers name it as KafkaAddress
    std::unique_ptr<temp_dir> dir;
    std::string data_dir;
    std::vector<std::string> extra;
    bool joiner = false;  ///< not a voter, not in the others' Peers
    std::vector<std::unique_ptr<node_process>> runs;  ///< every start; the last one may be running
  };
  std::vector<broker> brokers_;
  std::vector<std::string> common_;
};

/// `--set` overrides of an Autobalance section for one broker: the balance
/// loop on, a pass every `interval_s` seconds, windows of `window` samples
/// trusted from `min_valid` (a partition counts from its second report, as
/// its first only primes the byte counters); the slow-broker rule off
/// (SlowBrokerMinLatencyMs at its maximum).
std::vector<std::string> autobalance(bool dry_run, int interval_s = 1, int window = 3, int min_valid = 1);

/// What one broker believes about the controller (GET /admin/cluster with
/// Cluster.Raft): term, leader, role.
struct belief {
  int64_t term = 0;
  std::string leader;
  std::string role;
};
std::optional<belief> belief_of(move_cluster& c, size_t i);

/// Polls brokers `live` until they name the same leader (one of them, which
/// says it leads) at a term above `above`: (leader index, term), or nullopt
/// after `timeout`.
std::optional<std::pair<size_t, int64_t>> agreed_leader(move_cluster& c, const std::vector<size_t>& live,
                                                        int64_t above, std::chrono::milliseconds timeout);

/// One record as a producer sent it.
struct sent_record {
  std::string key;
  std::string value;
};

/// Produces `count` records to topic/partition with values of about
/// `value_bytes` bytes in requests of `per_request` records (acks=leader);
/// keys "<prefix>-<n>". Returns offset → record.
std::map<int64_t, sent_record> fill(uint16_t client, const std::string& topic, int partition, int count,
                                    int per_request, size_t value_bytes, const std::string& prefix = "fill");

/// A whole partition read through fetch pages from `from` (absent = the log
/// start). REQUIRE 200 for every page and contiguous offsets.
struct partition_read {
  std::map<int64_t, json> records;  ///< offset → record as fetched
  int64_t log_start = -1;
  int64_t log_end = -1;
};
partition_read read_partition(uint16_t client, const std::string& topic, int partition);

/// Creates a topic on one broker (201 or 200 required).
void create_topic(uint16_t client, const std::string& topic, int partitions, const json& config = nullptr);

/// POST /admin/reassignments for one partition; REQUIRE 202 and returns the body.
/// POST /admin/reassignments of one move (with the plan's "reason" when not empty); the 202 answer.
json submit_move(uint16_t admin, const std::string& topic, int partition, const std::string& to,
                 const std::string& reason = {});

/// The rows of GET /admin/reassignments (REQUIRE 200).
json reassignments(uint16_t admin);

/// The newest row of topic/partition run by `from` (by started_ms, then
/// move_id); null when none.
json latest_row(uint16_t admin, const std::string& topic, int partition, const std::string& from);

/// Polls GET /admin/reassignments every 50 ms until the newest row of
/// topic/partition from `from` is in one of `states`; returns it (null on
/// timeout). Also returns early (with the row) once it is terminal.
json wait_move(uint16_t admin, const std::string& topic, int partition, const std::string& from,
               const std::set<std::string>& states, std::chrono::milliseconds timeout);

/// Terminal journal states.
bool is_terminal(const std::string& state);

/// A producer thread: requests of `per_request` small records to one
/// partition through one broker's client API (acks=leader), no retries.
/// Every acknowledged record is kept with its offset.
class producer {
public:
  producer(uint16_t client, std::string topic, int partition, int per_request, std::string prefix);
  ~producer();
  void stop();
  std::map<int64_t, sent_record> acked() const;
  int ok_requests() const { return ok_.load(); }
  int failed_requests() const { return failed_.load(); }
  /// Offsets acknowledged twice (always a bug).
  std::vector<int64_t> double_acks() const;
  std::vector<std::string> errors() const;

private:
  void run();
  uint16_t client_;
  std::string topic_;
  int partition_;
  int per_request_;
  std::string prefix_;
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::atomic<int> failed_{0};
  mutable std::mutex mu_;
  std::map<int64_t, sent_record> acked_;
  std::vector<int64_t> double_acks_;
  std::vector<std::string> errors_;
  std::unique_ptr<std::thread> thread_;
};

}  // namespace moonmq::test::move

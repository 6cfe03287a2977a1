#pragma once
// moonmq-demo: drives a running cluster with skewed traffic and a consumer
// group while partitions move, then verifies every acknowledged record.
//
// Threads: one per producer, one consumer per topic, and the main thread
// (monitor: cluster snapshots, the live summary, the balanced check). They
// share the `run` below: the ledger of acknowledged records, what each
// consumer delivered, the owner of every partition as last seen.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/blocking_client.hpp"

namespace moonmq::demo {

using json = nlohmann::json;

/// One broker as given on the command line: `id=client_host:port/admin_host:port`.
struct broker_endpoint {
  std::string id;
  std::string client_host;
  uint16_t client_port = 0;
  std::string admin_host;
  uint16_t admin_port = 0;
};

/// Parses `b1=127.0.0.1:8080/127.0.0.1:9644,b2=...`; nullopt with `why` set when malformed.
std::optional<std::vector<broker_endpoint>> parse_brokers(const std::string& text, std::string& why);

struct options {
  std::vector<broker_endpoint> brokers;  ///< the first one is where topics are created
  std::string admin_token;               ///< Server.Admin.Token (never printed)
  int duration_seconds = 30;             ///< traffic runs at least this long
  int until_balanced_seconds = 300;      ///< then stop waiting for balance (whole live phase)
  int topics = 3;
  int partitions = 4;
  std::string topic_prefix = "demo";
  double rate = 2000;      ///< records/s over all producers; 0 = as fast as acks come
  int producers = 2;       ///< producer threads
  int batch = 20;          ///< records per produce request
  int value_bytes = 200;   ///< bytes per record value (at least the header)
  int hot_partitions = 3;  ///< partitions that get `hot_share` of the records
  double hot_share = 0.8;
  std::string group = "moonmq-demo";
  std::string balance = "auto";  ///< auto: the balance loop moves; manual: the demo submits a plan; none
  int manual_after_seconds = 5;  ///< manual: when the plan is submitted
  int summary_ms = 2000;         ///< live summary period
  int drain_seconds = 60;        ///< consumers' time to reach the log end after producers stop
  bool redraw = true;            ///< redraw the live summary in place on a terminal
  /// Fraction of duration_seconds after which one broker is killed with
  /// SIGKILL (shared storage: its partitions fail over); 0 = none.
  double kill_broker_at = 0;
  std::map<std::string, int> broker_pids;  ///< broker id → pid of its moonmq-node, for the kill
};

/// (topic, partition), ordered.
struct tp_key {
  std::string topic;
  int32_t partition = 0;
  bool operator<(const tp_key& o) const { return topic != o.topic ? topic < o.topic : partition < o.partition; }
  std::string str() const { return topic + "/" + std::to_string(partition); }
};

/// The value of record `seq` of a partition: "<run>|<topic>|<p>|<seq>|" then
/// filler derived from seq up to `bytes`. Unique per run, partition and seq,
/// so a record at a wrong offset or written twice is recognised.
std::string make_value(const std::string& run, const tp_key& tp, uint64_t seq, int bytes);

/// The seq of a value made by make_value for this run and partition, or
/// nullopt when the value is not one (another run, garbled).
std::optional<uint64_t> parse_value(const std::string& value, const std::string& run, const tp_key& tp, int bytes);

/// Everything the producers acknowledged for one partition.
struct partition_ledger {
  std::mutex mu;
  std::map<int64_t, uint64_t> acked;  ///< offset → seq
  std::vector<int64_t> double_acks;   ///< offsets acknowledged twice (a broker bug)
  std::atomic<uint64_t> next_seq{0};
  /// Steady-clock ns at which the first produce sent after the broker kill
  /// was acknowledged (0: none yet): the partition takes writes again.
  std::atomic<int64_t> first_ack_after_kill_ns{0};
};

/// What a consumer delivered for one partition (written by its thread only;
/// read by the main thread after the consumer stopped, or the atomics live).
struct partition_consumption {
  std::map<int64_t, uint64_t> delivered;  ///< offset → seq as delivered (first time)
  uint64_t deliveries = 0;                ///< every delivery, repeats included
  uint64_t repeats = 0;                   ///< deliveries of an offset already delivered
  uint64_t foreign = 0;                   ///< records not written by this run
  std::vector<std::string> problems;      ///< order / value violations (each one fails verification)
  uint64_t repositions = 0;               ///< resumed from the new owner's committed offset
  uint64_t missing_commits = 0;           ///< new owner had no committed offset for the partition
  std::atomic<int64_t> position{0};       ///< next offset to read
  std::atomic<int64_t> log_end{0};        ///< log end seen by the last fetch
};

/// Counters by error text ("503 owner_unreachable"), for the summary.
class error_counts {
public:
  void add(const std::string& what);
  std::map<std::string, uint64_t> snapshot() const;
  uint64_t total() const;

private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> counts_;
};

/// State shared by every thread of one run.
struct run {
  options opt;
  std::string id;  ///< run id, part of every value
  std::vector<tp_key> partitions;
  std::vector<tp_key> hot;
  std::map<tp_key, std::unique_ptr<partition_ledger>> ledgers;
  std::map<tp_key, std::unique_ptr<partition_consumption>> consumed;

  std::atomic<bool> stop_producers{false};
  std::atomic<bool> producers_stopped{false};  ///< every producer thread has returned
  std::atomic<bool> stop_consumers{false};     ///< give up (drain timeout, second Ctrl-C)
  std::atomic<uint64_t> acked_records{0};
  std::atomic<uint64_t> failed_records{0};  ///< records of requests that were not acknowledged
  std::atomic<uint64_t> delivered_records{0};
  std::atomic<int64_t> kill_ns{0};  ///< steady-clock ns of the broker kill (0: none)
  error_counts produce_errors;
  error_counts consume_errors;

  /// Owner of every partition as last seen (GET /admin/cluster, 421 answers).
  std::string owner_of(const tp_key& tp) const;
  void set_owner(const tp_key& tp, const std::string& broker);
  const broker_endpoint* broker(const std::string& broker_id) const;

private:
  mutable std::mutex owners_mu_;
  std::map<tp_key, std::string> owners_;
};

/// Set by SIGINT/SIGTERM: 1 = stop and verify, 2+ = stop waiting for the drain.
extern std::atomic<int> interrupted;

/// Nanoseconds on the steady clock (the unit of kill_ns and first_ack_after_kill_ns).
inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

/// One client-API connection per broker, for one thread.
class client_pool {
public:
  explicit client_pool(const run& r) : run_(r) {}
  transport::http_result call(const std::string& broker, const std::string& method, const std::string& target,
                              const std::string& body = {},
                              std::chrono::milliseconds timeout = std::chrono::seconds(15));

private:
  const run& run_;
  std::map<std::string, std::unique_ptr<transport::http_connection>> conns_;
};

/// An admin-API request (with the bearer token when set) on a fresh connection.
transport::http_result admin_call(const options& o, const broker_endpoint& b, const std::string& method,
                                  const std::string& target, const std::string& body = {},
                                  std::chrono::milliseconds timeout = std::chrono::seconds(5));

/// "503 owner_unreachable", "transport: Connection refused", ...
std::string describe_failure(const transport::http_result& res);

/// Producer thread `index`: skewed batches until stop_producers.
void run_producer(run& r, int index);

/// Consumer thread of `topic`: group member, follows owners, drains after
/// the producers stopped; returns once drained or told to stop.
void run_consumer(run& r, const std::string& topic, std::atomic<bool>& drained);

}  // namespace moonmq::demo

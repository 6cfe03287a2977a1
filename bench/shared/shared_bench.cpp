// shared_bench: the three figures of shared-storage mode
// (docs/shared-storage.md, bench/shared/README.md) on real moonmq-node
// processes, three Raft brokers on loopback sharing one directory.
//
//  --failover   `--kills` times, SIGKILL a follower that owns
//               `--partitions-per-broker` partitions while producers write
//               to every partition of the topic through the two other
//               brokers; per partition of the dead broker, the time from the
//               kill to the first acknowledged produce sent after it, and
//               the largest of those per kill (p50/p99/max against
//               SessionTimeoutMs + 1 s). After each kill every record
//               acknowledged in that trial is read back at its offset; the
//               broker is restarted and moves give it its partitions back.
//  --move       one producer (one 100-byte record per request, one request
//               in flight) writes to a partition while it is moved
//               `--moves` times between two brokers; produce latency
//               without moves and during them, and the moves' durations,
//               for a small (`--small-bytes`) and a big (`--big-bytes`)
//               partition.
//  --throughput produce MB/s (values) through the client API, `--tp-connections`
//               connections on `--tp-partitions` partitions, each to its
//               owner, on a shared-mode cluster and on a local-mode cluster
//               on the same disk, alternating, `--rounds` times each; the
//               ratio shared/local.
// With none of the three, all run. MB = 10^6 bytes.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/client_api.hpp"
#include "bench/common/latency_stats.hpp"
#include "bench/common/node_options.hpp"
#include "bench/shared/shared_client.hpp"
#include "config/node_config.hpp"

namespace fs = std::filesystem;
using namespace moonmq::bench::shared;
using moonmq::bench::percentile;
using moonmq::bench::raft_cluster;

namespace {

struct options : moonmq::bench::node_options {
  bool failover = false, move = false, throughput = false, keep = false;
  // Cluster.Raft timings; 0 = the broker's default.
  int session_timeout_ms = 0, lease_ms = 0, lease_margin_ms = 0, election_timeout_ms = 0, heartbeat_ms = 0;
  // --failover
  int kills = 20;
  int partitions_per_broker = 4;
  int records_per_request = 5;
  int pause_ms = 5;  ///< a failover producer's pause after each acknowledged request
  // --move
  int64_t small_bytes = int64_t{1} << 20;
  int64_t big_bytes = int64_t{1} << 30;
  int moves = 20;
  double latency_seconds = 5;
  int move_gap_ms = 300;
  bool big_first = false;  ///< the big partition's moves run before the small one's
  // fills (--move) and --throughput: binary requests of `records` values of `value_bytes`
  int fill_connections = 2;
  int records = 1000;
  size_t value_bytes = 1024;
  // --throughput
  double seconds = 10;
  int rounds = 3;
  int tp_partitions = 3;
  int tp_connections = 6;
  int tp_records = 100;
  std::string acks = "leader";
  bool local_no_wal = false;  ///< the local cluster with Storage.WriteAheadLog=false
};

constexpr const char* usage =
  "usage: shared_bench [--failover] [--move] [--throughput] [--node PATH] [--dir D] [--keep]\n"
  "  Raft timings (0 = default): [--session-timeout-ms MS] [--lease-ms MS] [--lease-margin-ms MS]\n"
  "                              [--election-timeout-ms MS] [--heartbeat-ms MS]\n"
  "  --failover: [--kills N] [--partitions-per-broker P] [--records-per-request R] [--pause-ms MS]\n"
  "  --move: [--small-bytes N] [--big-bytes N] [--moves M] [--latency-seconds S] [--move-gap-ms MS] [--big-first]\n"
  "          [--fill-connections C] [--records R] [--value-bytes V]\n"
  "  --throughput: [--seconds S] [--rounds N] [--tp-partitions P] [--tp-connections C] [--tp-records R]\n"
  "                [--value-bytes V] [--acks leader|all] [--local-no-wal]\n"
  "  With none of --failover, --move, --throughput, all three run.\n";

/// The `--set` overrides of every broker: the shared directory (none: local
/// mode) and the Raft timings given on the command line.
std::vector<std::string> cluster_sets(const options& o, const std::string& shared_dir) {
  std::vector<std::string> s{"LogLevel=info"};
  if (!shared_dir.empty()) {
    fs::create_directories(shared_dir);
    s.push_back("Storage.SharedDir=" + shared_dir);
  }
  auto add = [&](const char* key, int v) {
    if (v > 0)
      s.push_back(std::string("Cluster.Raft.") + key + "=" + std::to_string(v));
  };
  add("SessionTimeoutMs", o.session_timeout_ms);
  add("LeaseMs", o.lease_ms);
  add("LeaseMarginMs", o.lease_margin_ms);
  add("ElectionTimeoutMs", o.election_timeout_ms);
  add("HeartbeatMs", o.heartbeat_ms);
  return s;
}

/// Starts the three brokers and waits for a leader; its index.
size_t start_cluster(raft_cluster& c) {
  c.start_all();
  auto leader = c.agreed(0, std::chrono::seconds(30));
  if (!leader)
    throw std::runtime_error("no controller elected within 30 s");
  return leader->first;
}

/// Creates `topic` with `partitions` partitions through broker `via` and
/// waits until the image names an owner for each; returns them.
std::map<int, std::string> create_topic(raft_cluster& c, size_t via, const std::string& topic, int partitions) {
  auto r = http_call(c.client_ports[via], "POST", "/v1/topics",
                     json{{"name", topic}, {"partitions", partitions}}.dump());
  if (r.status != 201 && r.status != 200)
    throw std::runtime_error("create " + topic + ": " + std::to_string(r.status) + " " + r.body);
  for (auto deadline = clock_type::now() + std::chrono::seconds(30); clock_type::now() < deadline;) {
    auto owners = owners_of(c.cluster_ports[via], topic);
    if (static_cast<int>(owners.size()) == partitions)
      return owners;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("the image names no owner for some partition of " + topic);
}

struct latency_stats {
  size_t n = 0, failed = 0;
  double p50 = 0, p99 = 0, max = 0;
};

latency_stats stats_of(const std::vector<double>& ms, size_t failed) {
  return {ms.size(), failed, percentile(ms, 0.5), percentile(ms, 0.99), moonmq::bench::max_of(ms)};
}

void print_latency(const char* what, const latency_stats& s) {
  std::printf("%-34s: p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (%zu produces, %zu failed)\n", what, s.p50, s.p99,
              s.max, s.n, s.failed);
}

// --- failover ----------------------------------------------------------------------------

/// A failover producer: requests of `records_per_request` records (key
/// "p<partition>-t<trial>-<n>", value the key padded to 100 bytes) to one
/// partition through one broker, acks=leader, one request in flight;
/// failures are retried after 5 ms, acknowledged requests followed by
/// `pause_ms`.
class fo_producer {
public:
  static std::string value_of(const std::string& key) { return key + std::string(key.size() < 100 ? 100 - key.size() : 0, '.'); }

  fo_producer(uint16_t via, std::string topic, int partition, int trial, const options& o)
      : via_(via), topic_(std::move(topic)), partition_(partition), trial_(trial), per_request_(o.records_per_request),
        pause_ms_(o.pause_ms), thread_([this] { run(); }) {}
  ~fo_producer() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }
  /// The first acknowledgement of a request sent at or after `t` (seconds after t), or nullopt.
  std::optional<double> first_ack_after(clock_type::time_point t) const {
    std::lock_guard lock{mu_};
    for (const auto& [start, end] : acks_)
      if (start >= t)
        return seconds_between(t, end);
    return std::nullopt;
  }
  size_t ok_requests() const {
    std::lock_guard lock{mu_};
    return acks_.size();
  }
  std::map<int64_t, std::string> acked() const {
    std::lock_guard lock{mu_};
    return acked_;
  }
  int double_acks() const { return double_acks_.load(); }
  /// A kind of failed answer ("<status> <error>"): how many, the first and last seen.
  struct error_span {
    int n = 0;
    clock_type::time_point first, last;
    std::set<int> partitions;  ///< the partitions of the producers that saw it
  };
  std::map<std::string, error_span> errors() const {
    std::lock_guard lock{mu_};
    return errors_;
  }

private:
  void run() {
    http_connection conn{"127.0.0.1", via_};
    const std::string target = "/v1/topics/" + topic_ + "/records?acks=leader";
    for (int n = 0; !stop_;) {
      json records = json::array();
      std::vector<std::string> keys;
      for (int k = 0; k < per_request_; ++k, ++n) {
        keys.push_back("p" + std::to_string(partition_) + "-t" + std::to_string(trial_) + "-" + std::to_string(n));
        records.push_back({{"key", keys.back()}, {"value", value_of(keys.back())}, {"partition", partition_}});
      }
      auto t0 = clock_type::now();
      auto r = conn.call("POST", target, json{{"records", records}}.dump(), std::chrono::seconds(30));
      auto t1 = clock_type::now();
      auto j = r.status == 200 ? json::parse(r.body, nullptr, false) : json();
      if (r.status != 200 || !j.is_object() || j["offsets"].size() != keys.size()) {
        auto ej = json::parse(r.body, nullptr, false);
        std::string what = std::to_string(r.status) + " " +
                           (ej.is_object() ? ej.value("error", std::string{}) : r.error.substr(0, 40));
        {
          std::lock_guard lock{mu_};
          auto& e = errors_[what];
          e.partitions.insert(partition_);
          if (e.n++ == 0)
            e.first = t1;
          e.last = t1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      {
        std::lock_guard lock{mu_};
        acks_.emplace_back(t0, t1);
        for (size_t k = 0; k < keys.size(); ++k)
          if (!acked_.emplace(j["offsets"][k]["offset"].get<int64_t>(), keys[k]).second)
            ++double_acks_;
      }
      if (pause_ms_ > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
    }
  }
  uint16_t via_;
  std::string topic_;
  int partition_, trial_, per_request_, pause_ms_;
  std::atomic<bool> stop_{false};
  std::atomic<int> double_acks_{0};
  mutable std::mutex mu_;
  std::vector<std::pair<clock_type::time_point, clock_type::time_point>> acks_;
  std::map<int64_t, std::string> acked_;  ///< offset → key
  std::map<std::string, error_span> errors_;
  std::thread thread_;
};

/// Moves partitions of `topic` so that each broker owns `per_broker`
/// (3 × per_broker partitions in all), through the leader's admin API.
void rebalance(raft_cluster& c, size_t leader, const std::string& topic, int per_broker) {
  auto owners = owners_of(c.cluster_ports[leader], topic);
  std::map<std::string, std::vector<int>> held;
  for (const auto& id : c.ids)
    held[id];
  for (const auto& [p, id] : owners)
    held[id].push_back(p);
  std::vector<int> extra;
  for (auto& [id, ps] : held)
    while (static_cast<int>(ps.size()) > per_broker) {
      extra.push_back(ps.back());
      ps.pop_back();
    }
  for (auto& [id, ps] : held)
    while (static_cast<int>(ps.size()) < per_broker && !extra.empty()) {
      int p = extra.back();
      extra.pop_back();
      // A broker back from a restart may refuse for a moment (its lease is
      // renewed on its first round trip with the leader): try again.
      for (int attempt = 0;; ++attempt) {
        try {
          move_partition(c.admin_ports[leader], topic, p, id);
          break;
        } catch (const std::exception& e) {
          if (attempt >= 5)
            throw;
          std::this_thread::sleep_for(std::chrono::seconds(1));
        }
      }
      ps.push_back(p);
    }
}

struct loss_count {
  size_t acked = 0;
  size_t lost = 0;  ///< missing, or another value at the acknowledged offset
  int double_acks = 0;
};

int run_failover(const options& o, const std::string& work) {
  // Unset: the brokers' shared-storage defaults (config/node_config.hpp).
  const int session = o.session_timeout_ms > 0 ? o.session_timeout_ms : moonmq::config::shared_session_timeout_ms;
  const int lease = o.lease_ms > 0 ? o.lease_ms : moonmq::config::shared_lease_ms;
  const int margin = o.lease_margin_ms > 0 ? o.lease_margin_ms : moonmq::config::shared_lease_margin_ms;
  const int election = o.election_timeout_ms > 0 ? o.election_timeout_ms : 1000;
  const int wait = std::max(election, lease) + lease + margin;
  std::printf("\n== failover: %d kills, 3 brokers, %d partitions each; SessionTimeoutMs=%d ElectionTimeoutMs=%d "
              "LeaseMs=%d LeaseMarginMs=%d (failover wait W=%d ms)\n",
              o.kills, o.partitions_per_broker, session, election, lease, margin, wait);
  raft_cluster c{o.node, work + "/failover", cluster_sets(o, work + "/failover/shared")};
  size_t leader = start_cluster(c);
  const std::string topic = "fo";
  const int partitions = 3 * o.partitions_per_broker;
  create_topic(c, leader, topic, partitions);

  std::vector<double> per_partition_ms, per_kill_ms, fence_ms, handover_ms;
  loss_count total;
  std::map<std::string, int> errors;
  for (int k = 0; k < o.kills; ++k) {
    auto agreed = c.agreed(0, std::chrono::seconds(30));
    if (!agreed)
      throw std::runtime_error("no controller before kill " + std::to_string(k));
    leader = agreed->first;
    std::vector<size_t> followers;
    for (size_t i = 0; i < 3; ++i)
      if (i != leader)
        followers.push_back(i);
    const size_t victim = followers[static_cast<size_t>(k) % 2];
    const std::vector<size_t> via{leader, followers[(static_cast<size_t>(k) + 1) % 2]};
    rebalance(c, leader, topic, o.partitions_per_broker);
    auto owners = owners_of(c.cluster_ports[leader], topic);
    std::vector<int> victim_parts;
    for (const auto& [p, id] : owners)
      if (id == c.ids[victim])
        victim_parts.push_back(p);

    std::vector<std::unique_ptr<fo_producer>> producers;
    for (int p = 0; p < partitions; ++p)
      producers.push_back(std::make_unique<fo_producer>(c.client_ports[via[static_cast<size_t>(p) % 2]], topic, p, k, o));
    auto warm = clock_type::now() + std::chrono::seconds(30);
    auto all_writing = [&] {
      return std::all_of(producers.begin(), producers.end(), [](auto& w) { return w->ok_requests() >= 3; });
    };
    while (!all_writing() && clock_type::now() < warm)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!all_writing())
      throw std::runtime_error("kill " + std::to_string(k) + ": producers did not start writing");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));

    const int64_t kill_wall = wall_ms_of_day();
    const auto t_kill = clock_type::now();
    c.stop(victim, SIGKILL);
    std::map<int, double> back;
    for (auto deadline = t_kill + std::chrono::seconds(120); clock_type::now() < deadline;) {
      for (int p : victim_parts)
        if (!back.count(p))
          if (auto s = producers[static_cast<size_t>(p)]->first_ack_after(t_kill))
            back[p] = *s * 1000;
      if (back.size() == victim_parts.size())
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (back.size() != victim_parts.size())
      throw std::runtime_error("kill " + std::to_string(k) + ": a partition took no write within 120 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (auto& w : producers)
      w->stop();

    // Every record acknowledged in this trial, at its offset, with its value.
    owners = owners_of(c.cluster_ports[leader], topic);
    loss_count trial;
    std::map<std::string, fo_producer::error_span> trial_errors;
    for (int p = 0; p < partitions; ++p) {
      auto& w = *producers[static_cast<size_t>(p)];
      auto acked = w.acked();
      trial.acked += acked.size();
      trial.double_acks += w.double_acks();
      for (const auto& [e, span] : w.errors()) {
        errors[e] += span.n;
        auto& t = trial_errors[e];
        t.first = t.n == 0 ? span.first : std::min(t.first, span.first);
        t.last = t.n == 0 ? span.last : std::max(t.last, span.last);
        t.n += span.n;
        t.partitions.insert(span.partitions.begin(), span.partitions.end());
      }
      if (acked.empty())
        continue;
      auto owner = index_of(c, owners[p]);
      if (!owner || !c.nodes[*owner])
        throw std::runtime_error("no live owner for partition " + std::to_string(p));
      auto now = read_values(c.client_ports[*owner], topic, p, acked.begin()->first);
      for (const auto& [off, key] : acked) {
        auto it = now.find(off);
        if (it == now.end() || it->second != fo_producer::value_of(key))
          ++trial.lost;
      }
    }
    total.acked += trial.acked;
    total.lost += trial.lost;
    total.double_acks += trial.double_acks;

    // When the controller fenced the broker and handed its partitions over (its log).
    auto log = c.nodes[leader]->log();
    auto fence = log_stamp_ms(log, "raft.fencing broker=" + c.ids[victim] + " ", kill_wall);
    auto handover = log_stamp_ms(log, "balancer.failover broker=" + c.ids[victim] + " ", kill_wall);
    if (fence)
      fence_ms.push_back(static_cast<double>(*fence - kill_wall));
    if (handover)
      handover_ms.push_back(static_cast<double>(*handover - kill_wall));
    double kill_max = 0;
    std::string list;
    for (const auto& [p, ms] : back) {
      per_partition_ms.push_back(ms);
      kill_max = std::max(kill_max, ms);
      list += " " + std::to_string(p) + ":" + std::to_string(static_cast<int>(ms));
    }
    per_kill_ms.push_back(kill_max);
    std::printf("kill %2d: %s (leader %s) fenced +%lld ms, failover +%lld ms, first acks (partition:ms)%s; "
                "acked %zu, lost %zu, double %d\n",
                k + 1, c.ids[victim].c_str(), c.ids[leader].c_str(), fence ? static_cast<long long>(*fence - kill_wall) : -1LL,
                handover ? static_cast<long long>(*handover - kill_wall) : -1LL, list.c_str(), trial.acked, trial.lost,
                trial.double_acks);
    for (const auto& [e, span] : trial_errors) {
      std::string on;
      for (int p : span.partitions)
        on += (on.empty() ? "" : ",") + std::to_string(p);
      std::printf("         failed answers [%s] x%d from %+.0f to %+.0f ms on partitions %s\n", e.c_str(), span.n,
                  seconds_between(t_kill, span.first) * 1000, seconds_between(t_kill, span.last) * 1000, on.c_str());
    }

    // Back up, unfenced, for the next trial.
    c.start(victim);
    bool unfenced = false;
    for (auto deadline = clock_type::now() + std::chrono::seconds(60); clock_type::now() < deadline && !unfenced;) {
      unfenced = fenced(c.admin_ports[leader], c.ids[victim]) == std::optional<bool>{false};
      if (!unfenced)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!unfenced)
      throw std::runtime_error(c.ids[victim] + " was not unfenced within 60 s of its restart");
  }

  std::printf("\nfailover summary (%d kills, %zu partitions of killed brokers)\n", o.kills, per_partition_ms.size());
  moonmq::bench::print_stats("kill -> first ack, partition", per_partition_ms);
  moonmq::bench::print_stats("kill -> first ack, kill max", per_kill_ms);
  moonmq::bench::print_stats("kill -> fenced (leader log)", fence_ms);
  moonmq::bench::print_stats("kill -> failover (leader log)", handover_ms);
  const double target = session + 1000;
  std::printf("target p99 <= SessionTimeoutMs + 1 s = %.0f ms: partition p99 %.0f ms %s, kill-max p99 %.0f ms %s\n",
              target, percentile(per_partition_ms, 0.99), percentile(per_partition_ms, 0.99) <= target ? "met" : "MISSED",
              percentile(per_kill_ms, 0.99), percentile(per_kill_ms, 0.99) <= target ? "met" : "MISSED");
  std::printf("acknowledged records read back: %zu acked, %zu lost, %d offsets acknowledged twice\n", total.acked,
              total.lost, total.double_acks);
  std::printf("failed produce answers seen by the producers:");
  for (const auto& [e, n] : errors)
    std::printf(" [%s] x%d", e.c_str(), n);
  std::printf("\n");
  return total.lost == 0 && total.double_acks == 0 ? 0 : 1;
}

// --- move stall ----------------------------------------------------------------------------

/// Produces binary requests of `o.records` values into topic/0 through the
/// owner (client port `client`, cluster port `cluster`) on
/// `o.fill_connections` connections until its log holds `bytes`; seconds.
/// Below 64 MiB it uses one connection and requests of about bytes / 16, so
/// that a small partition ends close to its size.
double fill(const options& o, uint16_t client, uint16_t cluster, const std::string& topic, int64_t bytes) {
  moonmq::bench::produce_load load;
  load.value_bytes = o.value_bytes;
  load.records = o.records;
  load.connections = o.fill_connections;
  if (bytes < (int64_t{64} << 20)) {
    load.connections = 1;
    load.records = static_cast<int>(std::clamp<int64_t>(bytes / 16 / static_cast<int64_t>(o.value_bytes), 1, o.records));
  }
  std::vector<std::string> bodies;
  for (int c = 0; c < load.connections; ++c)
    bodies.push_back(binary_body(0, moonmq::bench::request_values(load, c)));
  std::atomic<bool> full{false};
  std::atomic<int> failures{0};
  auto t0 = clock_type::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < load.connections; ++c)
    threads.emplace_back([&, c] {
      http_connection conn{"127.0.0.1", client};
      while (!full) {
        auto r = conn.call("POST", "/v1/topics/" + topic + "/records?acks=leader", bodies[static_cast<size_t>(c)],
                           std::chrono::seconds(60), {{"Content-Type", binary_type}});
        if (r.status != 200 && ++failures > 20)
          full = true;
      }
    });
  while (!full) {
    std::this_thread::sleep_for(std::chrono::milliseconds(bytes < (int64_t{64} << 20) ? 2 : 50));
    if (partition_bytes(cluster, topic, 0) >= bytes)
      full = true;
  }
  for (auto& t : threads)
    t.join();
  if (failures > 20)
    throw std::runtime_error("fill " + topic + ": too many failed produce requests");
  return seconds_between(t0, clock_type::now());
}

struct sample {
  clock_type::time_point start, end;
  bool ok = false;
  std::string error;  ///< a failed answer: "<status> <error code>"
};

/// One 100-byte record per request to topic/0, acks=leader, one in flight.
class latency_producer {
public:
  latency_producer(uint16_t client, std::string topic) : client_(client), topic_(std::move(topic)), thread_([this] { run(); }) {}
  ~latency_producer() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }
  std::vector<sample> samples() {
    std::lock_guard lock{mu_};
    return samples_;
  }

private:
  void run() {
    http_connection conn{"127.0.0.1", client_};
    const std::string body = json{{"records", {{{"value", std::string(100, 'l')}, {"partition", 0}}}}}.dump();
    while (!stop_) {
      auto t0 = clock_type::now();
      auto r = conn.call("POST", "/v1/topics/" + topic_ + "/records?acks=leader", body, std::chrono::seconds(30));
      std::string error;
      if (r.status != 200) {
        auto answer = json::parse(r.body, nullptr, false);
        error = std::to_string(r.status) + " "
                + (answer.is_object() ? answer.value("error", std::string{"?"}) : std::string{"(no JSON body)"});
      }
      std::lock_guard lock{mu_};
      samples_.push_back({t0, clock_type::now(), r.status == 200, std::move(error)});
    }
  }
  uint16_t client_;
  std::string topic_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<sample> samples_;
  std::thread thread_;
};

int run_move(const options& o, const std::string& work) {
  std::printf("\n== move stall: %d moves each of a small (%lld bytes) and a big (%lld bytes) partition, shared mode\n",
              o.moves, static_cast<long long>(o.small_bytes), static_cast<long long>(o.big_bytes));
  raft_cluster c{o.node, work + "/move", cluster_sets(o, work + "/move/shared")};
  size_t leader = start_cluster(c);
  std::vector<size_t> f;
  for (size_t i = 0; i < 3; ++i)
    if (i != leader)
      f.push_back(i);
  const size_t src = f[0], dst = f[1];
  struct part {
    std::string topic;
    int64_t bytes;
  };
  std::vector<part> parts{{"small", o.small_bytes}, {"big", o.big_bytes}};
  if (o.big_first)  // the later partition's moves see a longer history (Raft log, journal, epochs)
    std::swap(parts[0], parts[1]);
  for (const auto& p : parts) {
    auto owners = create_topic(c, leader, p.topic, 1);
    if (owners[0] != c.ids[src])
      move_partition(c.admin_ports[leader], p.topic, 0, c.ids[src]);
    double s = fill(o, c.client_ports[src], c.cluster_ports[src], p.topic, p.bytes);
    auto size = partition_bytes(c.cluster_ports[src], p.topic, 0);
    std::printf("fill %-5s: %lld log bytes in %.2f s (%.1f MB/s through the client API, binary requests)\n",
                p.topic.c_str(), static_cast<long long>(size), s, static_cast<double>(size) / s / 1e6);
  }
  std::printf("producer through %s (the controller; the partition moves between %s and %s), one 100-byte record per "
              "request\n",
              c.ids[leader].c_str(), c.ids[src].c_str(), c.ids[dst].c_str());
  for (const auto& p : parts) {
    latency_producer lp{c.client_ports[leader], p.topic};
    auto t0 = clock_type::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.latency_seconds));
    auto t_moves = clock_type::now();
    std::vector<std::pair<clock_type::time_point, clock_type::time_point>> windows;
    std::vector<double> seen_ms, row_ms;
    for (int m = 0; m < o.moves; ++m) {
      auto a = clock_type::now();
      auto r = move_partition(c.admin_ports[leader], p.topic, 0, c.ids[m % 2 == 0 ? dst : src]);
      windows.emplace_back(a, clock_type::now());
      seen_ms.push_back(r.seen_s * 1000);
      row_ms.push_back(r.row_s * 1000);
      std::this_thread::sleep_for(std::chrono::milliseconds(o.move_gap_ms));
    }
    lp.stop();
    std::vector<double> base, during;
    size_t base_failed = 0, during_failed = 0;
    std::map<std::string, int> errors;
    for (const auto& s : lp.samples()) {
      double ms = std::chrono::duration<double, std::milli>(s.end - s.start).count();
      if (s.start >= t0 && s.end < t_moves) {
        base.push_back(ms);
        base_failed += s.ok ? 0 : 1;
      }
      bool in = std::any_of(windows.begin(), windows.end(),
                            [&](const auto& w) { return s.end >= w.first && s.start <= w.second; });
      if (in) {
        during.push_back(ms);
        during_failed += s.ok ? 0 : 1;
      }
      if (!s.ok)
        ++errors[s.error];
    }
    std::printf("%s partition:\n", p.topic.c_str());
    print_latency("  produce without moves", stats_of(base, base_failed));
    print_latency("  produce during moves", stats_of(during, during_failed));
    if (!errors.empty()) {
      std::printf("  failed produce answers          :");
      for (const auto& [e, n] : errors)
        std::printf(" [%s] x%d", e.c_str(), n);
      std::printf("\n");
    }
    std::printf("  %-32s: p50 %7.1f ms  max %7.1f ms  (submission to done seen, polling every 10 ms)\n", "move duration",
                percentile(seen_ms, 0.5), moonmq::bench::max_of(seen_ms));
    std::printf("  %-32s: p50 %7.1f ms  max %7.1f ms  (the journal row's updated_ms - started_ms)\n", "move duration (row)",
                percentile(row_ms, 0.5), moonmq::bench::max_of(row_ms));
  }
  return 0;
}

// --- throughput ----------------------------------------------------------------------------

/// Produce MB/s of values over `o.seconds` (after 1 s of warm-up) on topic
/// "tp" of `c`, each connection writing one partition through its owner.
double produce_rate(const options& o, raft_cluster& c, size_t leader) {
  auto owners = owners_of(c.cluster_ports[leader], "tp");
  moonmq::bench::produce_load load;
  load.records = o.tp_records;
  load.value_bytes = o.value_bytes;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> bytes{0};
  std::atomic<int> failures{0};
  std::atomic<bool> counting{false};
  std::vector<std::thread> threads;
  for (int k = 0; k < o.tp_connections; ++k) {
    int p = k % o.tp_partitions;
    auto owner = index_of(c, owners[p]);
    if (!owner)
      throw std::runtime_error("no owner for tp/" + std::to_string(p));
    threads.emplace_back([&, k, p, port = c.client_ports[*owner]] {
      const auto body = binary_body(p, moonmq::bench::request_values(load, k));
      const int64_t request_bytes = static_cast<int64_t>(load.records) * static_cast<int64_t>(load.value_bytes);
      http_connection conn{"127.0.0.1", port};
      while (!stop) {
        auto r = conn.call("POST", "/v1/topics/tp/records?acks=" + o.acks, body, std::chrono::seconds(60),
                           {{"Content-Type", binary_type}});
        if (r.status != 200)
          ++failures;
        else if (counting)
          bytes += request_bytes;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  counting = true;
  auto t0 = clock_type::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  counting = false;
  double s = seconds_between(t0, clock_type::now());
  stop = true;
  for (auto& t : threads)
    t.join();
  if (failures > 0)
    std::fprintf(stderr, "throughput: %d produce requests failed\n", failures.load());
  return static_cast<double>(bytes.load()) / s / 1e6;
}

int run_throughput(const options& o, const std::string& work) {
  std::printf("\n== throughput: %d connections on %d partitions (each to its owner), binary requests of %d x %zu "
              "bytes, acks=%s, %.0f s per run, %d rounds; local mode %s\n",
              o.tp_connections, o.tp_partitions, o.tp_records, o.value_bytes, o.acks.c_str(), o.seconds, o.rounds,
              o.local_no_wal ? "without the write-ahead log" : "with the write-ahead log (the default)");
  auto local_sets = cluster_sets(o, "");
  if (o.local_no_wal)
    local_sets.push_back("Storage.WriteAheadLog=false");
  raft_cluster local{o.node, work + "/tp-local", local_sets};
  raft_cluster shared{o.node, work + "/tp-shared", cluster_sets(o, work + "/tp-shared/shared")};
  size_t local_leader = start_cluster(local);
  size_t shared_leader = start_cluster(shared);
  create_topic(local, local_leader, "tp", o.tp_partitions);
  create_topic(shared, shared_leader, "tp", o.tp_partitions);
  std::vector<double> l, s;
  for (int r = 0; r < o.rounds; ++r) {
    // ABBA: neither mode always runs after the other's writeback.
    bool local_first = r % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      bool is_local = (k == 0) == local_first;
      double mbs = is_local ? produce_rate(o, local, local_leader) : produce_rate(o, shared, shared_leader);
      (is_local ? l : s).push_back(mbs);
      std::printf("round %d %-6s: %8.1f MB/s\n", r + 1, is_local ? "local" : "shared", mbs);
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v)
      sum += x;
    return v.empty() ? 0 : sum / static_cast<double>(v.size());
  };
  std::printf("throughput local : %8.1f MB/s (mean of %d runs)\n", mean(l), o.rounds);
  std::printf("throughput shared: %8.1f MB/s (mean of %d runs)\n", mean(s), o.rounds);
  std::printf("ratio shared/local: %.2f (target >= 0.9: %s)\n", mean(s) / mean(l),
              mean(s) / mean(l) >= 0.9 ? "met" : "MISSED");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  options o;
  if (int rc = moonmq::bench::parse_node_options(
        argc, argv, usage, o,
        {{"--failover", &o.failover},
         {"--move", &o.move},
         {"--throughput", &o.throughput},
         {"--keep", &o.keep},
         {"--session-timeout-ms", &o.session_timeout_ms},
         {"--lease-ms", &o.lease_ms},
         {"--lease-margin-ms", &o.lease_margin_ms},
         {"--election-timeout-ms", &o.election_timeout_ms},
         {"--heartbeat-ms", &o.heartbeat_ms},
         {"--kills", &o.kills},
         {"--partitions-per-broker", &o.partitions_per_broker},
         {"--records-per-request", &o.records_per_request},
         {"--pause-ms", &o.pause_ms},
         {"--small-bytes", &o.small_bytes},
         {"--big-bytes", &o.big_bytes},
         {"--moves", &o.moves},
         {"--latency-seconds", &o.latency_seconds},
         {"--move-gap-ms", &o.move_gap_ms},
         {"--big-first", &o.big_first},
         {"--fill-connections", &o.fill_connections},
         {"--records", &o.records},
         {"--value-bytes", &o.value_bytes},
         {"--seconds", &o.seconds},
         {"--rounds", &o.rounds},
         {"--tp-partitions", &o.tp_partitions},
         {"--tp-connections", &o.tp_connections},
         {"--tp-records", &o.tp_records},
         {"--acks", &o.acks},
         {"--local-no-wal", &o.local_no_wal}});
      rc != 0)
    return rc;
  if (o.kills < 1 || o.partitions_per_broker < 1 || o.records_per_request < 1 || o.pause_ms < 0 || o.small_bytes < 1
      || o.big_bytes < 1 || o.moves < 1 || o.latency_seconds <= 0 || o.move_gap_ms < 0 || o.fill_connections < 1
      || o.records < 1 || o.value_bytes < 1 || o.seconds <= 0 || o.rounds < 1 || o.tp_partitions < 1
      || o.tp_connections < 1 || o.tp_records < 1 || (o.acks != "leader" && o.acks != "all")) {
    std::fprintf(stderr, "counts and sizes must be positive, --acks leader or all\n%s", usage);
    return 2;
  }
  if (!o.failover && !o.move && !o.throughput)
    o.failover = o.move = o.throughput = true;
  std::string work = o.dir + "/sbench-" + std::to_string(::getpid());
  fs::create_directories(work);
  std::printf("shared_bench node=%s dir=%s\n", o.node.c_str(), work.c_str());
  int rc = 0;
  try {
    if (o.failover)
      rc |= run_failover(o, work);
    if (o.move)
      rc |= run_move(o, work);
    if (o.throughput)
      rc |= run_throughput(o, work);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shared_bench: %s\n", e.what());
    rc = 1;
  }
  if (rc == 0 && !o.keep)
    fs::remove_all(work);
  else
    std::printf("data dirs and node logs kept in %s\n", work.c_str());
  return rc;
}

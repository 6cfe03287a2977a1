// One moonmq-node holding many partitions, and produce spread over many
// partitions against produce to one (docs/storage.md "Threads, group commit
// and file descriptors").
//
// 1. scale: `--topics` topics of `--partitions` partitions each are created
//    on a fresh node. Figures: the time the creates took, the time until a
//    produce to the last partition of every topic was answered (serving),
//    threads, VmRSS and the node's CPU while idle for `--idle-seconds`
//    (utime + stime of /proc/<pid>/stat, as a share of one core); SIGTERM to
//    exit; a restart on the same data directory until every topic's last
//    partition serves again (then a produce and fetch on a sample of
//    `--sample` partitions, which must hold the record produced before the
//    restart), and threads and VmRSS after it.
// 2. spread: with acks=leader and `--connections` connections, requests of
//    `--records` records of `--value-bytes` bytes go to topic "one" (every
//    record to partition 0), then to topic "wide" of `--wide` partitions
//    (record i of request k to partition (k * records + i) mod wide), for
//    `--seconds` each. Figures: records/s of each and the ratio wide/one of
//    the same run (issue target: >= 0.8 for 1,000 partitions, 1 KiB records).
//
// Usage: scale_bench [--node PATH] [--dir D] [--topics T] [--partitions P]
//                    [--sample S] [--idle-seconds I] [--connections C]
//                    [--records R] [--value-bytes V] [--wide W] [--seconds N]
//                    [--skip-scale 1] [--skip-spread 1]

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/client_api.hpp"
#include "bench/common/node_child.hpp"
#include "bench/common/node_options.hpp"
#include "net/blocking_client.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using moonmq::bench::node_child;
using moonmq::bench::proc_status;
using moonmq::bench::cpu_seconds;
using moonmq::transport::http_call;
using moonmq::transport::http_connection;

namespace {

struct options : moonmq::bench::node_options, moonmq::bench::produce_load {
  options() {
    connections = 8;
    records = 100;
  }
  int topics = 2;
  int partitions = 10000;
  int sample = 200;
  int idle_seconds = 10;
  int wide = 1000;
  int seconds = 10;
  int skip_scale = 0;
  int skip_spread = 0;
};

constexpr const char* usage =
  "usage: scale_bench [--node PATH] [--dir D] [--topics T] [--partitions P] [--sample S]\n"
  "                   [--idle-seconds I] [--connections C] [--records R] [--value-bytes V]\n"
  "                   [--wide W] [--seconds N] [--skip-scale 1] [--skip-spread 1]\n";

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

std::string topic_name(int t) { return "scale-" + std::to_string(t); }

std::string one_record(const std::string& value, int partition) {
  return json{{"records", json::array({json{{"value", value}, {"partition", partition}}})}}.dump();
}

/// Produces one record to `topic`/`partition` until it is answered 200 or
/// `limit` passes; returns whether it was.
bool produce_until_served(uint16_t port, const std::string& topic, int partition, const std::string& value,
                          std::chrono::seconds limit) {
  auto deadline = clock_type::now() + limit;
  while (clock_type::now() < deadline) {
    auto r = http_call(port, "POST", "/v1/topics/" + topic + "/records?acks=leader", one_record(value, partition), {},
                       std::chrono::seconds(30));
    if (r.status == 200)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// Seconds until the node's moonmq_partitions_opening gauge reads 0 (every
/// partition log opened), polled every 10 ms; -1 after 300 s.
double wait_opened(uint16_t admin, clock_type::time_point since) {
  while (seconds_since(since) < 300) {
    auto m = http_call(admin, "GET", "/metrics").body;
    if (m.find("moonmq_partitions_opening 0\n") != std::string::npos)
      return seconds_since(since);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

void scale(const options& o, const std::string& work) {
  const int total = o.topics * o.partitions;
  const std::vector<std::string> sets{"Storage.RetentionCheckMs=30000"};
  std::string dir = work + "/scale";
  double exit_s = -1;
  {
    node_child node{o.node, dir, sets};
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    long threads0 = proc_status(node.pid(), "Threads");
    long rss0 = proc_status(node.pid(), "VmRSS");
    auto t0 = clock_type::now();
    for (int t = 0; t < o.topics; ++t) {
      auto r = http_call(node.client_port, "POST", "/v1/topics",
                         json{{"name", topic_name(t)}, {"partitions", o.partitions}}.dump(), {},
                         std::chrono::seconds(120));
      if (r.status != 201)
        throw std::runtime_error("create " + topic_name(t) + ": " + std::to_string(r.status) + " " + r.body);
    }
    double create_s = seconds_since(t0);
    double opened_s = wait_opened(node.admin_port, t0);
    for (int t = 0; t < o.topics; ++t)
      if (!produce_until_served(node.client_port, topic_name(t), o.partitions - 1, "first", std::chrono::seconds(120)))
        throw std::runtime_error("the last partition of " + topic_name(t) + " never served");
    double serving_s = seconds_since(t0);
    // One record in each sampled partition, read back after the restart.
    for (int i = 0; i < o.sample; ++i) {
      int flat = static_cast<int>((static_cast<long>(i) * total) / o.sample);
      if (!produce_until_served(node.client_port, topic_name(flat / o.partitions), flat % o.partitions,
                                "sample-" + std::to_string(flat), std::chrono::seconds(30)))
        throw std::runtime_error("produce to a sampled partition failed");
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    double cpu0 = cpu_seconds(node.pid());
    auto ti = clock_type::now();
    std::this_thread::sleep_for(std::chrono::seconds(o.idle_seconds));
    double idle_cpu = (cpu_seconds(node.pid()) - cpu0) / seconds_since(ti);
    long threads1 = proc_status(node.pid(), "Threads");
    long rss1 = proc_status(node.pid(), "VmRSS");
    std::printf("scale: %d partitions (%d topics x %d)\n", total, o.topics, o.partitions);
    std::printf("  empty node          : %ld threads, VmRSS %ld kB\n", threads0, rss0);
    std::printf("  create              : %.2f s for the creates, %.2f s until every log was open, %.2f s until "
                "every topic's last partition served\n",
                create_s, opened_s, serving_s);
    std::printf("  idle                : %ld threads, VmRSS %ld kB (%.1f kB per partition), CPU %.2f%% of a core "
                "over %d s\n",
                threads1, rss1, total > 0 ? static_cast<double>(rss1 - rss0) / total : 0.0, idle_cpu * 100,
                o.idle_seconds);
    auto ts = clock_type::now();
    node.stop(SIGTERM);  // SIGKILL after 10 s
    exit_s = seconds_since(ts);
  }
  std::printf("  SIGTERM to exit     : %.2f s%s\n", exit_s, exit_s >= 10 ? " (killed: it did not exit in 10 s)" : "");
  auto t1 = clock_type::now();
  // Its own log file (node_child reads the ports of the first node.ready
  // line), the same data directory.
  auto again_sets = sets;
  again_sets.push_back("DataDir=" + dir + "/data");
  node_child again{o.node, dir + "/restart", again_sets};
  double ready_s = seconds_since(t1);
  double reopened_s = wait_opened(again.admin_port, t1);
  for (int t = 0; t < o.topics; ++t)
    if (!produce_until_served(again.client_port, topic_name(t), o.partitions - 1, "again", std::chrono::seconds(120)))
      throw std::runtime_error("after the restart the last partition of " + topic_name(t) + " never served");
  double restart_s = seconds_since(t1);
  int kept = 0;
  for (int i = 0; i < o.sample; ++i) {
    int flat = static_cast<int>((static_cast<long>(i) * total) / o.sample);
    auto r = http_call(again.client_port, "GET",
                       "/v1/topics/" + topic_name(flat / o.partitions) + "/partitions/"
                         + std::to_string(flat % o.partitions) + "/records?offset=0&max_records=10");
    auto j = json::parse(r.body, nullptr, false);
    if (r.status == 200 && !j.is_discarded() && r.body.find("sample-" + std::to_string(flat)) != std::string::npos)
      ++kept;
  }
  std::printf("  restart             : listeners ready in %.2f s, every log open in %.2f s, every topic's last "
              "partition served in %.2f s; %d of %d sampled partitions hold their record; %ld threads, VmRSS %ld kB\n",
              ready_s, reopened_s, restart_s, kept, o.sample, proc_status(again.pid(), "Threads"),
              proc_status(again.pid(), "VmRSS"));
  if (kept != o.sample)
    throw std::runtime_error("records missing after the restart");
}

/// Records/s produced to `topic` over `seconds` with `partitions` partitions.
double produce_rate(const options& o, uint16_t port, const std::string& topic, int partitions) {
  std::vector<std::string> bodies;
  for (int c = 0; c < o.connections * 4; ++c) {
    auto list = json::array();
    auto base = moonmq::bench::records_body(o, c);
    auto parsed = json::parse(base);
    int i = 0;
    for (auto& r : parsed["records"]) {
      r["partition"] = (c * o.records + i++) % partitions;
      list.push_back(r);
    }
    bodies.push_back(json{{"records", list}}.dump());
  }
  std::atomic<long> answered{0};
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  auto t0 = clock_type::now();
  for (int c = 0; c < o.connections; ++c)
    threads.emplace_back([&, c] {
      http_connection conn{"127.0.0.1", port};
      for (size_t k = static_cast<size_t>(c); !stop.load(); k += static_cast<size_t>(o.connections)) {
        auto res = conn.call("POST", "/v1/topics/" + topic + "/records?acks=leader", bodies[k % bodies.size()],
                             std::chrono::seconds(60));
        if (res.status != 200) {
          if (failures++ == 0)
            std::fprintf(stderr, "produce failed: %d %s %s\n", res.status, res.body.c_str(), res.error.c_str());
          return;
        }
        ++answered;
      }
    });
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  for (auto& t : threads)
    t.join();
  double s = seconds_since(t0);
  if (failures > 0)
    throw std::runtime_error("produce to " + topic + " failed");
  return static_cast<double>(answered.load()) * o.records / s;
}

/// "rounds R, syncfs S, fdatasyncs F" summed over the node's I/O workers.
std::string sync_counts(uint16_t admin) {
  auto j = json::parse(http_call(admin, "GET", "/admin/actors", {}, {}, std::chrono::seconds(60)).body, nullptr, false);
  long rounds = 0, syncfs = 0, fdatasyncs = 0;
  if (!j.is_discarded() && j.contains("actors"))
    for (const auto& a : j["actors"])
      if (a.value("kind", "") == "io_worker" && a.contains("state") && a["state"].is_object()) {
        rounds += a["state"].value("sync_rounds", 0L);
        syncfs += a["state"].value("syncfs_calls", 0L);
        fdatasyncs += a["state"].value("fdatasyncs", 0L);
      }
  return "rounds " + std::to_string(rounds) + ", syncfs " + std::to_string(syncfs) + ", fdatasyncs "
         + std::to_string(fdatasyncs);
}

void spread(const options& o, const std::string& work) {
  node_child node{o.node, work + "/spread"};
  for (auto [name, count] : {std::pair<std::string, int>{"one", 1}, std::pair<std::string, int>{"wide", o.wide}}) {
    auto r = http_call(node.client_port, "POST", "/v1/topics", json{{"name", name}, {"partitions", count}}.dump(), {},
                       std::chrono::seconds(60));
    if (r.status != 201)
      throw std::runtime_error("create " + name + ": " + std::to_string(r.status) + " " + r.body);
  }
  if (!produce_until_served(node.client_port, "wide", o.wide - 1, "x", std::chrono::seconds(60)))
    throw std::runtime_error("wide never served");
  auto before = sync_counts(node.admin_port);
  double one = produce_rate(o, node.client_port, "one", 1);
  auto after_one = sync_counts(node.admin_port);
  double wide = produce_rate(o, node.client_port, "wide", o.wide);
  auto after_wide = sync_counts(node.admin_port);
  std::printf("spread: acks=leader, %d connections, %d records of %zu bytes per request, %d s each\n", o.connections,
              o.records, o.value_bytes, o.seconds);
  std::printf("  I/O workers before  : %s\n", before.c_str());
  std::printf("  one partition       : %10.0f records/s  (workers after: %s)\n", one, after_one.c_str());
  std::printf("  %5d partitions     : %10.0f records/s  (workers after: %s)\n", o.wide, wide, after_wide.c_str());
  std::printf("  ratio wide/one      : %10.2f\n", wide / one);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (int rc = moonmq::bench::parse_node_options(
        argc, argv, usage, o,
        {{"--topics", &o.topics}, {"--partitions", &o.partitions}, {"--sample", &o.sample},
         {"--idle-seconds", &o.idle_seconds}, {"--connections", &o.connections}, {"--records", &o.records},
         {"--value-bytes", &o.value_bytes}, {"--wide", &o.wide}, {"--seconds", &o.seconds},
         {"--skip-scale", &o.skip_scale}, {"--skip-spread", &o.skip_spread}});
      rc != 0)
    return rc;
  if (o.topics <= 0 || o.partitions <= 0 || o.sample <= 0 || o.connections <= 0 || o.records <= 0 || o.wide <= 0
      || o.seconds <= 0 || o.idle_seconds <= 0) {
    std::fprintf(stderr, "counts must be positive\n");
    return 2;
  }
  std::string work = o.dir + "/moonmq-scale-bench-" + std::to_string(::getpid());
  fs::create_directories(work);
  std::printf("scale_bench node=%s dir=%s\n", o.node.c_str(), o.dir.c_str());
  int rc = 0;
  try {
    if (!o.skip_scale)
      scale(o, work);
    if (!o.skip_spread)
      spread(o, work);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scale_bench: %s\n", e.what());
    rc = 1;
  }
  fs::remove_all(work);
  return rc;
}

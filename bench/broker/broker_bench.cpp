// One moonmq-node through its client HTTP API, against the disk's limit.
//
// 1. produce: `--connections` keep-alive connections post requests of
//    `--records` records with `--value-bytes` values (text) to one topic with
//    `--partitions` partitions, acks=leader, until `--requests` requests were
//    answered. Figures: records/s and MB/s of values, and the log bytes the
//    node wrote (its data dir grew by that much) per second.
//    Physical limit, measured in the same run on the same disk: sequential
//    write(2) of the same number of log bytes in request-sized chunks with an
//    fdatasync after each chunk (bench/storage/log_bench.cpp's raw limit).
//    ratio = broker MB/s / raw MB/s (log bytes); with group commit several
//    requests share one fsync, so the ratio can exceed 1.
// 2. fetch: the same connections read every partition from offset 0 with
//    `--records` records per fetch (answers come from the page cache).
// Both run once per body form of `--forms` (default json,binary; topic
// bench-<form>): JSON bodies and answers, or application/vnd.moonmq.records.v1
// (docs/client-api.md "Binary records"), with the binary/JSON ratios of
// the same run.
// 3. idle RSS: a fresh node, VmRSS and thread count before and after
//    creating `--idle-topics` x `--idle-partitions` partitions.
//
// MB = 10^6 bytes. The node's data dirs live under `--dir` (default: the
// current directory), which is also where the raw limit is measured.
//
// Usage: broker_bench [--node PATH] [--dir D] [--connections C] [--partitions P]
//                     [--requests N] [--records R] [--value-bytes V]
//                     [--idle-topics T] [--idle-partitions Q] [--forms json,binary]

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/client_api.hpp"
#include "bench/common/node_child.hpp"
#include "bench/common/node_options.hpp"
#include "bench/common/raw_disk.hpp"
#include "dataplane/records_binary.hpp"
#include "net/blocking_client.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using moonmq::bench::node_child;
using moonmq::bench::proc_status;
using moonmq::transport::http_connection;

namespace {

struct options : moonmq::bench::node_options, moonmq::bench::produce_load {
  options() { connections = 4; }
  int partitions = 1;
  int requests = 200;
  int idle_topics = 10;
  int idle_partitions = 100;
  std::string forms = "json,binary";  ///< body forms to run, in order
  std::vector<std::string> form_list;
};

constexpr const char* usage =
  "usage: broker_bench [--node PATH] [--dir D] [--connections C] [--partitions P]\n"
  "                    [--requests N] [--records R] [--value-bytes V]\n"
  "                    [--idle-topics T] [--idle-partitions Q] [--forms json,binary]\n";

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// A field of /proc/<pid>/status as a number (kB for VmRSS).
uint64_t dir_bytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      total += e.file_size();
  return total;
}

/// Seconds to write `chunks` chunks of `chunk_bytes` sequentially with an
/// fdatasync after each (the raw limit of bench/storage/log_bench.cpp).
double raw_write(const std::string& path, size_t chunk_bytes, int chunks) {
  std::string chunk(chunk_bytes, '\0');
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& c : chunk) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return moonmq::bench::raw_write_seconds(path, chunk, chunks);
}

/// The fsync count of every partition of `topic`, from the admin actor list
/// (each partition's state), or -1.
long fsyncs_of(uint16_t admin, const std::string& topic) {
  auto list = moonmq::transport::http_call(admin, "GET", "/admin/actors");
  auto j = json::parse(list.body, nullptr, false);
  if (j.is_discarded() || !j.contains("actors"))
    return -1;
  long total = -1;
  for (const auto& a : j["actors"]) {
    if (a.value("kind", "") != "partition" || a.value("name", "").rfind("partition " + topic + "-", 0) != 0)
      continue;
    if (a.contains("state") && a["state"].is_object() && a["state"].contains("fsyncs"))
      total = std::max(total, 0L) + a["state"]["fsyncs"].get<long>();
  }
  return total;
}

/// One body form's run: its topic and figures.
struct form_run {
  std::string form;  ///< json | binary
  std::string topic;
  double produce_s = 0;
  double log_bytes = 0;
  long fsyncs = -1;
  double fetch_s = 0;
  int64_t fetched = 0;
  int64_t fetched_bytes = 0;  ///< answer bodies
};

/// The produce bodies of each connection in the run's form.
std::vector<std::string> bodies_of(const options& o, const std::string& form) {
  std::vector<std::string> bodies;
  for (int c = 0; c < o.connections; ++c) {
    if (form == "json") {
      bodies.push_back(moonmq::bench::records_body(o, c));
      continue;
    }
    std::string body;
    moonmq::dataplane::produce_body_writer w{body};
    for (const auto& v : moonmq::bench::request_values(o, c))
      w.add(-1, std::nullopt, v);
    w.finish();
    bodies.push_back(std::move(body));
  }
  return bodies;
}

/// Posts `o.requests` requests over `o.connections` connections to the
/// run's topic; returns the seconds taken. Throws when a request fails.
double produce(uint16_t port, const options& o, const form_run& run) {
  auto bodies = bodies_of(o, run.form);
  moonmq::transport::header_list headers{
    {"Content-Type", run.form == "json" ? "application/json" : std::string(moonmq::dataplane::records_binary_type)}};
  std::atomic<int> next_request{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  auto t0 = clock_type::now();
  for (int c = 0; c < o.connections; ++c)
    threads.emplace_back([&, c] {
      http_connection conn{"127.0.0.1", port};
      while (next_request.fetch_add(1) < o.requests) {
        auto res = conn.call("POST", "/v1/topics/" + run.topic + "/records?acks=leader",
                             bodies[static_cast<size_t>(c)], std::chrono::seconds(60), headers);
        if (res.status != 200 && failures++ == 0)
          std::fprintf(stderr, "produce failed: %d %s %s\n", res.status, res.body.c_str(), res.error.c_str());
      }
    });
  for (auto& t : threads)
    t.join();
  double seconds = seconds_since(t0);
  if (failures > 0)
    throw std::runtime_error(std::to_string(failures.load()) + " produce requests failed");
  return seconds;
}

/// Fetch: partitions shared out over the connections; each connection
/// reads its partitions from 0 to the end, repeatedly, until `target`
/// records were read. Fills the run's fetch figures; throws on a failure.
void fetch(uint16_t port, const options& o, form_run& run, int64_t target) {
  const bool binary = run.form == "binary";
  moonmq::transport::header_list accept;
  if (binary)
    accept = {{"Accept", std::string(moonmq::dataplane::records_binary_type)}};
  std::atomic<int64_t> read_records{0};
  std::atomic<int64_t> read_bytes{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  auto tf = clock_type::now();
  for (int c = 0; c < o.connections; ++c)
    threads.emplace_back([&, c] {
      http_connection conn{"127.0.0.1", port};
      int p = c % o.partitions;
      // Each connection starts at its own place so they do not read the same pages in lock step.
      auto offset = target / o.partitions * c / o.connections;
      moonmq::dataplane::fetched_page page;
      while (read_records.load() < target) {
        auto res = conn.call("GET", "/v1/topics/" + run.topic + "/partitions/" + std::to_string(p) + "/records?offset="
                                      + std::to_string(offset) + "&max_records=" + std::to_string(o.records),
                             {}, std::chrono::seconds(60), accept);
        if (res.status != 200) {
          if (failures++ == 0)
            std::fprintf(stderr, "fetch failed: %d %s %s\n", res.status, res.body.c_str(), res.error.c_str());
          return;
        }
        int64_t n = 0, log_end = 0;
        if (binary) {
          if (auto e = moonmq::dataplane::decode_fetch_binary(res.body, page)) {
            if (failures++ == 0)
              std::fprintf(stderr, "malformed fetch answer: %s\n", e.to_string().c_str());
            return;
          }
          n = static_cast<int64_t>(page.records.size());
          offset = page.next_offset;
          log_end = page.log_end_offset;
        } else {
          auto j = json::parse(res.body);
          n = static_cast<int64_t>(j["records"].size());
          offset = j["next_offset"].get<int64_t>();
          log_end = j["log_end_offset"].get<int64_t>();
        }
        read_records += n;
        read_bytes += static_cast<int64_t>(res.body.size());
        if (offset >= log_end) {
          p = (p + 1) % o.partitions;
          offset = 0;
        }
      }
    });
  for (auto& t : threads)
    t.join();
  run.fetch_s = seconds_since(tf);
  if (failures > 0)
    throw std::runtime_error("fetch failed");
  run.fetched = read_records.load();
  run.fetched_bytes = read_bytes.load();
}

int parse_args(int argc, char** argv, options& o) {
  if (int rc = moonmq::bench::parse_node_options(
        argc, argv, usage, o,
        {{"--connections", &o.connections}, {"--partitions", &o.partitions}, {"--requests", &o.requests},
         {"--records", &o.records}, {"--value-bytes", &o.value_bytes}, {"--idle-topics", &o.idle_topics},
         {"--idle-partitions", &o.idle_partitions}, {"--forms", &o.forms}});
      rc != 0)
    return rc;
  for (size_t at = 0; at <= o.forms.size();) {
    auto comma = std::min(o.forms.find(',', at), o.forms.size());
    auto form = o.forms.substr(at, comma - at);
    if (form != "json" && form != "binary") {
      std::fprintf(stderr, "--forms: '%s' is neither json nor binary\n", form.c_str());
      return 2;
    }
    o.form_list.push_back(form);
    at = comma + 1;
  }
  if (o.connections <= 0 || o.partitions <= 0 || o.requests <= 0 || o.records <= 0 || o.idle_topics < 0
      || o.idle_partitions <= 0) {
    std::fprintf(stderr, "counts must be positive\n");
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (int rc = parse_args(argc, argv, o); rc != 0)
    return rc;
  std::string work = o.dir + "/moonmq-broker-bench-" + std::to_string(::getpid());
  fs::create_directories(work);
  std::printf("broker_bench node=%s dir=%s connections=%d partitions=%d requests=%d records=%d value_bytes=%zu "
              "forms=%s\n",
              o.node.c_str(), o.dir.c_str(), o.connections, o.partitions, o.requests, o.records, o.value_bytes,
              o.forms.c_str());
  int rc = 0;
  try {
    // --- produce and fetch --------------------------------------------------------
    {
      node_child node{o.node, work + "/run"};
      auto data_dir = work + "/run/data";
      std::vector<form_run> runs;
      for (const auto& form : o.form_list) {
        form_run run;
        run.form = form;
        run.topic = "bench-" + form;
        auto created = moonmq::transport::http_call(
          node.client_port, "POST", "/v1/topics", json{{"name", run.topic}, {"partitions", o.partitions}}.dump());
        if (created.status != 201)
          throw std::runtime_error("create topic: " + std::to_string(created.status) + " " + created.body);
        auto bytes_before = dir_bytes(data_dir);
        run.produce_s = produce(node.client_port, o, run);
        run.log_bytes = static_cast<double>(dir_bytes(data_dir) - bytes_before);
        run.fsyncs = fsyncs_of(node.admin_port, run.topic);
        runs.push_back(run);
      }
      const double records = static_cast<double>(o.requests) * o.records;
      const double value_mb = records * static_cast<double>(o.value_bytes) / 1e6;
      // The same bytes, in request-sized chunks, fdatasync after each.
      auto chunk = static_cast<size_t>(runs.front().log_bytes / o.requests);
      double raw_s = raw_write(work + "/raw.bin", chunk, o.requests);
      if (raw_s < 0)
        throw std::runtime_error("raw write failed in " + work);
      for (auto& run : runs)
        fetch(node.client_port, o, run, static_cast<int64_t>(records));

      for (const auto& run : runs) {
        std::printf("produce %-6s acks=leader : %10.0f records/s %8.1f MB/s values %8.1f MB/s log  (%d requests in "
                    "%.2f s",
                    run.form.c_str(), records / run.produce_s, value_mb / run.produce_s,
                    run.log_bytes / run.produce_s / 1e6, o.requests, run.produce_s);
        if (run.fsyncs > 0)
          std::printf(", %ld fsyncs = %.2f requests/fsync", run.fsyncs, o.requests / static_cast<double>(run.fsyncs));
        std::printf(")\n");
      }
      std::printf("raw write+fdatasync        : %10.0f records/s %8.1f MB/s log  (%d chunks of %zu bytes in %.2f s)\n",
                  records / raw_s, runs.front().log_bytes / raw_s / 1e6, o.requests, chunk, raw_s);
      for (const auto& run : runs)
        std::printf("ratio %-6s broker/raw   : %10.2f\n", run.form.c_str(), raw_s / run.produce_s);
      for (const auto& run : runs) {
        auto fetched = static_cast<double>(run.fetched);
        std::printf("fetch %-6s              : %10.0f records/s %8.1f MB/s values %8.1f MB/s answers  (%.0f records "
                    "in %.2f s)\n",
                    run.form.c_str(), fetched / run.fetch_s, fetched * static_cast<double>(o.value_bytes) / run.fetch_s / 1e6,
                    static_cast<double>(run.fetched_bytes) / run.fetch_s / 1e6, fetched, run.fetch_s);
      }
      if (runs.size() == 2)
        std::printf("%s/%s records/s          : produce %.2f, fetch %.2f\n", runs[1].form.c_str(), runs[0].form.c_str(),
                    runs[0].produce_s / runs[1].produce_s,
                    (static_cast<double>(runs[1].fetched) / runs[1].fetch_s)
                      / (static_cast<double>(runs[0].fetched) / runs[0].fetch_s));
    }
    fs::remove_all(work + "/run");

    // --- idle partitions ----------------------------------------------------------
    {
      node_child node{o.node, work + "/idle"};
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      long rss0 = proc_status(node.pid(), "VmRSS");
      long threads0 = proc_status(node.pid(), "Threads");
      auto t0 = clock_type::now();
      for (int t = 0; t < o.idle_topics; ++t) {
        auto r = moonmq::transport::http_call(
          node.client_port, "POST", "/v1/topics",
          json{{"name", "idle-" + std::to_string(t)}, {"partitions", o.idle_partitions}}.dump(), {},
          std::chrono::seconds(60));
        if (r.status != 201)
          throw std::runtime_error("create idle topic: " + std::to_string(r.status) + " " + r.body);
      }
      double create_s = seconds_since(t0);
      std::this_thread::sleep_for(std::chrono::seconds(2));
      long rss1 = proc_status(node.pid(), "VmRSS");
      long threads1 = proc_status(node.pid(), "Threads");
      int n = o.idle_topics * o.idle_partitions;
      std::printf("idle node           : VmRSS %ld kB, %ld threads (no topics)\n", rss0, threads0);
      std::printf("idle partitions     : VmRSS %ld kB, %ld threads with %d partitions (%d x %d, created in %.2f s); "
                  "%.1f kB per partition\n",
                  rss1, threads1, n, o.idle_topics, o.idle_partitions, create_s,
                  n > 0 ? static_cast<double>(rss1 - rss0) / n : 0.0);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "broker_bench: %s\n", e.what());
    rc = 1;
  }
  fs::remove_all(work);
  return rc;
}

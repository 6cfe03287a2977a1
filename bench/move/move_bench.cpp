// A partition move between two moonmq-node processes on loopback, against
// the limit of the same bytes pushed over a socket without a broker.
//
// Setup: brokers b1 and b2 (one cluster, cluster token, BatchBytes =
// `--batch-bytes`), topic "bench" with one partition on b1, filled through
// the client API (acks=leader, `--connections` connections, requests of
// `--records` records with `--value-bytes` text values) until the
// partition's log holds at least `--bytes` bytes.
//
// Figures (MB = 10^6 bytes):
//  (a) limit: the partition's segment files, read from b1's data dir, sent
//      over one loopback TCP connection to a receiver thread that writes
//      them in `--batch-bytes` chunks to a file on the same disk and fsyncs
//      it at the end; MB/s from connect to the end of the fsync, the median
//      of three runs (the range is printed too).
//  (b) move copy: POST /admin/reassignments b1 → b2; bytes_total divided by
//      the time from the journal's `copying` to its `cutover` step, taken
//      from b1's log lines move.copying / move.cutover (millisecond stamps;
//      the 50 ms polling of GET /admin/reassignments is the fallback and is
//      printed too); ratio to (a).
//  (c) produce latency p50/p99/max of single-record acks=leader produces to
//      the moving partition through b1, one at a time on one keep-alive
//      connection: for `--latency-seconds` before the move, and from the
//      move's submission to its end.
//  (d) the longest produce stall around cutover: the largest latency of the
//      produces in flight between 250 ms before the cutover was first seen
//      and 250 ms after the move was seen done.
//
// Usage: move_bench [--node PATH] [--dir D] [--bytes N] [--batch-bytes B]
//                   [--value-bytes V] [--records R] [--connections C]
//                   [--latency-seconds S] [--throttle BYTES_PER_S] [--keep]
// --keep leaves the data dirs and node logs in <dir>/moonmq-move-bench-<pid>
// (they are kept anyway when the run fails).

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include "bench/common/client_api.hpp"
#include "bench/common/node_child.hpp"
#include "bench/common/node_options.hpp"
#include "tests/support/ports.hpp"
#include "net/blocking_client.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using moonmq::bench::node_child;
using moonmq::transport::http_call;
using moonmq::transport::http_connection;

namespace {

constexpr const char* token = "bench-token";

struct options : moonmq::bench::node_options, moonmq::bench::produce_load {
  options() { connections = 2; }
  int64_t bytes = int64_t{1} << 30;
  int64_t batch_bytes = 262144;
  double latency_seconds = 5;
  int64_t throttle = 0;
  int64_t window = 4;         ///< Cluster.MoveWindow of b1 (the measured move's source)
  int64_t return_window = 0;  ///< > 0: move the partition back with b2 at this window
  bool keep = false;  ///< keep the data dirs and node logs
};

constexpr const char* usage =
  "usage: move_bench [--node PATH] [--dir D] [--bytes N] [--batch-bytes B] [--value-bytes V]\n"
  "                  [--records R] [--connections C] [--latency-seconds S] [--throttle B/s]\n"
  "                  [--window W] [--return-window W] [--keep]\n";

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int parse_args(int argc, char** argv, options& o) {
  if (int rc = moonmq::bench::parse_node_options(
        argc, argv, usage, o,
        {{"--bytes", &o.bytes}, {"--batch-bytes", &o.batch_bytes}, {"--value-bytes", &o.value_bytes},
         {"--records", &o.records}, {"--connections", &o.connections}, {"--latency-seconds", &o.latency_seconds},
         {"--throttle", &o.throttle}, {"--window", &o.window}, {"--return-window", &o.return_window},
         {"--keep", &o.keep}});
      rc != 0)
    return rc;
  if (o.bytes <= 0 || o.batch_bytes < 1024 || o.value_bytes == 0 || o.records <= 0 || o.connections <= 0
      || o.latency_seconds <= 0 || o.throttle < 0 || o.window < 1 || o.window > 16 || o.return_window < 0
      || o.return_window > 16) {
    std::fprintf(stderr, "sizes and counts must be positive (--batch-bytes at least 1024, windows 1-16)\n");
    return 2;
  }
  return 0;
}

// --- fill ------------------------------------------------------------------------------

/// The partition's bytes on b1 from its cluster listener (-1 on error).
int64_t partition_bytes(uint16_t cluster_port) {
  auto r = http_call(cluster_port, "GET", "/cluster/partitions/bench/0/log-end", {}, {{"X-Cluster-Token", token}});
  auto j = json::parse(r.body, nullptr, false);
  if (r.status != 200 || !j.is_object() || !j.contains("size_bytes"))
    return -1;
  return j["size_bytes"].get<int64_t>();
}

/// Produces into bench/0 until its log holds `o.bytes`; returns seconds.
double fill(const options& o, uint16_t client, uint16_t cluster_port) {
  std::vector<std::string> bodies;
  for (int c = 0; c < o.connections; ++c)
    bodies.push_back(moonmq::bench::records_body(o, c, 0));
  std::atomic<bool> full{false};
  std::atomic<int> failures{0};
  auto t0 = clock_type::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < o.connections; ++c)
    threads.emplace_back([&, c] {
      http_connection conn{"127.0.0.1", client};
      while (!full) {
        auto r = conn.call("POST", "/v1/topics/bench/records?acks=leader", bodies[static_cast<size_t>(c)],
                           std::chrono::seconds(60));
        if (r.status != 200 && failures++ < 3)
          std::fprintf(stderr, "fill: produce answered %d %s %s\n", r.status, r.body.c_str(), r.error.c_str());
        if (failures > 20)
          full = true;
      }
    });
  while (!full) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (partition_bytes(cluster_port) >= o.bytes)
      full = true;
  }
  for (auto& t : threads)
    t.join();
  if (failures > 20)
    throw std::runtime_error("fill: too many failed produce requests");
  return seconds_between(t0, clock_type::now());
}

// --- (a) the limit ---------------------------------------------------------------------

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    auto w = ::write(fd, p, n);
    if (w <= 0)
      return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

/// Seconds to send `files` over loopback TCP to a receiver writing them in
/// `chunk` pieces to `out_path` with one fsync at the end; -1 on error.
double socket_copy_seconds(const std::vector<fs::path>& files, const std::string& out_path, size_t chunk) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return -1;
  std::atomic<bool> receiver_ok{false};
  clock_type::time_point received_at;
  std::thread receiver([&] {
    int s = ::accept(listener, nullptr, nullptr);
    int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (s < 0 || fd < 0)
      return;
    std::vector<char> buf(chunk);
    bool ok = true;
    for (;;) {
      // Fill one chunk (or what is left at the end), then write it.
      size_t have = 0;
      while (have < chunk) {
        auto n = ::read(s, buf.data() + have, chunk - have);
        if (n <= 0)
          break;
        have += static_cast<size_t>(n);
      }
      if (have > 0 && !write_all(fd, buf.data(), have))
        ok = false;
      if (have < chunk)
        break;
    }
    ok = ok && ::fsync(fd) == 0;
    received_at = clock_type::now();
    ::close(fd);
    ::close(s);
    receiver_ok = ok;
  });
  auto t0 = clock_type::now();
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok = s >= 0 && ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  std::vector<char> buf(chunk);
  for (const auto& f : files) {
    int in = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      ok = false;
      break;
    }
    for (;;) {
      auto n = ::read(in, buf.data(), chunk);
      if (n <= 0)
        break;
      if (!write_all(s, buf.data(), static_cast<size_t>(n))) {
        ok = false;
        break;
      }
    }
    ::close(in);
  }
  ::shutdown(s, SHUT_WR);
  receiver.join();
  ::close(s);
  ::close(listener);
  ::unlink(out_path.c_str());
  if (!ok || !receiver_ok)
    return -1;
  return seconds_between(t0, received_at);
}

// --- (c) and (d): the latency producer --------------------------------------------------

struct sample {
  clock_type::time_point start;
  double ms;
  bool ok;
};

class latency_producer {
public:
  explicit latency_producer(uint16_t client) : client_(client), thread_([this] { run(); }) {}
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
      auto r = conn.call("POST", "/v1/topics/bench/records?acks=leader", body, std::chrono::seconds(30));
      double ms = seconds_between(t0, clock_type::now()) * 1000;
      std::lock_guard lock{mu_};
      samples_.push_back({t0, ms, r.status == 200});
      if (r.status != 200 && errors_++ < 3)
        std::fprintf(stderr, "latency produce answered %d %s %s\n", r.status, r.body.c_str(), r.error.c_str());
    }
  }
  uint16_t client_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<sample> samples_;
  int errors_ = 0;
  std::thread thread_;
};

struct latency_stats {
  size_t n = 0;
  size_t failed = 0;
  double p50 = 0, p99 = 0, max = 0;
};

latency_stats stats_of(const std::vector<sample>& all, clock_type::time_point from, clock_type::time_point to) {
  std::vector<double> ms;
  latency_stats s;
  for (const auto& x : all)
    if (x.start >= from && x.start < to) {
      ms.push_back(x.ms);
      if (!x.ok)
        ++s.failed;
    }
  s.n = ms.size();
  if (ms.empty())
    return s;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * static_cast<double>(ms.size())))]; };
  s.p50 = at(0.5);
  s.p99 = at(0.99);
  s.max = ms.back();
  return s;
}

// --- (b) the move ---------------------------------------------------------------------

/// Milliseconds of the day of the first log line containing `event` followed
/// by a space (the pattern "%Y-%m-%dT%H:%M:%S.%e ..."), or nullopt.
std::optional<int64_t> log_stamp_ms(const std::string& log, const std::string& event) {
  auto at = log.find(" " + event + " ");
  if (at == std::string::npos)
    return std::nullopt;
  auto line = log.rfind('\n', at);
  line = line == std::string::npos ? 0 : line + 1;
  int h = 0, m = 0, s = 0, ms = 0;
  if (std::sscanf(log.c_str() + line, "%*4d-%*2d-%*2dT%2d:%2d:%2d.%3d", &h, &m, &s, &ms) != 4)
    return std::nullopt;
  return ((h * 60 + m) * 60 + s) * int64_t{1000} + ms;
}

bool past(const std::string& state, const std::string& step) {
  static const std::vector<std::string> order{"queued", "copying", "cutover", "draining", "offsets", "done"};
  auto a = std::find(order.begin(), order.end(), state);
  auto b = std::find(order.begin(), order.end(), step);
  return a != order.end() && b != order.end() && a >= b;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured, also in a file
  options o;
  if (int rc = parse_args(argc, argv, o); rc != 0)
    return rc;
  std::string work = o.dir + "/moonmq-move-bench-" + std::to_string(::getpid());
  fs::create_directories(work);
  std::printf("move_bench node=%s dir=%s bytes=%lld batch_bytes=%lld value_bytes=%zu records=%d connections=%d "
              "throttle=%lld window=%lld return_window=%lld\n",
              o.node.c_str(), o.dir.c_str(), static_cast<long long>(o.bytes), static_cast<long long>(o.batch_bytes),
              o.value_bytes, o.records, o.connections, static_cast<long long>(o.throttle),
              static_cast<long long>(o.window), static_cast<long long>(o.return_window));
  int rc = 0;
  try {
    auto p1 = moonmq::test::reserve_port(), p2 = moonmq::test::reserve_port(), c1 = moonmq::test::reserve_port(), c2 = moonmq::test::reserve_port();
    auto member = [&](const std::string& id, uint16_t port, uint16_t client, const std::string& peer, uint16_t peer_port,
                      uint16_t peer_client, int64_t window) {
      json peers = json::array({{{"Id", peer},
                                 {"Address", "127.0.0.1:" + std::to_string(peer_port)},
                                 {"ClientAddress", "127.0.0.1:" + std::to_string(peer_client)}}});
      return std::vector<std::string>{"Cluster.BrokerId=" + id,
                                      "Cluster.Port=" + std::to_string(port),
                                      "Cluster.Token=" + std::string(token),
                                      "Cluster.BatchBytes=" + std::to_string(o.batch_bytes),
                                      "Cluster.MoveThrottleBytesPerSec=" + std::to_string(o.throttle),
                                      "Cluster.MoveWindow=" + std::to_string(window),
                                      "Cluster.TopicPlacement=proposer",  // the moved topic starts on the source
                                      "Port=" + std::to_string(client),
                                      "Cluster.Peers=" + peers.dump()};
    };
    node_child b1{o.node, work + "/b1", member("b1", p1, c1, "b2", p2, c2, o.window)};
    node_child b2{o.node, work + "/b2",
                  member("b2", p2, c2, "b1", p1, c1, o.return_window > 0 ? o.return_window : o.window)};
    auto created = http_call(b1.client_port, "POST", "/v1/topics", R"({"name":"bench","partitions":1})");
    if (created.status != 201)
      throw std::runtime_error("create topic: " + std::to_string(created.status) + " " + created.body);

    double fill_s = fill(o, b1.client_port, p1);
    auto log_bytes = partition_bytes(p1);
    std::printf("fill                : %lld log bytes in %.2f s (%.1f MB/s through the client API)\n",
                static_cast<long long>(log_bytes), fill_s, static_cast<double>(log_bytes) / fill_s / 1e6);

    // (a) the limit: the same segment bytes over a loopback socket to a file.
    std::vector<fs::path> segments;
    uint64_t segment_bytes = 0;
    for (const auto& e : fs::directory_iterator(work + "/b1/data/bench-0"))
      if (e.path().extension() == ".log") {
        segments.push_back(e.path());
        segment_bytes += e.file_size();
      }
    std::sort(segments.begin(), segments.end());
    // Three runs, the median counts: the final fsync of a shared disk varies
    // a lot from one run to the next.
    std::vector<double> limit_runs;
    for (int run = 0; run < 3; ++run) {
      double s = socket_copy_seconds(segments, work + "/b2/limit.bin", static_cast<size_t>(o.batch_bytes));
      if (s <= 0)
        throw std::runtime_error("the socket copy of the segments failed");
      limit_runs.push_back(s);
    }
    std::sort(limit_runs.begin(), limit_runs.end());
    double limit_s = limit_runs[1];
    double limit_mbs = static_cast<double>(segment_bytes) / limit_s / 1e6;
    std::printf("limit socket+fsync  : %8.1f MB/s  (median of 3 runs, %.1f-%.1f MB/s; %zu segment files, %llu bytes in "
                "%.2f s, %lld-byte chunks, one fsync)\n",
                limit_mbs, static_cast<double>(segment_bytes) / limit_runs[2] / 1e6,
                static_cast<double>(segment_bytes) / limit_runs[0] / 1e6, segments.size(),
                static_cast<unsigned long long>(segment_bytes), limit_s, static_cast<long long>(o.batch_bytes));

    // (c) before the move.
    latency_producer lp{b1.client_port};
    auto t_before = clock_type::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.latency_seconds));

    // (b) the move.
    auto t_submit = clock_type::now();
    auto sub = http_call(b1.admin_port, "POST", "/admin/reassignments",
                         R"({"version":1,"partitions":[{"topic":"bench","partition":0,"replicas":["b2"]}]})");
    auto sub_body = json::parse(sub.body, nullptr, false);
    if (sub.status != 202 || !sub_body.is_object() || sub_body["accepted"].size() != 1)
      throw std::runtime_error("reassignment refused: " + std::to_string(sub.status) + " " + sub.body);
    std::optional<clock_type::time_point> t_copying, t_cutover, t_done;
    json row;
    auto deadline = t_submit + std::chrono::minutes(30);
    while (clock_type::now() < deadline) {
      auto r = http_call(b1.admin_port, "GET", "/admin/reassignments");
      auto now = clock_type::now();
      auto j = json::parse(r.body, nullptr, false);
      if (r.status == 200 && j.is_object())
        for (auto& x : j["reassignments"])
          if (x.value("topic", "") == "bench" && x.value("from", "") == "b1")
            row = x;
      auto state = row.is_object() ? row.value("state", "") : "";
      if (!t_copying && past(state, "copying"))
        t_copying = now;
      if (!t_cutover && past(state, "cutover"))
        t_cutover = now;
      if (state == "done") {
        t_done = now;
        break;
      }
      if (state == "failed" || state == "cancelled")
        throw std::runtime_error("the move ended " + state + ": " + row.dump());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!t_done)
      throw std::runtime_error("the move did not finish within 30 minutes: " + row.dump());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    lp.stop();

    auto bytes_total = row["bytes_total"].get<int64_t>();
    auto log1 = b1.log();
    auto copy_ms = log_stamp_ms(log1, "move.copying");
    auto cut_ms = log_stamp_ms(log1, "move.cutover");
    double poll_copy_s = seconds_between(*t_copying, *t_cutover);
    double copy_s = poll_copy_s;
    const char* source = "polling every 50 ms";
    if (copy_ms && cut_ms) {
      copy_s = static_cast<double>((*cut_ms - *copy_ms + 86400000) % 86400000) / 1000;
      source = "b1's log lines move.copying -> move.cutover";
    }
    double copy_mbs = static_cast<double>(bytes_total) / copy_s / 1e6;
    std::printf("move copy           : %8.1f MB/s  (bytes_total %lld in %.3f s, from %s; polling: %.3f s = %.1f MB/s)\n",
                copy_mbs, static_cast<long long>(bytes_total), copy_s, source, poll_copy_s,
                static_cast<double>(bytes_total) / poll_copy_s / 1e6);
    std::printf("ratio move/limit    : %8.2f\n", copy_mbs / limit_mbs);
    std::printf("move total          : %8.3f s from submission to done (polling)\n", seconds_between(t_submit, *t_done));
    if (cut_ms) {
      // The steps after the copy, from b1's log (ms after move.cutover).
      std::printf("after cutover (log) :");
      for (const char* step : {"move.draining", "move.offsets", "move.done"})
        if (auto at = log_stamp_ms(log1, step))
          std::printf(" %s +%lld ms", step + 5, static_cast<long long>((*at - *cut_ms + 86400000) % 86400000));
      std::printf("\n");
    }

    // (c) and (d).
    auto samples = lp.samples();
    auto before = stats_of(samples, t_before, t_submit);
    auto during = stats_of(samples, t_submit, *t_done);
    std::printf("produce before move : p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (%zu produces, %zu failed)\n",
                before.p50, before.p99, before.max, before.n, before.failed);
    std::printf("produce during move : p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (%zu produces, %zu failed)\n",
                during.p50, during.p99, during.max, during.n, during.failed);
    auto w0 = *t_cutover - std::chrono::milliseconds(250);
    auto w1 = *t_done + std::chrono::milliseconds(250);
    double stall = 0;
    size_t in_window = 0, failed_in_window = 0;
    for (const auto& s : samples) {
      auto end = s.start + std::chrono::microseconds(static_cast<int64_t>(s.ms * 1000));
      if (end >= w0 && s.start <= w1) {
        ++in_window;
        failed_in_window += s.ok ? 0 : 1;
        stall = std::max(stall, s.ms);
      }
    }
    std::printf("stall around cutover: %8.2f ms  (longest of %zu produces in flight from 250 ms before cutover to 250 "
                "ms after done, %zu failed)\n",
                stall, in_window, failed_in_window);

    // (e) the same partition moved back by b2 at --return-window: a
    // same-run comparison of two windows on the same bytes and disk.
    if (o.return_window > 0) {
      auto back = http_call(b2.admin_port, "POST", "/admin/reassignments",
                            R"({"version":1,"partitions":[{"topic":"bench","partition":0,"replicas":["b1"]}]})");
      if (back.status != 202)
        throw std::runtime_error("the move back was refused: " + std::to_string(back.status) + " " + back.body);
      json back_row;
      for (auto until = clock_type::now() + std::chrono::minutes(30); clock_type::now() < until;) {
        auto j = json::parse(http_call(b2.admin_port, "GET", "/admin/reassignments").body, nullptr, false);
        if (j.is_object())
          for (auto& x : j["reassignments"])
            if (x.value("topic", "") == "bench" && x.value("from", "") == "b2")
              back_row = x;
        auto state = back_row.is_object() ? back_row.value("state", "") : "";
        if (state == "failed" || state == "cancelled")
          throw std::runtime_error("the move back ended " + state + ": " + back_row.dump());
        if (state == "done")
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      auto log2 = b2.log();
      auto back_copy = log_stamp_ms(log2, "move.copying");
      auto back_cut = log_stamp_ms(log2, "move.cutover");
      if (!back_row.is_object() || back_row.value("state", "") != "done" || !back_copy || !back_cut)
        throw std::runtime_error("the move back did not finish: " + back_row.dump());
      double back_s = static_cast<double>((*back_cut - *back_copy + 86400000) % 86400000) / 1000;
      double back_mbs = static_cast<double>(back_row["bytes_total"].get<int64_t>()) / back_s / 1e6;
      std::printf("move back copy      : %8.1f MB/s  (window %lld, b2 -> b1, %.3f s from b2's log lines)\n", back_mbs,
                  static_cast<long long>(o.return_window), back_s);
      std::printf("ratio window %lld/%lld   : %8.2f  (move copy / move back copy)\n", static_cast<long long>(o.window),
                  static_cast<long long>(o.return_window), copy_mbs / back_mbs);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "move_bench: %s\n", e.what());
    rc = 1;
  }
  if (rc == 0 && !o.keep)
    fs::remove_all(work);
  else
    std::printf("data dirs and node logs kept in %s\n", work.c_str());
  return rc;
}

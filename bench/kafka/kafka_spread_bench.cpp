// Kafka produce to one partition against the same records spread over many
// partitions, measured at the broker (issue 15, "Performance": >= 0.8 for
// 1,000 partitions, 1 KiB records, fsync before ack).
//
// A librdkafka client spreading records costs the client itself about 2.5x
// the CPU of producing to one partition (kcat, bench/kafka/README.md), and
// on a 2-core machine that CPU is taken from the broker; so this benchmark
// sends pre-encoded ProduceRequests (v7, acks=-1) from a client that does
// nothing else: `--connections` connections, each keeping `--depth`
// requests in flight (Kafka pipelining, docs/kafka.md). A request carries
// `--records` records of `--value-bytes` bytes:
//   one : one partition, one batch of all the records;
//   wide: `--records` partitions of topic "wide" (`--wide` partitions,
//         taken in turn), one record each, as a client spreading records at
//         random with a short linger sends them.
// Each runs `--seconds`; every answer is decoded and must carry error 0 for
// every partition. Printed: records/s of each, the ratio wide/one of the
// same run, and the broker's CPU (utime+stime of the node) per record and
// per MB (10^6 bytes of record values). Then the disk's own
// floor, in the same directory: `--wide` files with one record appended to
// each and one syncfs, against one file
// with the same bytes appended and one fdatasync (20 rounds each, median),
// as records/s: what a sync round costs when each of its partitions holds
// one new record, whatever the broker does around it.
//
// Latency (issue 15: at 5,000 msg/s with 64 requests in flight, p99 <= 3 x
// the fdatasync p99 of the same run): first 2,000 appends of one record's
// bytes to a file in `--dir`, each followed by fdatasync; then the same
// paced load without a broker (group_commit_floor_ms: one thread writing
// and fdatasyncing every record due so far, latency from each record's
// due time); then one
// connection sends `--latency-rate` requests/s of one record each to topic
// "latency" (1 partition), each sent when due, at most 64 in flight. A
// request's latency runs from the moment it was due (not when it could be
// sent: a full window counts against the broker) to its answer.
//
// Usage: kafka_spread_bench [--node PATH] [--dir D] [--connections C] [--depth Q]
//                           [--records R] [--value-bytes V] [--wide W] [--seconds N]
//                           [--io-threads T] [--latency-rate R] [--latency-seconds S]

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/node_child.hpp"
#include "bench/common/node_options.hpp"
#include "kafka/codec.hpp"
#include "storage/record_batch.hpp"
#include "net/blocking_client.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;
using moonmq::transport::http_call;
using moonmq::bench::cpu_seconds;

struct options : moonmq::bench::node_options {
  int connections = 4;
  int depth = 16;
  int records = 100;
  size_t value_bytes = 1024;
  int wide = 1000;
  int seconds = 10;
  int io_threads = 4;  ///< Storage.IoThreads of the node
  int latency_rate = 5000;
  int latency_seconds = 10;  ///< 0 skips the latency run
};

constexpr const char* usage =
  "usage: kafka_spread_bench [--node PATH] [--dir D] [--connections C] [--depth Q]\n"
  "                          [--records R] [--value-bytes V] [--wide W] [--seconds N]\n"
  "                          [--io-threads T] [--latency-rate R] [--latency-seconds S]\n";

std::string batch_of(int n, size_t value_bytes, uint64_t salt) {
  std::vector<moonmq::storage::record> recs(static_cast<size_t>(n));
  uint64_t x = 0x2545F4914F6CDD1Dull + salt;
  for (auto& r : recs) {
    r.value.assign(value_bytes, 'a');
    for (auto& c : r.value) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>('a' + x % 26);
    }
  }
  auto b = moonmq::storage::encode_batch(recs);
  if (!b)
    throw std::runtime_error("cannot encode a batch");
  return b.value();
}

std::string frame_of(const moonmq::kafka::produce_request& p) {
  moonmq::kafka::request_header h;
  h.api_version = 7;
  h.correlation_id = 0;
  h.client_id = "kafka_spread_bench";
  auto f = moonmq::kafka::encode_request(h, p);
  if (!f)
    throw std::runtime_error("cannot encode a request: " + f.err().message);
  return f.value();
}

/// Pre-encoded requests of one run: `one` sends frames[0] again and again,
/// `wide` cycles through frames that together cover every partition.
std::vector<std::string> frames_for(const options& o, const std::string& topic, int partitions) {
  std::vector<std::string> frames;
  int per_request = partitions == 1 ? 1 : o.records;
  int count = partitions == 1 ? 1 : std::max(1, partitions / per_request) * 4;
  for (int f = 0; f < count; ++f) {
    moonmq::kafka::produce_request p;
    p.acks = -1;
    p.timeout_ms = 30000;
    p.topics.push_back({topic, {}});
    if (partitions == 1) {
      p.topics[0].partitions.push_back({0, batch_of(o.records, o.value_bytes, static_cast<uint64_t>(f))});
    } else {
      for (int i = 0; i < per_request; ++i)
        p.topics[0].partitions.push_back(
          {(f * per_request + i) % partitions, batch_of(1, o.value_bytes, static_cast<uint64_t>(f * per_request + i))});
    }
    frames.push_back(frame_of(p));
  }
  return frames;
}

int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error(std::string("connect to the Kafka listener: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0)
      throw std::runtime_error(std::string("write: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

void read_exact(int fd, char* out, size_t len) {
  size_t done = 0;
  while (done < len) {
    auto n = ::read(fd, out + done, len - done);
    if (n <= 0)
      throw std::runtime_error(n == 0 ? "the broker closed the connection" : std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

/// Reads one response frame and throws unless every partition in it has
/// error 0.
void read_answer(int fd, std::string& buf) {
  char len[4];
  read_exact(fd, len, 4);
  uint32_t size = (uint32_t(uint8_t(len[0])) << 24) | (uint32_t(uint8_t(len[1])) << 16)
                  | (uint32_t(uint8_t(len[2])) << 8) | uint32_t(uint8_t(len[3]));
  buf.resize(size);
  read_exact(fd, buf.data(), size);
  auto resp = moonmq::kafka::decode_response(moonmq::kafka::api_key::produce, 7, std::string_view(buf).substr(4));
  if (!resp)
    throw std::runtime_error("undecodable produce response");
  for (const auto& t : std::get<moonmq::kafka::produce_response>(*resp).topics)
    for (const auto& p : t.partitions)
      if (p.error_code != 0)
        throw std::runtime_error("produce to " + t.name + "/" + std::to_string(p.index) + " failed with error "
                                 + std::to_string(p.error_code));
}

struct run_result {
  double records_per_s = 0;
  double broker_cpu_per_1000 = 0;  ///< seconds
  double broker_cpu_per_mb = 0;    ///< seconds per 10^6 bytes of record values
};

run_result run(const options& o, const moonmq::bench::node_child& node, const std::string& topic, int partitions) {
  auto frames = frames_for(o, topic, partitions);
  std::atomic<long> answered{0};
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::string first_failure;
  std::vector<std::thread> threads;
  double cpu0 = cpu_seconds(node.pid());
  auto t0 = clock_type::now();
  for (int c = 0; c < o.connections; ++c)
    threads.emplace_back([&, c] {
      try {
        int fd = connect_to(node.kafka_port);
        std::string buf;
        size_t next = static_cast<size_t>(c);
        int in_flight = 0;
        for (; in_flight < o.depth; ++in_flight, next += static_cast<size_t>(o.connections))
          write_all(fd, frames[next % frames.size()]);
        while (in_flight > 0) {
          read_answer(fd, buf);
          --in_flight;
          ++answered;
          if (!stop.load()) {
            write_all(fd, frames[next % frames.size()]);
            next += static_cast<size_t>(o.connections);
            ++in_flight;
          }
        }
        ::close(fd);
      } catch (const std::exception& e) {
        if (failures++ == 0)
          first_failure = e.what();
        stop = true;
      }
    });
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  for (auto& t : threads)
    t.join();
  double s = std::chrono::duration<double>(clock_type::now() - t0).count();
  double cpu = cpu_seconds(node.pid()) - cpu0;
  if (failures > 0)
    throw std::runtime_error("produce to " + topic + ": " + first_failure);
  double records = static_cast<double>(answered.load()) * o.records;
  double mb = records * static_cast<double>(o.value_bytes) / 1e6;
  return {records / s, cpu / records * 1000.0, cpu / mb};
}

/// Median seconds of `rounds` rounds of `write_round` then `sync`.
template <class W, class S>
double median_round(int rounds, W write_round, S sync) {
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    write_round();
    auto t0 = clock_type::now();
    sync();
    t.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// The disk floor (see the header): records/s of `files` files x 1 record
/// per syncfs, and of 1 file x `files` records per fdatasync. Only the sync
/// is timed (the writes go to the page cache first), so both are upper
/// bounds.
std::pair<double, double> disk_floor(const std::string& dir, int files, size_t value_bytes) {
  std::filesystem::create_directories(dir);
  std::string rec(value_bytes, 'x');
  std::vector<int> fds;
  for (int i = 0; i < files; ++i) {
    int fd = ::open((dir + "/f" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
      throw std::runtime_error(std::string("disk floor: open: ") + std::strerror(errno));
    fds.push_back(fd);
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  auto sync_all = [&] {
    if (::syncfs(dfd) != 0)
      throw std::runtime_error(std::string("disk floor: syncfs: ") + std::strerror(errno));
  };
  sync_all();
  double spread = median_round(
    20, [&] { for (int fd : fds) write_all(fd, rec); }, sync_all);
  int one = ::open((dir + "/one").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (dfd < 0 || one < 0)
    throw std::runtime_error(std::string("disk floor: open: ") + std::strerror(errno));
  std::string all;
  for (int i = 0; i < files; ++i)
    all += rec;
  double single = median_round(20, [&] { write_all(one, all); }, [&] { ::fdatasync(one); });
  for (int fd : fds)
    ::close(fd);
  ::close(one);
  ::close(dfd);
  std::filesystem::remove_all(dir);
  return {files / spread, files / single};
}

/// p50, p99, p99.9 and max of `ms` (sorted in place).
std::vector<double> percentiles(std::vector<double>& ms) {
  std::sort(ms.begin(), ms.end());
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  auto at = [&](double q) {
    auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(ms.size())));
    return ms[std::min(ms.size() - 1, rank > 0 ? rank - 1 : 0)];
  };
  return {at(0.5), at(0.99), at(0.999), ms.back()};
}

/// Milliseconds of each of `rounds` appends of `bytes` bytes + fdatasync.
std::vector<double> fdatasync_ms(const std::string& dir, size_t bytes, int rounds) {
  std::filesystem::create_directories(dir);
  auto path = dir + "/fdatasync-latency";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw std::runtime_error(std::string("open ") + path + ": " + std::strerror(errno));
  std::string rec(bytes, 'x');
  std::vector<double> out;
  for (int i = 0; i < rounds; ++i) {
    auto t0 = clock_type::now();
    write_all(fd, rec);
    ::fdatasync(fd);
    out.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  }
  ::close(fd);
  std::filesystem::remove(path);
  return out;
}

/// The disk's own floor for the paced run (no broker): records of `bytes`
/// fall due at `rate` per second for `seconds`; one thread writes every
/// record due so far to a file in `dir` with one write and one fdatasync
/// (an ideal group commit), again and again. A record's latency runs from
/// its due time to the end of the fdatasync that covers it, as a produce's
/// does, so a slow flush counts once for every record due while it ran
/// (the one-at-a-time fdatasync above counts it once).
std::vector<double> group_commit_floor_ms(const std::string& dir, size_t bytes, int rate, int seconds) {
  std::filesystem::create_directories(dir);
  auto path = dir + "/group-commit-floor";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw std::runtime_error(std::string("open ") + path + ": " + std::strerror(errno));
  const long total = static_cast<long>(rate) * seconds;
  auto due = [start = clock_type::now(), rate](long i) {
    return start + std::chrono::nanoseconds(static_cast<int64_t>(1e9 * static_cast<double>(i) / rate));
  };
  std::string buf;
  std::vector<double> out;
  out.reserve(static_cast<size_t>(total));
  for (long done = 0; done < total;) {
    std::this_thread::sleep_until(due(done));
    auto now = clock_type::now();
    long upto = done + 1;
    while (upto < total && due(upto) <= now)
      ++upto;
    buf.assign(static_cast<size_t>(upto - done) * bytes, 'x');
    write_all(fd, buf);
    ::fdatasync(fd);
    auto end = clock_type::now();
    for (; done < upto; ++done)
      out.push_back(std::chrono::duration<double, std::milli>(end - due(done)).count());
  }
  ::close(fd);
  std::filesystem::remove(path);
  return out;
}

/// Milliseconds from due to answered of each request of the paced run.
std::vector<double> produce_latency_ms(const options& o, uint16_t port) {
  constexpr int window = 64;
  moonmq::kafka::produce_request p;
  p.acks = -1;
  p.timeout_ms = 30000;
  p.topics.push_back({"latency", {{0, batch_of(1, o.value_bytes, 7)}}});
  const auto frame = frame_of(p);
  const long total = static_cast<long>(o.latency_rate) * o.latency_seconds;
  int fd = connect_to(port);
  std::mutex mtx;
  std::condition_variable cv;
  std::deque<clock_type::time_point> due_times;  // of the requests in flight, in order
  std::vector<double> out;
  out.reserve(static_cast<size_t>(total));
  std::string failure;
  std::thread reader([&] {
    try {
      std::string buf;
      for (long i = 0; i < total; ++i) {
        read_answer(fd, buf);
        auto now = clock_type::now();
        std::lock_guard<std::mutex> g{mtx};
        out.push_back(std::chrono::duration<double, std::milli>(now - due_times.front()).count());
        due_times.pop_front();
        cv.notify_all();
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> g{mtx};
      failure = e.what();
      cv.notify_all();
    }
  });
  auto start = clock_type::now();
  for (long sent = 0; sent < total; ++sent) {
    auto due = start + std::chrono::nanoseconds(static_cast<int64_t>(1e9 * static_cast<double>(sent) / o.latency_rate));
    // Never before it is due; a late send keeps its due time.
    std::this_thread::sleep_until(due);
    std::unique_lock<std::mutex> g{mtx};
    cv.wait(g, [&] { return due_times.size() < window || !failure.empty(); });
    if (!failure.empty())
      break;
    due_times.push_back(due);
    g.unlock();
    write_all(fd, frame);
  }
  reader.join();
  ::close(fd);
  if (!failure.empty())
    throw std::runtime_error("latency run: " + failure);
  return out;
}

/// Waits until the node's logs are all open (moonmq_partitions_opening 0).
void wait_open(uint16_t admin) {
  auto deadline = clock_type::now() + std::chrono::seconds(120);
  while (clock_type::now() < deadline) {
    if (http_call(admin, "GET", "/metrics").body.find("moonmq_partitions_opening 0\n") != std::string::npos)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("the logs did not open within 120 s");
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (int rc = moonmq::bench::parse_node_options(
        argc, argv, usage, o,
        {{"--connections", &o.connections}, {"--depth", &o.depth}, {"--records", &o.records},
         {"--value-bytes", &o.value_bytes}, {"--wide", &o.wide}, {"--seconds", &o.seconds},
         {"--io-threads", &o.io_threads}, {"--latency-rate", &o.latency_rate},
         {"--latency-seconds", &o.latency_seconds}});
      rc != 0)
    return rc;
  if (o.latency_rate <= 0 || o.latency_seconds < 0 || o.io_threads <= 0 || o.connections <= 0 || o.depth <= 0 || o.records <= 0 || o.wide <= 0 || o.seconds <= 0 || o.value_bytes == 0) {
    std::fprintf(stderr, "every option must be positive\n%s", usage);
    return 2;
  }
  try {
    auto work = o.dir + "/kafka_spread_bench." + std::to_string(::getpid());
    int rc = 0;
    {
      moonmq::bench::node_child node{
        o.node, work, {"Kafka.Enabled=true", "Kafka.Host=127.0.0.1", "Kafka.Port=0", "Host=127.0.0.1",
                       "Storage.IoThreads=" + std::to_string(o.io_threads)}};
      if (node.kafka_port == 0)
        throw std::runtime_error("the node's Kafka listener did not report a port");
      for (auto [name, count] : {std::pair<std::string, int>{"one", 1}, std::pair<std::string, int>{"wide", o.wide}}) {
        auto r = http_call(node.client_port, "POST", "/v1/topics", json{{"name", name}, {"partitions", count}}.dump(),
                           {}, std::chrono::seconds(60));
        if (r.status != 201)
          throw std::runtime_error("create " + name + ": " + std::to_string(r.status) + " " + r.body);
      }
      wait_open(node.admin_port);
      auto one = run(o, node, "one", 1);
      auto wide = run(o, node, "wide", o.wide);
      std::vector<double> disk, floor, produce;
      if (o.latency_seconds > 0) {
        auto r = http_call(node.client_port, "POST", "/v1/topics", json{{"name", "latency"}, {"partitions", 1}}.dump(),
                           {}, std::chrono::seconds(60));
        if (r.status != 201)
          throw std::runtime_error("create latency: " + std::to_string(r.status) + " " + r.body);
        wait_open(node.admin_port);
        disk = fdatasync_ms(work + "/fdatasync", o.value_bytes, 2000);
        floor = group_commit_floor_ms(work + "/fdatasync", o.value_bytes, o.latency_rate, o.latency_seconds);
        produce = produce_latency_ms(o, node.kafka_port);
      }
      std::printf("kafka_spread_bench: ProduceRequest v7, acks=-1, %d connections x %d in flight, %d records of %zu B"
                  " per request, %d s each\n",
                  o.connections, o.depth, o.records, o.value_bytes, o.seconds);
      std::printf("  one partition       : %10.0f records/s   broker CPU %5.2f µs per record, %5.2f ms per MB\n",
                  one.records_per_s, one.broker_cpu_per_1000 * 1e3, one.broker_cpu_per_mb * 1e3);
      std::printf("  %5d partitions     : %10.0f records/s   broker CPU %5.2f µs per record, %5.2f ms per MB\n",
                  o.wide, wide.records_per_s, wide.broker_cpu_per_1000 * 1e3, wide.broker_cpu_per_mb * 1e3);
      std::printf("  ratio wide/one      : %10.2f\n", wide.records_per_s / one.records_per_s);
      if (!produce.empty()) {
        auto d = percentiles(disk);
        auto f = percentiles(floor);
        auto q = percentiles(produce);
        std::printf("latency (ms)                       count      p50      p99    p99.9      max\n");
        std::printf("  fdatasync of %6zu B           %7zu %8.2f %8.2f %8.2f %8.2f\n", o.value_bytes, disk.size(), d[0],
                    d[1], d[2], d[3]);
        std::printf("  group commit %5d/s, no broker %7zu %8.2f %8.2f %8.2f %8.2f\n", o.latency_rate, floor.size(),
                    f[0], f[1], f[2], f[3]);
        std::printf("  produce %5d/s, 64 in flight  %7zu %8.2f %8.2f %8.2f %8.2f\n", o.latency_rate, produce.size(),
                    q[0], q[1], q[2], q[3]);
        std::printf("  p99 produce / p99 fdatasync: %.2f; / p99 group commit without a broker: %.2f\n", q[1] / d[1],
                    q[1] / f[1]);
      }
    }
    auto [spread_floor, one_floor] = disk_floor(work + "/floor", o.wide, o.value_bytes);
    std::printf("disk floor (no broker): %d files x 1 record per syncfs %10.0f records/s; 1 file x %d records per "
                "fdatasync %10.0f records/s; ratio %.2f\n",
                o.wide, spread_floor, o.wide, one_floor, spread_floor / one_floor);
    std::filesystem::remove_all(work);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kafka_spread_bench: %s\n", e.what());
    return 1;
  }
}

// Kafka transactional produce against idempotent produce in the same run,
// through librdkafka's C API (issue 21, "Performance": transactional
// throughput at 100 records per transaction >= 0.7 of idempotent produce;
// commit latency p99 reported).
//
// txn_bench.py measures the same through python3-confluent-kafka with one
// process per producer; on 2 cores those processes take the CPU the broker
// needs from 4 producers on (bench/kafka/README.md). Here each producer is a
// thread of this process with its own rd_kafka_t, so the client's own cost
// is librdkafka's alone, and the client's and the broker's CPU are both
// printed.
//
// For each producer count P of `--producers`, in the same run:
//   idempotent   : `--records` records of `--value-bytes` bytes shared over P
//                  producers (enable.idempotence, acks=all), produced in a
//                  loop and flushed once per producer: the pipelined
//                  baseline.
//   transactional: the same records in transactions of `--per-txn` records
//                  (begin, K produces, commit_transaction, which returns
//                  once the markers are written), each producer with its own
//                  transactional id.
// Producer i writes to partition i mod `--partitions` of the topic. Every
// producer warms up outside the timed part (one flushed record; for the
// transactional one init_transactions and a transaction of one record, whose
// commit latency is printed as "first": librdkafka checks its coordinator
// connection on a one-second timer). A phase's time runs from the moment
// every producer is ready to the last one's end.
//
// Then a read_committed consumer reads every partition from the start: the
// run fails (exit 1) unless each partition holds as many records of the
// timed parts and warm-up records as were produced to it.
//
// Without `--bootstrap` the benchmark starts its own moonmq-node in `--dir`:
// one broker with a Cluster section and no peers (a one-voter metadata log,
// where transactions keep their coordinator state; docs/transactions.md),
// its Kafka listener on loopback.
//
// Usage: kafka_txn_bench [--node PATH] [--dir D] [--bootstrap HOST:PORT]
//                        [--records N] [--value-bytes B] [--per-txn K]
//                        [--producers 1,4,8] [--partitions N] [--linger-ms L]
//                        [--topic T] [--client-debug CONTEXTS]
// (--client-debug sets librdkafka's `debug` on the producers, e.g. "eos":
// its log goes to stderr.)

#include <sys/resource.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bench/common/latency_stats.hpp"
#include "bench/common/node_child.hpp"
#include "bench/common/node_options.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using moonmq::bench::cpu_seconds;
using moonmq::bench::percentile;

struct options : moonmq::bench::node_options {
  std::string bootstrap;
  int64_t records = 20000;
  size_t value_bytes = 1024;
  int per_txn = 100;
  std::string producers = "1,4,8";
  int partitions = 1;
  int linger_ms = 5;
  std::string topic;
  std::string client_debug;  ///< librdkafka `debug` contexts of the producers ("" = none)
};

const char* usage =
  "kafka_txn_bench [--node PATH] [--dir D] [--bootstrap HOST:PORT] [--records N] [--value-bytes B]\n"
  "                [--per-txn K] [--producers 1,4,8] [--partitions N] [--linger-ms L] [--topic T]\n"
  "                [--client-debug CONTEXTS]\n"
  "Transactional against idempotent Kafka produce through librdkafka, one thread per producer;\n"
  "without --bootstrap, against its own one-broker moonmq-node with a metadata log.\n";

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

struct client_deleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using client_ptr = std::unique_ptr<rd_kafka_t, client_deleter>;

/// A producer's delivery reports (its opaque): how many failed, and the
/// first failure's text.
struct deliveries {
  std::atomic<int64_t> failed{0};
  std::mutex mtx;
  std::string first_error;
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
    return;
  auto* d = static_cast<deliveries*>(opaque);
  if (d->failed.fetch_add(1) == 0) {
    std::lock_guard lock{d->mtx};
    d->first_error = rd_kafka_err2str(m->err);
  }
}

/// A librdkafka client of `type` with `props`; with `reports`, delivery
/// reports count failures there. Throws on a refused property.
client_ptr make_client(rd_kafka_type_t type, const std::vector<std::pair<std::string, std::string>>& props,
                       deliveries* reports = nullptr) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [key, value] : props)
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      fail(key + ": " + err);
    }
  if (reports != nullptr) {
    rd_kafka_conf_set_opaque(conf, reports);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);  // rd_kafka_new frees it only on success
    fail(std::string("rd_kafka_new: ") + err);
  }
  return client_ptr{rk};
}

/// Throws `what: <error>` when `e` is an error (and frees it).
void check(rd_kafka_error_t* e, const std::string& what) {
  if (e == nullptr)
    return;
  std::string text = what + ": " + rd_kafka_error_string(e);
  rd_kafka_error_destroy(e);
  fail(text);
}

/// Produces `n` records of `value` to `topic`/`partition`, waiting for room
/// when librdkafka's queue is full. `value` is not copied: it must outlive
/// the producer's flush.
void produce(rd_kafka_t* rk, const std::string& topic, int32_t partition, const std::string& value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    for (;;) {
      auto err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                                   RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                   RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
        break;
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
        fail(std::string("produce: ") + rd_kafka_err2str(err));
      rd_kafka_poll(rk, 10);
    }
    rd_kafka_poll(rk, 0);
  }
}

void flush(rd_kafka_t* rk, const deliveries& reports) {
  if (auto err = rd_kafka_flush(rk, 60000); err != RD_KAFKA_RESP_ERR_NO_ERROR)
    fail(std::string("flush: ") + rd_kafka_err2str(err));
  if (reports.failed.load() > 0)
    fail(std::to_string(reports.failed.load()) + " records not delivered, first: " + reports.first_error);
}

/// The clocks of a phase: releases its producers together once every one is
/// ready (running `on_open` then: the phase starts) and runs `on_close`
/// when the last one is finished (the phase ends). A producer that fails
/// before it is ready leaves, which counts as both, so the others still go.
class phase_gate {
public:
  phase_gate(int producers, std::function<void()> on_open, std::function<void()> on_close)
      : waiting_(producers), running_(producers), on_open_(std::move(on_open)), on_close_(std::move(on_close)) {}
  void ready() {
    std::unique_lock lock{mtx_};
    arrive_locked();
    cv_.wait(lock, [&] { return waiting_ == 0; });
  }
  void leave() {
    std::lock_guard lock{mtx_};
    arrive_locked();
    finish_locked();
  }
  void finish() {
    std::lock_guard lock{mtx_};
    finish_locked();
  }

private:
  void arrive_locked() {
    if (--waiting_ == 0) {
      on_open_();
      cv_.notify_all();
    }
  }
  void finish_locked() {
    if (--running_ == 0)
      on_close_();
  }
  std::mutex mtx_;
  std::condition_variable cv_;
  int waiting_;
  int running_;
  std::function<void()> on_open_;
  std::function<void()> on_close_;
};

struct producer_result {
  clock_type::time_point end;
  std::vector<double> commit_ms;
  double first_ms = 0;
  std::string error;
};

struct phase_result {
  double seconds = 0;
  double broker_cpu = 0;  ///< s of the broker's CPU in the timed part (own node only)
  double client_cpu = 0;  ///< s of this process's CPU in the timed part
  std::vector<double> commit_ms;
  double first_ms = 0;
};

double own_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

struct run_setup {
  const options& o;
  std::string bootstrap;
  std::string topic;
  pid_t broker = -1;  ///< the node this benchmark started, else -1
};

using properties = std::vector<std::pair<std::string, std::string>>;

/// `props` and what every producer of the run sets: bootstrap, linger.ms,
/// debug.
properties with_common(const run_setup& s, properties props) {
  props.emplace_back("bootstrap.servers", s.bootstrap);
  props.emplace_back("linger.ms", std::to_string(s.o.linger_ms));
  if (!s.o.client_debug.empty())
    props.emplace_back("debug", s.o.client_debug);
  return props;
}

/// One producer's place in its phase: the gate hears exactly once that it
/// is ready (or left before) and once that it finished, whatever throws.
class producer_turn {
public:
  producer_turn(phase_gate& gate, producer_result& out) : gate_(gate), out_(out) {}
  ~producer_turn() {
    if (!ready_)
      gate_.leave();
    else if (!finished_)
      gate_.finish();
  }
  producer_turn(const producer_turn&) = delete;
  producer_turn& operator=(const producer_turn&) = delete;
  /// Waits for every producer of the phase.
  void ready() {
    ready_ = true;
    gate_.ready();
  }
  /// The producer's part is done: its end time is now.
  void done() {
    out_.end = clock_type::now();
    finished_ = true;
    gate_.finish();
  }

private:
  phase_gate& gate_;
  producer_result& out_;
  bool ready_ = false;
  bool finished_ = false;
};

void idempotent_producer(const run_setup& s, int index, int64_t n, phase_gate& gate, producer_result& out) {
  producer_turn turn{gate, out};
  try {
    // The values outlive the client: librdkafka holds them (not copied)
    // until it is destroyed, also after a failed flush.
    const std::string warm = "warm";
    const std::string value(s.o.value_bytes, 'x');
    deliveries reports;
    auto rk = make_client(RD_KAFKA_PRODUCER,
                          with_common(s, {{"enable.idempotence", "true"}, {"acks", "all"}}), &reports);
    const int32_t partition = index % s.o.partitions;
    produce(rk.get(), s.topic, partition, warm, 1);
    flush(rk.get(), reports);
    turn.ready();
    produce(rk.get(), s.topic, partition, value, n);
    flush(rk.get(), reports);
    turn.done();
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

void transactional_producer(const run_setup& s, int index, int64_t n, phase_gate& gate, producer_result& out) {
  producer_turn turn{gate, out};
  try {
    const std::string warm = "warm";  // outlive the client, as above
    const std::string value(s.o.value_bytes, 'x');
    deliveries reports;
    auto rk = make_client(RD_KAFKA_PRODUCER,
                          with_common(s, {{"transactional.id", s.topic + "-" + std::to_string(index)}}), &reports);
    const int32_t partition = index % s.o.partitions;
    check(rd_kafka_init_transactions(rk.get(), 30000), "init_transactions");
    auto c0 = clock_type::now();
    check(rd_kafka_begin_transaction(rk.get()), "begin_transaction");
    produce(rk.get(), s.topic, partition, warm, 1);
    check(rd_kafka_commit_transaction(rk.get(), 60000), "commit_transaction");
    out.first_ms = moonmq::bench::ms_since(c0);
    turn.ready();
    for (int64_t left = n; left > 0;) {
      const int64_t k = std::min<int64_t>(s.o.per_txn, left);
      check(rd_kafka_begin_transaction(rk.get()), "begin_transaction");
      produce(rk.get(), s.topic, partition, value, k);
      c0 = clock_type::now();
      check(rd_kafka_commit_transaction(rk.get(), 60000), "commit_transaction");
      out.commit_ms.push_back(moonmq::bench::ms_since(c0));
      left -= k;
    }
    if (reports.failed.load() > 0)
      fail(std::to_string(reports.failed.load()) + " records not delivered, first: " + reports.first_error);
    turn.done();
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

using producer_fn = void (*)(const run_setup&, int, int64_t, phase_gate&, producer_result&);

/// Runs `producers` threads of `fn` over the records; throws the first
/// producer's error.
phase_result run_phase(const run_setup& s, producer_fn fn, int producers) {
  clock_type::time_point start;
  double broker0 = 0, client0 = 0;
  phase_result r;
  phase_gate gate{producers,
                  [&] {
                    start = clock_type::now();
                    broker0 = s.broker > 0 ? cpu_seconds(s.broker) : 0;
                    client0 = own_cpu_seconds();
                  },
                  [&] {
                    r.broker_cpu = s.broker > 0 ? cpu_seconds(s.broker) - broker0 : 0;
                    r.client_cpu = own_cpu_seconds() - client0;
                  }};
  std::vector<producer_result> results(static_cast<size_t>(producers));
  std::vector<std::thread> threads;
  for (int i = 0; i < producers; ++i) {
    const int64_t share = s.o.records / producers + (i < s.o.records % producers ? 1 : 0);
    threads.emplace_back(fn, std::cref(s), i, share, std::ref(gate), std::ref(results[static_cast<size_t>(i)]));
  }
  for (auto& t : threads)
    t.join();
  clock_type::time_point end = start;
  for (const auto& p : results) {
    if (!p.error.empty())
      fail(p.error);
    end = std::max(end, p.end);
    r.commit_ms.insert(r.commit_ms.end(), p.commit_ms.begin(), p.commit_ms.end());
    r.first_ms = std::max(r.first_ms, p.first_ms);
  }
  r.seconds = std::chrono::duration<double>(end - start).count();
  return r;
}

/// Asks for `topic` with `partitions` through CreateTopics (replication
/// factor 1; moonmq ignores it) and waits at most `timeout_ms`; the error
/// text, or "" when it was created.
std::string try_create_topic(const std::string& bootstrap, const std::string& topic, int partitions, int timeout_ms) {
  auto rk = make_client(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap}});
  char err[512];
  rd_kafka_NewTopic_t* spec = rd_kafka_NewTopic_new(topic.c_str(), partitions, 1, err, sizeof err);
  if (spec == nullptr)
    fail(std::string("CreateTopics: ") + err);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, err, sizeof err);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk.get());
  rd_kafka_CreateTopics(rk.get(), &spec, 1, opts, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
  std::string error;
  if (ev == nullptr) {
    error = "no answer";
  } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    error = rd_kafka_event_error_string(ev);
  } else {
    size_t n = 0;
    const rd_kafka_topic_result_t** topics =
      rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    if (n != 1 || rd_kafka_topic_result_error(topics[0]) != RD_KAFKA_RESP_ERR_NO_ERROR)
      error = n == 1 ? rd_kafka_err2str(rd_kafka_topic_result_error(topics[0])) : "no topic in the answer";
  }
  if (ev != nullptr)
    rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_NewTopic_destroy(spec);
  return error;
}

/// Creates `topic` (which must be new: the read-back counts every record in
/// it), trying again with a new client for about a minute: a broker that
/// has just started names no controller until its metadata log has elected
/// one, and librdkafka's admin client does not ask again soon. "Already
/// exists" on a later attempt means an earlier one created it.
void create_topic(const std::string& bootstrap, const std::string& topic, int partitions) {
  const std::string exists = rd_kafka_err2str(RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
  std::string error;
  for (int attempt = 0; attempt < 12; ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(std::chrono::seconds(1));
    error = try_create_topic(bootstrap, topic, partitions, 4000);
    if (error.empty() || (attempt > 0 && error == exists))
      return;
  }
  fail("CreateTopics " + topic + ": " + error);
}

/// Records read back per partition: of the timed parts, and warm-ups.
struct read_back {
  std::vector<int64_t> records;
  std::vector<int64_t> warm;
  bool operator==(const read_back& o) const { return records == o.records && warm == o.warm; }
};

/// Reads every partition of `topic` from the start at read_committed until
/// nothing arrives for 5 s.
read_back read_committed(const std::string& bootstrap, const std::string& topic, int partitions) {
  auto rk = make_client(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
                                            {"group.id", topic + "-check"},
                                            {"isolation.level", "read_committed"},
                                            {"enable.auto.commit", "false"}});
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  auto err = rd_kafka_assign(rk.get(), list);
  rd_kafka_topic_partition_list_destroy(list);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
    fail(std::string("assign: ") + rd_kafka_err2str(err));
  read_back r{std::vector<int64_t>(static_cast<size_t>(partitions)), std::vector<int64_t>(static_cast<size_t>(partitions))};
  for (int idle = 0; idle < 10;) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk.get(), 500);
    if (m == nullptr) {
      ++idle;
      continue;
    }
    idle = 0;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->partition >= 0 && m->partition < partitions) {
      auto at = static_cast<size_t>(m->partition);
      if (m->len == 4 && std::string_view(static_cast<const char*>(m->payload), 4) == "warm")
        ++r.warm[at];
      else
        ++r.records[at];
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk.get());
  return r;
}

/// What the read-back must find after the phases of `counts`: producer i
/// of P writes its share of the records (and one warm-up record) twice,
/// idempotently and in transactions, to partition i mod `partitions`.
read_back expected(const options& o, const std::vector<int>& counts) {
  read_back r{std::vector<int64_t>(static_cast<size_t>(o.partitions)),
              std::vector<int64_t>(static_cast<size_t>(o.partitions))};
  for (int p : counts)
    for (int i = 0; i < p; ++i) {
      auto at = static_cast<size_t>(i % o.partitions);
      r.records[at] += 2 * (o.records / p + (i < o.records % p ? 1 : 0));
      r.warm[at] += 2;
    }
  return r;
}

int64_t sum(const std::vector<int64_t>& v) {
  int64_t n = 0;
  for (auto x : v)
    n += x;
  return n;
}

std::vector<int> producer_counts(const std::string& text) {
  std::vector<int> out;
  std::stringstream in{text};
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) {
      int p = std::atoi(item.c_str());
      if (p <= 0)
        fail("--producers: '" + item + "' is not a positive count");
      out.push_back(p);
    }
  if (out.empty())
    fail("--producers: no producer count");
  return out;
}

int bench(const options& o, const std::string& bootstrap, pid_t broker) {
  const auto counts = producer_counts(o.producers);
  run_setup s{o, bootstrap, o.topic.empty() ? "txnbench-" + std::to_string(::getpid()) : o.topic, broker};
  create_topic(bootstrap, s.topic, o.partitions);
  const double mb = static_cast<double>(o.records) * static_cast<double>(o.value_bytes) / 1e6;
  std::printf("kafka_txn_bench: librdkafka %s, %lld records of %zu B, %d per transaction, topic %s with %d partition(s),"
              " linger.ms %d%s\n",
              rd_kafka_version_str(), static_cast<long long>(o.records), o.value_bytes, o.per_txn, s.topic.c_str(),
              o.partitions, o.linger_ms, broker > 0 ? ", own one-broker node" : "");
  std::printf("%-9s %-13s %10s %8s %6s %11s %11s\n", "producers", "path", "records/s", "MB/s", "ratio",
              "broker CPU", "client CPU");
  for (int p : counts) {
    auto idem = run_phase(s, idempotent_producer, p);
    auto txn = run_phase(s, transactional_producer, p);
    auto line = [&](const char* path, const phase_result& r, double ratio) {
      char broker_cpu[32] = "        -";  // not ours to measure with --bootstrap
      if (broker > 0)
        std::snprintf(broker_cpu, sizeof broker_cpu, "%9.2f s", r.broker_cpu);
      std::printf("%-9d %-13s %10.0f %8.1f %6.2f %11s %9.2f s\n", p, path, static_cast<double>(o.records) / r.seconds,
                  mb / r.seconds, ratio, broker_cpu, r.client_cpu);
    };
    line("idempotent", idem, 1.0);
    line("transactional", txn, idem.seconds / txn.seconds);
    std::printf("          commit_transaction ms (%zu transactions): p50 %.2f  p99 %.2f  max %.2f  first (warm-up) %.0f\n",
                txn.commit_ms.size(), percentile(txn.commit_ms, 0.5), percentile(txn.commit_ms, 0.99),
                moonmq::bench::max_of(txn.commit_ms), txn.first_ms);
    std::fflush(stdout);
  }
  auto seen = read_committed(bootstrap, s.topic, o.partitions);
  auto want = expected(o, counts);
  std::printf("read_committed: %lld records (expected %lld), %lld warm-up records (expected %lld)%s\n",
              static_cast<long long>(sum(seen.records)), static_cast<long long>(sum(want.records)),
              static_cast<long long>(sum(seen.warm)), static_cast<long long>(sum(want.warm)),
              seen == want ? ", every partition as expected" : ", NOT as expected per partition");
  return seen == want ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (int rc = moonmq::bench::parse_node_options(
        argc, argv, usage, o,
        {{"--bootstrap", &o.bootstrap}, {"--records", &o.records}, {"--value-bytes", &o.value_bytes},
         {"--per-txn", &o.per_txn}, {"--producers", &o.producers}, {"--partitions", &o.partitions},
         {"--linger-ms", &o.linger_ms}, {"--topic", &o.topic}, {"--client-debug", &o.client_debug}});
      rc != 0)
    return rc;
  if (o.records <= 0 || o.value_bytes == 0 || o.per_txn <= 0 || o.partitions <= 0 || o.linger_ms < 0) {
    std::fprintf(stderr, "--records, --value-bytes, --per-txn and --partitions must be positive, --linger-ms at "
                         "least 0\n%s", usage);
    return 2;
  }
  try {
    if (!o.bootstrap.empty())
      return bench(o, o.bootstrap, -1);
    auto work = o.dir + "/kafka_txn_bench." + std::to_string(::getpid());
    int rc = 0;
    {
      moonmq::bench::node_child node{o.node, work,
                                     {"Host=127.0.0.1", "Kafka.Enabled=true", "Kafka.Host=127.0.0.1", "Kafka.Port=0",
                                      "Cluster.BrokerId=b1", "Cluster.Port=0", "Cluster.Token=txn-bench"}};
      if (node.kafka_port == 0)
        throw std::runtime_error("the node's Kafka listener did not report a port");
      rc = bench(o, "127.0.0.1:" + std::to_string(node.kafka_port), node.pid());
    }
    std::filesystem::remove_all(work);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kafka_txn_bench: %s\n", e.what());
    return 1;
  }
}

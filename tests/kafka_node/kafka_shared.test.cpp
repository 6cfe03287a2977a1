// Shared storage under real Kafka clients (docs/shared-storage.md): kill -9
// of the broker owning a topic while an idempotent kcat producer (acks=all)
// writes to it. Its partitions fail over to the other brokers; the
// producer's every message is acknowledged once, at the offset the log
// holds it at; a kcat group consumer stopped before the kill and a second
// one started after the failover together consume every message exactly
// once: the second resumes from the offsets the first committed on the
// dead broker (carried forward in the shared directory). Label scenario.

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "tests/kafka_node/kafka_client.hpp"
#include "tests/kafka_node/kcat_run.hpp"
#include "tests/node/shared_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace moonmq::test::shared_storage;
using namespace std::chrono_literals;

TEST_CASE("kafka listener, shared storage: kill -9 of the owner under an idempotent kcat producer and a group "
          "consumer loses nothing and the group resumes from its committed offsets",
          "[kafka_cluster][shared]") {
  std::signal(SIGPIPE, SIG_IGN);
  temp_dir shared;
  auto config = shared_config(shared);
  config.push_back("Kafka.Enabled=true");
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  auto elected = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!elected)
    FAIL("no leader elected\n" << log_tails(c));
  const size_t leader = elected->first;
  const size_t victim = followers(leader).first;
  constexpr int partitions = 2;
  create_topic(c.client(victim), "F", partitions);
  for (int p = 0; p < partitions; ++p)
    REQUIRE(wait_until([&] { return owner_seen_by(c, leader, "F", p) == victim; }, 10s));
  auto addr = [&](size_t i) { return "127.0.0.1:" + std::to_string(c.kafka(i)); };
  const std::string group = "shared-failover";

  temp_dir dir("moonmq-kshared");
  std::string fifo = dir.path() + "/in";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto consumer_args = "-b " + addr(leader) + " -G " + group
                       + " -X auto.offset.reset=earliest -X auto.commit.interval.ms=100 -u -f '%p %o %s\\n' F";
  auto first = std::make_unique<kcat_run>(dir, "consumer1", consumer_args);
  // Bootstrapped at the leader, which lives: kcat follows the partitions'
  // leaders through Metadata. message.timeout.ms outlasts the failover.
  kcat_run producer(dir, "producer",
                    "-b " + addr(leader) + " -P -t F -K: -X enable.idempotence=true -X acks=all -X linger.ms=5"
                      " -X message.timeout.ms=60000 -X topic.metadata.refresh.interval.ms=500 -v -v",
                    fifo);
  auto diagnostics = [&] {
    auto e = producer.stderr_text();
    return "producer stderr (tail):\n" + (e.size() > 6000 ? e.substr(e.size() - 6000) : e) + "\n" + log_tails(c);
  };
  int fd = open_fifo_writer(fifo, 10s);
  {
    INFO(diagnostics());
    REQUIRE(fd >= 0);
  }
  constexpr int max_messages = 3000;
  fifo_feed feed(fd, producer, max_messages, 20ms);
  auto& written = feed.written;
  auto& write_failed = feed.write_failed;

  // The first consumer reads a while, then closes (committing its position
  // on the owner, the broker about to die).
  // Until it has read from every partition: a partition it never read
  // has no committed offset to resume from (a loaded machine can hold one
  // partition's first fetch back past the first 40 records of the other).
  auto read_every_partition = [&] {
    std::set<int32_t> seen;
    auto got = parse_consumed(first->stdout_text());
    for (const auto& r : got)
      seen.insert(r.partition);
    return (got.size() >= 40 && seen.size() == static_cast<size_t>(partitions)) || !first->proc.running();
  };
  REQUIRE(wait_until(read_every_partition, 30s));
  first->stop();
  auto consumed1 = parse_consumed(first->stdout_text());
  // Where the group resumes: the offsets it committed, which may be past
  // the last record kcat printed (a record fetched and stored just before
  // the SIGTERM).
  std::map<int32_t, int64_t> committed_before;
  std::string committed_text;
  INFO("the first consumer read " << consumed1.size() << " records; its stderr: " << first->stderr_text());
  CHECK(wait_until(
    [&] {
      auto a = call(c.client(leader), "GET", "/v1/groups/" + group + "/offsets?topic=F");
      committed_text = a.raw;
      committed_before.clear();
      if (a.status == 200 && a.body["offsets"].is_array())
        for (const auto& o : a.body["offsets"])
          committed_before[o.value("partition", -1)] = o.value("offset", int64_t{-1});
      return committed_before.size() == static_cast<size_t>(partitions);
    },
    10s));
  INFO("committed before the kill: " << committed_text);
  REQUIRE(committed_before.size() == static_cast<size_t>(partitions));
  for (const auto& r : consumed1)
    CHECK(r.offset < committed_before[r.partition]);

  int written_at_kill = written.load();
  c.kill(victim);
  const auto killed_at = clock_type::now();
  // Both partitions fail over to live brokers.
  std::map<int, size_t> heirs;
  CHECK(wait_until(
    [&] {
      for (int p = 0; p < partitions; ++p)
        if (auto o = owner_seen_by(c, leader, "F", p); o && *o != victim)
          heirs[p] = *o;
      return heirs.size() == static_cast<size_t>(partitions);
    },
    30s));
  std::printf("kafka failover: partitions of F owned again %.2f s after kill -9\n", seconds_since(killed_at));
  // Produce on for a while after the failover, then close the producer.
  CHECK(wait_until([&] { return written.load() >= written_at_kill + 150 || write_failed; }, 30s));
  feed.finish_at(written.load() + 20);
  const int n = written.load();
  auto prc = producer.proc.wait(70s);
  auto delivered = parse_delivered(producer.stderr_text());

  // The second consumer of the group, started after the failover.
  kcat_run second(dir, "consumer2", consumer_args);
  std::map<int32_t, partition_read> logs;
  for (auto [p, heir] : heirs)
    logs[p] = read_partition(c.client(heir), "F", p);
  // Every message is at an offset the first consumer committed past, or
  // read by the second.
  auto all_consumed = [&] {
    std::set<std::pair<int32_t, int64_t>> seen;
    for (const auto& r : parse_consumed(second.stdout_text()))
      seen.insert({r.partition, r.offset});
    for (auto& [p, log] : logs)
      for (auto& [off, rec] : log.records)
        if (off >= committed_before[p] && !seen.count({p, off}))
          return false;
    return true;
  };
  bool complete = wait_until(all_consumed, 30s);
  second.stop();
  auto consumed2 = parse_consumed(second.stdout_text());
  INFO(diagnostics() << "\nconsumer2 stderr:\n" << second.stderr_text());

  // The producer: every message acknowledged, none twice, each at its offset.
  CHECK_FALSE(write_failed.load());
  REQUIRE(prc.has_value());
  CHECK(*prc == 0);
  CHECK(count_of(producer.stderr_text(), "Delivery failed") == 0);
  CHECK(static_cast<int>(delivered.size()) == n);
  check_logs_hold_delivered(logs, delivered, n);

  // The group: the second consumer starts at the offsets committed on the
  // dead broker (never at 0, the reset policy's), so no message is
  // consumed twice and none is missed.
  std::map<int32_t, int64_t> first_of_second;
  std::map<std::pair<int32_t, int64_t>, int> times;
  for (const auto& r : consumed2) {
    if (!first_of_second.count(r.partition))
      first_of_second[r.partition] = r.offset;
    ++times[{r.partition, r.offset}];
  }
  for (auto [p, committed] : committed_before) {
    CAPTURE(p);
    CHECK(committed > 0);
    REQUIRE(first_of_second.count(p));
    CHECK(first_of_second[p] == committed);
  }
  int twice = 0;
  for (const auto& [at, k] : times)
    twice += k > 1;
  CHECK(twice == 0);
  CHECK(complete);
  WARN(n << " messages; consumer 1 read " << consumed1.size() << ", consumer 2 read " << consumed2.size());
}

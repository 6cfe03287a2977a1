// Issue 9's acceptance item on 3 brokers: across partition moves, a kcat
// idempotent producer and a kcat group consumer keep running; every
// acknowledged message is consumed, none is lost or written twice, and
// offsets are unchanged by the moves. Label scenario.

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cluster/group_placement.hpp"
#include "tests/kafka_node/kafka_client.hpp"
#include "tests/kafka_node/kcat_run.hpp"
#include "tests/node/move_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

/// A group id coordinated by broker `id` of `brokers` (cluster::group_coordinator).
std::string group_coordinated_by(const std::string& id, const std::vector<std::string>& brokers) {
  for (int n = 0;; ++n) {
    auto g = "kmove-" + std::to_string(n);
    if (cluster::group_coordinator(g, brokers) == id)
      return g;
  }
}

/// The scenario: brokers b1, b2, b3; topic M with 2 partitions created on b1
/// (a topic lives on the brokers that hold it, docs/cluster.md). An
/// idempotent kcat producer bootstrapped at b1 sends "m1".."mN" (keys "k<i>"
/// spread them over both partitions) one every 20 ms; a kcat group consumer
/// bootstrapped at broker `consumer_at`, in a group coordinated by broker
/// `coordinator`, runs all along. Partition 0 moves b1 → b2, then partition
/// 1 moves b1 → b3, each with traffic before and after. Then: kcat acknowledged
/// every message; the logs at the new owners hold each message exactly once,
/// in produce order, at the offset acknowledged to the producer; the consumer
/// saw every message, each at its offset in the log after the moves.
void moves_under_kcat(size_t consumer_at, size_t coordinator) {
  // A write to the fifo of a kcat that died must fail, not kill the test.
  std::signal(SIGPIPE, SIG_IGN);
  auto t0 = clock_type::now();
  move_cluster c({"b1", "b2", "b3"}, {"Kafka.Enabled=true"});
  // b1 copies 1 KiB requests at 8 kB/s: each move's copy takes one to three
  // seconds (the partitions hold 10-25 kB), with both clients running.
  c.launch(0, {"Cluster.BatchBytes=1024", "Cluster.MoveThrottleBytesPerSec=8000"});
  for (size_t i = 1; i < 3; ++i)
    c.launch(i);
  for (size_t i = 0; i < 3; ++i)
    c.wait_ready(i);
  auto addr = [&](size_t i) { return "127.0.0.1:" + std::to_string(c.kafka(i)); };
  create_topic(c.client(0), "M", 2);  // both partitions owned by b1
  {
    // b3's Metadata describes M as the metadata log created it (auto-creation
    // allowed, as a producer asks, must not create a second M on b3).
    std::string meta;
    CHECK(wait_until(
      [&] {
        meta = sh("timeout 20 kcat -b " + addr(2) + " -L -t M -X allow.auto.create.topics=true 2>&1").second;
        return meta.find("with 2 partitions") != std::string::npos;  // else retried (a slow survey: 5)
      },
      30s));
    INFO(meta);
    CHECK(meta.find("partition 1, leader 1") != std::string::npos);
    auto held = call(c.client(2), "GET", "/v1/topics");
    INFO(held.raw);
    CHECK(held.status == 200);
    CHECK(held.body["topics"] == json::parse(R"([{"name":"M","partitions":2}])"));
  }
  auto group = group_coordinated_by(c.id(coordinator), {"b1", "b2", "b3"});

  temp_dir dir("moonmq-kmove");
  std::string fifo = dir.path() + "/in";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // -u: each record is written out as it is consumed.
  kcat_run consumer(dir, "consumer",
                    "-b " + addr(consumer_at) + " -G " + group
                      + " -X auto.offset.reset=earliest -X auto.commit.interval.ms=100 -u -f '%p %o %s\\n' M");
  // -v -v: one delivery report per acknowledged message, with its offset.
  kcat_run producer(dir, "producer",
                    "-b " + addr(0) + " -P -t M -K: -X enable.idempotence=true -X acks=all -X linger.ms=5"
                      " -X message.timeout.ms=30000 -v -v",
                    fifo);
  auto diagnostics = [&] {
    auto e = producer.stderr_text();
    return "producer stderr (tail):\n" + (e.size() > 8000 ? e.substr(e.size() - 8000) : e) + "\nconsumer stderr:\n"
           + consumer.stderr_text() + "\n" + c.all_logs();
  };
  int fd = open_fifo_writer(fifo, 10s);
  {
    INFO(diagnostics());
    REQUIRE(fd >= 0);
  }

  // One message every 20 ms until told where to stop.
  constexpr int max_messages = 2000;
  fifo_feed feed(fd, producer, max_messages, 20ms);
  auto& written = feed.written;
  auto& write_failed = feed.write_failed;

  auto consumed_now = [&] { return parse_consumed(consumer.stdout_text()); };

  // Both clients are running before the first move: the consumer has
  // records from the producer.
  wait_until(
    [&] { return (written.load() >= 100 && consumed_now().size() >= 30) || !consumer.proc.running(); }, 20s);
  {
    INFO("group " << group << "\n" << diagnostics());
    REQUIRE(consumer.proc.running());
    REQUIRE(consumed_now().size() >= 30);
  }

  // Partition 0 b1 → b2, then partition 1 b1 → b3, with both clients running.
  std::map<int, json> rows;
  for (auto [partition, to] : {std::pair<int, const char*>{0, "b2"}, {1, "b3"}}) {
    auto sub = submit_move(c.admin(0), "M", partition, to);
    REQUIRE(sub["accepted"].size() == 1);
    rows[partition] = wait_move(c.admin(0), "M", partition, "b1", {"done"}, 30s);
    {
      INFO(rows[partition].dump() << "\n" << diagnostics());
      REQUIRE(rows[partition].is_object());
      REQUIRE(rows[partition]["state"] == "done");
    }
    // Keep producing a while at the new owner before the next step.
    int done_at = written.load();
    CHECK(wait_until([&] { return written.load() >= done_at + 50 || write_failed; }, 10s));
  }
  feed.finish_at(written.load() + 50);
  const int n = written.load();
  auto prc = producer.proc.wait(40s);
  auto delivered = parse_delivered(producer.stderr_text());

  // The group consumer sees every acknowledged message, then is stopped.
  auto unseen_in = [n](const std::vector<consumed_record>& consumed) {
    std::set<int> seen;
    for (const auto& r : consumed)
      seen.insert(message_number(r.value));
    std::vector<int> unseen;
    for (int i = 1; i <= n; ++i)
      if (!seen.count(i))
        unseen.push_back(i);
    return unseen;
  };
  bool complete = wait_until([&] { return unseen_in(consumed_now()).empty(); }, 20s);
  auto crc = consumer.stop();
  auto consumed = consumed_now();
  INFO(diagnostics());
  INFO("consumer exit " << (crc ? std::to_string(*crc) : "none") << ", " << consumed.size() << " records consumed");

  CHECK_FALSE(write_failed.load());
  REQUIRE(prc.has_value());
  CHECK(*prc == 0);
  CHECK(count_of(producer.stderr_text(), "Delivery failed") == 0);
  // kcat exits 0 only when no delivery failed: every message is acknowledged.
  CHECK(static_cast<int>(delivered.size()) == n);

  // The logs after the moves, read at the new owners: p0 on b2, p1 on b3.
  std::map<int32_t, partition_read> logs;
  logs[0] = read_partition(c.client(1), "M", 0);
  logs[1] = read_partition(c.client(2), "M", 1);
  // None lost, none written twice, nothing else in the logs, each at the
  // offset acknowledged to the producer.
  check_logs_hold_delivered(logs, delivered, n);
  // Both partitions had traffic before and after their move.
  CHECK(logs[0].records.size() > 50);
  CHECK(logs[1].records.size() > 50);

  // Every acknowledged message was consumed, each at the offset the log
  // holds it at after the moves.
  int renumbered = 0;
  std::string wrong;
  for (const auto& r : consumed) {
    auto lp = logs.find(r.partition);
    bool same = lp != logs.end() && lp->second.records.count(r.offset)
                && lp->second.records.at(r.offset).value("value", "") == r.value;
    if (!same) {
      ++renumbered;
      if (wrong.size() < 2000)
        wrong += std::to_string(r.partition) + "@" + std::to_string(r.offset) + "=m"
                 + std::to_string(message_number(r.value)) + " ";
    }
  }
  auto unseen = unseen_in(consumed);
  INFO("not consumed: " << Catch::Detail::stringify(unseen) << "\nconsumed at another offset: " << wrong);
  CHECK(complete);
  CHECK(unseen.empty());
  CHECK(renumbered == 0);

  // The group's committed offsets (kept with each partition's owner, read
  // through b1) reached the log ends.
  std::string committed;
  CHECK(wait_until(
    [&] {
      auto a = call(c.client(0), "GET", "/v1/groups/" + group + "/offsets");
      committed = a.raw;
      if (a.status != 200 || !a.body["offsets"].is_array())
        return false;
      std::map<int32_t, int64_t> at;
      for (auto& o : a.body["offsets"])
        at[o.value("partition", -1)] = o.value("offset", int64_t{-1});
      return at[0] == logs[0].log_end && at[1] == logs[1].log_end;
    },
    10s));
  INFO("committed: " << committed);

  // Without Raft, b1 announced each move's new owner to the third broker:
  // b2's table names b3 for partition 1 (b2 coordinates case 2's group).
  std::string owners_seen;
  CHECK(wait_until(
    [&] {
      auto owners = cluster_call(c.cluster_port(1), "GET", "/cluster/owners");
      owners_seen = owners.raw;
      for (const auto& o : owners.body.value("owners", json::array()))
        if (o.value("topic", "") == "M" && o.value("partition", -1) == 1 && o.value("owner", "") == "b3")
          return true;
      return false;
    },
    10s));
  INFO(owners_seen);

  // Metadata names the new owners as leaders (b2 = node 2, b3 = node 3).
  auto [lrc, meta] = sh("timeout 20 kcat -b " + addr(0) + " -L -t M 2>&1");
  INFO(meta);
  CHECK(meta.find("partition 0, leader 2") != std::string::npos);
  CHECK(meta.find("partition 1, leader 3") != std::string::npos);

  double took = std::chrono::duration<double>(clock_type::now() - t0).count();
  auto move_s = [&](int p) {
    return (rows[p].value("updated_ms", int64_t{0}) - rows[p].value("started_ms", int64_t{0})) / 1000.0;
  };
  WARN(n << " messages, " << consumed.size() << " records consumed; moves took " << move_s(0) << " s and "
         << move_s(1) << " s; " << took << " s in all");
}

}  // namespace

TEST_CASE("kafka listener: a kcat producer and group consumer keep running across partition moves on 3 brokers",
          "[kafka_cluster][kafka_move]") {
  // The consumer bootstrapped at b1, the broker holding the topic, in a group
  // b1 coordinates.
  moves_under_kcat(0, 0);
}

// The consumer bootstrapped at b3, which holds no copy of M until partition
// 1 moves there, in a group b2 coordinates: b3's Metadata describes M from
// the brokers that hold it (and never auto-creates a second M), and the
// group's coordinator is found through it.
TEST_CASE("kafka listener: a kcat group consumer bootstrapped at a broker without the topic follows the moves",
          "[kafka_cluster][kafka_move]") {
  moves_under_kcat(2, 1);
}

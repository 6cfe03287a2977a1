// The Kafka listener on a 2-broker cluster (issue 9): Metadata lists both
// brokers' Kafka listeners (KafkaAddress) and names each partition's owner as
// its leader; after a partition move the old owner answers
// NOT_LEADER_OR_FOLLOWER and kcat, bootstrapped at the old owner, follows the
// partition to its new owner with offsets unchanged; an idempotent
// producer's resend after the move and after a restart of the new owner is
// recognised (its state moved with the partition's log). Label scenario.

#include <catch2/catch.hpp>

#include "tests/kafka_node/kafka_client.hpp"
#include "tests/node/move_cluster.hpp"
#include "tests/support/raw_http.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

/// The error code of a Produce v7 for `topic`/0 sent raw to `port`.
int raw_produce(uint16_t port, const std::string& topic) {
  return produce_error(raw_exchange(port, produce_frame(topic, one_record_batch("raw")), 1s));
}

/// (error code, base offset) of an idempotent one-record Produce v7 of
/// producer `pid` at `sequence` for `topic`/0 sent raw to `port`.
std::pair<int, int64_t> idempotent_produce(uint16_t port, const std::string& topic, int64_t pid, int32_t sequence) {
  auto batch = one_record_batch("idem-" + std::to_string(sequence), pid, sequence);
  return produce_result(raw_exchange(port, produce_frame(topic, batch), 5s));
}

}  // namespace

TEST_CASE("kafka listener: metadata follows a partition move and kcat follows it", "[kafka_cluster]") {
  move_cluster c({"b1", "b2"}, {"Kafka.Enabled=true"});
  c.start(0);
  c.start(1);
  auto b1 = "127.0.0.1:" + std::to_string(c.kafka(0));
  create_topic(c.client(0), "K", 1);
  auto [prc, pout] = sh("seq 1 100 | timeout 30 kcat -b " + b1 + " -P -t K -p 0 2>&1");
  REQUIRE(prc == 0);
  auto [lrc, meta] = sh("timeout 30 kcat -b " + b1 + " -L -t K 2>&1");
  INFO(meta);
  CHECK(meta.find("2 brokers") != std::string::npos);
  CHECK(meta.find("partition 0, leader 1") != std::string::npos);  // b1 = node 1 (sorted ids)

  auto sub = submit_move(c.admin(0), "K", 0, "b2");
  REQUIRE(sub["accepted"].size() == 1);
  auto row = wait_move(c.admin(0), "K", 0, "b1", {"done"}, 45s);
  INFO(row.dump() << "\n" << c.all_logs());
  REQUIRE(row.is_object());
  REQUIRE(row["state"] == "done");

  auto [lrc2, meta2] = sh("timeout 30 kcat -b " + b1 + " -L -t K 2>&1");
  INFO(meta2);
  CHECK(meta2.find("partition 0, leader 2") != std::string::npos);
  CHECK(raw_produce(c.kafka(0), "K") == 6);  // NOT_LEADER_OR_FOLLOWER at the old owner
  // kcat bootstrapped at b1 produces and consumes at b2; offsets unchanged.
  auto [prc2, pout2] = sh("seq 101 150 | timeout 30 kcat -b " + b1 + " -P -t K -p 0 2>&1");
  INFO(pout2);
  CHECK(prc2 == 0);
  auto [crc, records] = sh("timeout 30 kcat -b " + b1 + " -C -t K -o beginning -e -f '%o=%s\\n' 2>/dev/null");
  CHECK(lines(records).size() == 150);
  CHECK(records.find("0=1\n") == 0);
  CHECK(records.find("149=150\n") != std::string::npos);
  // A group consumer (coordinator found through either broker) reads the
  // moved partition at b2; its commit lands with the owner, where the HTTP
  // API reads it (through b1 too).
  for (std::string group : {"gk1", "gk2"}) {
    auto [grc, got] = sh("timeout 30 kcat -b " + b1 + " -G " + group
                         + " -X auto.offset.reset=earliest -X auto.commit.interval.ms=100 -c 150 -f '%s\n' K"
                           " 2>/dev/null");
    CHECK(lines(got).size() == 150);
    std::string last;
    CHECK(wait_until(
      [&] {
        auto a = call(c.client(0), "GET", "/v1/groups/" + group + "/offsets");
        last = a.raw;
        return a.status == 200 && a.body["offsets"].size() == 1 && a.body["offsets"][0]["offset"] == 150;
      },
      10s));
    INFO(group << ": " << last);
  }
}

TEST_CASE("kafka listener: an idempotent producer's state moves with the partition and survives a restart",
          "[kafka_cluster]") {
  move_cluster c({"b1", "b2"}, {"Kafka.Enabled=true"});
  c.start(0);
  c.start(1);
  create_topic(c.client(0), "I", 1);
  const int64_t pid = 4242;
  auto first = idempotent_produce(c.kafka(0), "I", pid, 0);
  REQUIRE(first.first == 0);
  auto second = idempotent_produce(c.kafka(0), "I", pid, 1);
  REQUIRE(second.first == 0);
  CHECK(idempotent_produce(c.kafka(0), "I", pid, 1) == second);  // a resend at the owner

  auto sub = submit_move(c.admin(0), "I", 0, "b2");
  REQUIRE(sub["accepted"].size() == 1);
  auto row = wait_move(c.admin(0), "I", 0, "b1", {"done"}, 45s);
  INFO(row.dump() << "\n" << c.all_logs());
  REQUIRE(row["state"] == "done");

  // At the new owner: the resend of either batch gets its first offset and
  // appends nothing; a gap is refused; the next sequence is appended.
  CHECK(idempotent_produce(c.kafka(1), "I", pid, 1) == second);
  CHECK(idempotent_produce(c.kafka(1), "I", pid, 0) == first);
  CHECK(idempotent_produce(c.kafka(1), "I", pid, 5).first == 45);  // OUT_OF_ORDER_SEQUENCE_NUMBER
  auto third = idempotent_produce(c.kafka(1), "I", pid, 2);
  CHECK(third == std::pair<int, int64_t>{0, second.second + 1});

  c.stop(1);
  c.restart(1);
  CHECK(idempotent_produce(c.kafka(1), "I", pid, 2) == third);  // rebuilt from the log
  auto read = read_partition(c.client(1), "I", 0);
  CHECK(read.log_end == third.second + 1);
}

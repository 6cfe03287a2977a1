// The Kafka listener on a 2-broker cluster (issue 9): Metadata lists both
// brokers' Kafka listeners (KafkaAddress) and names each partition's owner as
// its leader; after a partition move the old owner answers
// NOT_LEADER_OR_FOLLOWER and kcat, bootstrapped at the old owner, follows the
// partition to its new owner with offsets unchanged. Label scenario.

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

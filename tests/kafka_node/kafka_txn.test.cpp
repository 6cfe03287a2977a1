// Kafka transactions (KIP-98, docs/transactions.md) through real clients on
// three Raft brokers: librdkafka 2.0.2 (python3-confluent-kafka, Debian).
// A transaction spans three topics whose partitions three different brokers
// own; a read_committed consumer sees the committed records exactly once
// and no aborted one, a read_uncommitted consumer sees both, and a second
// producer with the same transactional id fences the first.

#include <catch2/catch.hpp>

#include <string>

#include "tests/kafka_node/kafka_client.hpp"
#include "tests/kafka_node/raft_kafka.hpp"
#include "tests/kafka_node/txn_support.hpp"
#include "tests/node/move_cluster.hpp"
#include "tests/support/raw_http.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

TEST_CASE("kafka transactions with librdkafka on three brokers: commit and abort across brokers, read_committed "
          "sees committed records once and no aborted one, a second producer fences the first",
          "[kafka_cluster][txn]") {
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  auto addr = [&](size_t i) { return "127.0.0.1:" + std::to_string(c.kafka(i)); };
  // One topic created through each broker: each broker owns one of them.
  for (size_t i = 0; i < 3; ++i) {
    auto a = call(c.client(i), "POST", "/v1/topics", nlohmann::json{{"name", "tx" + std::to_string(i)}}.dump());
    INFO(a.raw);
    REQUIRE(a.status == 201);
  }
  REQUIRE(wait_until([&] {
    for (size_t i = 0; i < 3; ++i) {
      auto a = call(c.client(2), "GET", "/v1/topics");
      if (a.status != 200 || a.raw.find("\"tx" + std::to_string(i) + "\"") == std::string::npos)
        return false;
    }
    return true;
  }, 10s));

  std::string py =
    "import sys\n"
    "from confluent_kafka import Producer, Consumer, TopicPartition, KafkaException\n"
    "bs = '" + addr(0) + "," + addr(1) + "," + addr(2) + "'\n"
    "topics = ['tx0', 'tx1', 'tx2']\n"
    "def producer():\n"
    "    return Producer({'bootstrap.servers': bs, 'transactional.id': 'app-1',\n"
    "                     'transaction.timeout.ms': 20000})\n"
    "def send(p, tag, n):\n"
    "    for i in range(n):\n"
    "        p.produce(topics[i % 3], value=('%s-%d' % (tag, i)).encode())\n"
    "p = producer()\n"
    "p.init_transactions(30)\n"
    "p.begin_transaction(); send(p, 'c1', 30); p.commit_transaction(30)\n"
    "p.begin_transaction(); send(p, 'ab', 30); p.flush(30); p.abort_transaction(30)\n"
    "p.begin_transaction(); send(p, 'c2', 30); p.commit_transaction(30)\n"
    "print('committed')\n"
    "z = producer()\n"
    "z.init_transactions(30)\n"
    "try:\n"
    "    p.begin_transaction(); send(p, 'zz', 3); p.commit_transaction(30)\n"
    "    print('zombie committed')\n"
    "except KafkaException as e:\n"
    "    print('zombie fenced', e.args[0].name())\n"
    "z.begin_transaction(); send(z, 'c3', 6); z.commit_transaction(30)\n"
    + python_reader() +
    "read('read_committed', 66)\n"
    "read('read_uncommitted', 96)\n";
  auto [rc, out] = python_script(c.data_dir(0), "txn.py", py);
  INFO("confluent-kafka transactions: " << out);
  REQUIRE(rc == 0);
  CHECK(out.find("committed\n") != std::string::npos);
  CHECK(out.find("zombie fenced") != std::string::npos);
  auto committed = lines_with(out, "read_committed ");
  auto expected = values("c1", 30);
  for (const auto& v : values("c2", 30))
    expected.insert(v);
  for (const auto& v : values("c3", 6))
    expected.insert(v);
  CHECK(committed == expected);  // each committed record once, no aborted one
  auto uncommitted = lines_with(out, "read_uncommitted ");
  for (const auto& v : values("ab", 30))
    CHECK(uncommitted.count(v) == 1);  // the aborted records are in the log
  for (const auto& v : expected)
    CHECK(uncommitted.count(v) == 1);
}

// Kafka transactions (KIP-98, docs/transactions.md) through real clients on
// three Raft brokers: librdkafka 2.0.2 (python3-confluent-kafka, Debian) and
// kafkajs 2.2.4. A transaction spans three topics whose partitions three
// different brokers own; a read_committed consumer sees the committed
// records exactly once and no aborted one, a read_uncommitted consumer sees
// both, a second producer with the same transactional id fences the first,
// offsets sent in a transaction are committed with it only, and a
// consume-transform-produce processor killed inside a transaction and
// restarted produces every output exactly once.

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/group_placement.hpp"
#include "tests/kafka_node/kafka_client.hpp"
#include "tests/kafka_node/raft_kafka.hpp"
#include "tests/kafka_node/txn_support.hpp"
#include "tests/node/move_cluster.hpp"
#include "tests/support/process.hpp"
#include "tests/support/raw_http.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

/// Creates topic names[i] through broker i (which then owns it) and waits
/// until broker 2 lists them all.
void create_topics(move_cluster& c, const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i) {
    auto a = call(c.client(i % 3), "POST", "/v1/topics", json{{"name", names[i]}}.dump());
    INFO(a.raw);
    REQUIRE(a.status == 201);
  }
  REQUIRE(wait_until([&] {
    auto a = call(c.client(2), "GET", "/v1/topics");
    if (a.status != 200)
      return false;
    for (const auto& name : names)
      if (a.raw.find("\"" + name + "\"") == std::string::npos)
        return false;
    return true;
  }, 10s));
}

/// The three brokers' Kafka listeners, "127.0.0.1:<port>,...".
std::string bootstrap(const move_cluster& c) {
  std::string out;
  for (size_t i = 0; i < 3; ++i)
    out += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(c.kafka(i));
  return out;
}

}  // namespace

TEST_CASE("kafka transactions with librdkafka on three brokers: commit and abort across brokers, read_committed "
          "sees committed records once and no aborted one, a second producer fences the first",
          "[kafka_cluster][txn]") {
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  // One topic created through each broker: each broker owns one of them.
  create_topics(c, {"tx0", "tx1", "tx2"});
  std::string py =
    "import sys\n"
    "from confluent_kafka import Producer, Consumer, TopicPartition, KafkaException\n"
    "bs = '" + bootstrap(c) + "'\n"
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

TEST_CASE("kafka transactions with kafkajs on three brokers: commit and abort across brokers, sendOffsets "
          "commits the group's offsets only with the transaction, read_committed sees committed records once",
          "[kafka_cluster][txn]") {
  // kafkajs 2.2.4 (tests/kafka_node/kafkajs_txn_check.js): transactions c1
  // (commit), ab (sendOffsets 50, abort) and c3 (sendOffsets 3/4/5, commit)
  // over three topics owned by three brokers.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  create_topics(c, {"kj0", "kj1", "kj2"});
  const int n = 12;  // records per transaction, 4 per topic
  auto [rc, out] = sh("NODE_PATH='" + npm_modules() + "' timeout 60 node " MOONMQ_SOURCE_DIR
                      "/tests/kafka_node/kafkajs_txn_check.js " + bootstrap(c) + " kj0,kj1,kj2 kjs-g " +
                      std::to_string(n) + " 2>&1");
  INFO("kafkajs: " << out);
  REQUIRE(rc == 0);
  auto result = json::parse(lines(out).empty() ? std::string("{}") : lines(out).back(), nullptr, false);
  REQUIRE(result.is_object());

  auto offsets = [](const json& list) {
    std::map<std::string, int64_t> m;
    for (const auto& o : list)
      m[o["topic"].get<std::string>()] = o["offset"].get<int64_t>();
    return m;
  };
  const std::map<std::string, int64_t> none{{"kj0", -1}, {"kj1", -1}, {"kj2", -1}};
  const std::map<std::string, int64_t> sent{{"kj0", 3}, {"kj1", 4}, {"kj2", 5}};
  CHECK(offsets(result["offsets_after_abort"]) == none);    // the aborted sendOffsets never shows
  CHECK(offsets(result["offsets_before_commit"]) == none);  // held by the coordinator until EndTxn
  CHECK(offsets(result["offsets_after_commit"]) == sent);
  // The same through HTTP, at a broker that is not necessarily the group's coordinator.
  auto http = call(c.client(2), "GET", "/v1/groups/kjs-g/offsets");
  INFO(http.raw);
  REQUIRE(http.status == 200);
  CHECK(offsets(json::parse(http.raw)["offsets"]) == sent);

  auto as_set = [](const json& list) {
    std::multiset<std::string> s;
    for (const auto& v : list)
      s.insert(v.get<std::string>());
    return s;
  };
  auto expected = values("c1", n);
  for (const auto& v : values("c3", n))
    expected.insert(v);
  CHECK(as_set(result["read_committed"]) == expected);  // each committed record once, no aborted one
  auto uncommitted = as_set(result["read_uncommitted"]);
  for (const auto& v : values("ab", n))
    CHECK(uncommitted.count(v) == 1);  // the aborted records are in the log
  for (const auto& v : expected)
    CHECK(uncommitted.count(v) == 1);
}

namespace {

/// A consume-transform-produce processor (librdkafka): reads "ctp-in"/0 in
/// group "ctp" (read_committed, no auto commit; assigned, so a restarted
/// processor does not wait for the killed member's session to expire) and,
/// per polled batch of up to 20 records, in one transaction produces
/// "out-<value>" to "ctp-out", sends the consumer's position as the group's
/// offsets and commits. Prints "open <count>" once the batch's records and
/// offsets are in the transaction and "committed <k>" after the k-th
/// commit; with `hang_after` >= 0 it stops after printing the open line of
/// batch hang_after + 1 (so it can be killed there). Exits 0 with "done"
/// once its position reaches `n`.
///   python3 ctp.py <bootstrap> <n> <hang_after>
const char* processor_py = R"(import sys, time
from confluent_kafka import Producer, Consumer, TopicPartition
bs, n, hang_after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p = Producer({'bootstrap.servers': bs, 'transactional.id': 'ctp-processor', 'transaction.timeout.ms': 30000})
p.init_transactions(30)
print('ready', flush=True)
c = Consumer({'bootstrap.servers': bs, 'group.id': 'ctp', 'isolation.level': 'read_committed',
              'enable.auto.commit': False, 'auto.offset.reset': 'earliest'})
c.assign([TopicPartition('ctp-in', 0)])
committed = 0
while c.position([TopicPartition('ctp-in', 0)])[0].offset < n:
    msgs = [m for m in c.consume(20, 0.5) if not m.error()]
    if not msgs:
        continue
    p.begin_transaction()
    for m in msgs:
        p.produce('ctp-out', value=b'out-' + m.value())
    p.flush(30)
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
    print('open', len(msgs), flush=True)
    if committed == hang_after:
        time.sleep(120)
    p.commit_transaction(30)
    committed += 1
    print('committed', committed, flush=True)
c.close()
print('done', flush=True)
)";

}  // namespace

TEST_CASE("kafka transactions with librdkafka on three brokers: consume-transform-produce is exactly once across "
          "a kill -9 of the processor inside an open transaction",
          "[kafka_cluster][txn]") {
  // Input and output topics are owned by different brokers. The first
  // processor commits two batches, adds a third batch's records and offsets
  // to a transaction and is killed (SIGKILL) there; the second, with the
  // same transactional id, fences it (InitProducerId aborts the open
  // transaction at epoch + 1), resumes from the last committed offset and
  // runs to the end. The output holds every "out-i" once for read_committed,
  // and the aborted batch's records in addition for read_uncommitted.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  create_topics(c, {"ctp-in", "ctp-out"});
  const int n = 300;
  const auto dir = c.data_dir(0);
  {
    auto [rc, out] = python_script(dir, "ctp_input.py",
                                   "from confluent_kafka import Producer\n"
                                   "p = Producer({'bootstrap.servers': '" + bootstrap(c) + "'})\n"
                                   "for i in range(" + std::to_string(n) + "):\n"
                                   "    p.produce('ctp-in', partition=0, value=str(i).encode())\n"
                                   "print('unflushed', p.flush(30))\n");
    INFO(out);
    REQUIRE(rc == 0);
    REQUIRE(out.find("unflushed 0") != std::string::npos);
  }
  {
    std::ofstream f(dir + "/ctp.py");
    f << processor_py;
  }
  auto run = [&](child_process& p, const std::string& log, int hang_after) {
    REQUIRE(p.start("/usr/bin/python3", {dir + "/ctp.py", bootstrap(c), std::to_string(n), std::to_string(hang_after)},
                    dir + "/" + log));
  };
  auto count = [](const std::string& text, const std::string& prefix) {
    return static_cast<int>(lines_with(text, prefix).size());
  };

  child_process first;
  run(first, "ctp1.log", 2);
  const bool opened = wait_until([&] { return count(read_text(dir + "/ctp1.log"), "open ") == 3; }, 30s);
  first.signal(SIGKILL);  // inside the third transaction: records and offsets added, not committed
  const auto killed = first.wait(5s);
  const auto log1 = read_text(dir + "/ctp1.log");
  INFO("first processor: " << log1);
  REQUIRE(opened);
  REQUIRE(killed == 128 + SIGKILL);
  REQUIRE(count(log1, "committed ") == 2);
  int aborted = 0;  // the open transaction's record count: the last "open" line
  for (const auto& line : lines(log1))
    if (line.rfind("open ", 0) == 0)
      aborted = std::stoi(line.substr(5));

  child_process second;
  run(second, "ctp2.log", -1);
  const auto finished = second.wait(40s);
  const auto log2 = read_text(dir + "/ctp2.log");
  INFO("second processor: " << log2);
  REQUIRE(finished == 0);
  REQUIRE(log2.find("done") != std::string::npos);

  auto [rc, out] = python_script(
    dir, "ctp_read.py",
    "from confluent_kafka import Consumer, TopicPartition\n"
    "def read(level, want):\n"
    "    c = Consumer({'bootstrap.servers': '" + bootstrap(c) + "', 'group.id': 'ctp-rd-' + level,\n"
    "                  'isolation.level': level, 'enable.auto.commit': False})\n"
    "    c.assign([TopicPartition('ctp-out', 0, 0)])\n"
    "    got, idle = [], 0\n"
    "    while idle < 4:\n"
    "        m = c.poll(0.5)\n"
    "        if m is None:\n"
    "            idle += 1 if len(got) >= want else 0\n"
    "        elif not m.error():\n"
    "            got.append(m.value().decode())\n"
    "    c.close()\n"
    "    for v in got:\n"
    "        print(level, v)\n"
    "read('read_committed', " + std::to_string(n) + ")\n"
    "read('read_uncommitted', " + std::to_string(n + aborted) + ")\n");
  INFO("readers: " << out);
  REQUIRE(rc == 0);
  CHECK(lines_with(out, "read_committed ") == values("out", n));  // every output once, none of the aborted batch
  // The aborted batch is in the log: the abort path ran, and only its records are extra.
  CHECK(count(out, "read_uncommitted ") == n + aborted);
  CHECK(aborted > 0);
  auto offsets = call(c.client(1), "GET", "/v1/groups/ctp/offsets");
  INFO(offsets.raw);
  CHECK(offsets.raw.find("\"offset\":" + std::to_string(n)) != std::string::npos);
}

namespace {

/// Four producers at once with transactional ids `ids` (10 transactions of
/// 5 records each) to topic `topic` through `bootstrap` of cluster `c`, then
/// checks: read_committed holds every record once; the raft node of broker
/// `coord` compacted its log under the load; no broker answered
/// InitProducerId, AddPartitionsToTxn or EndTxn with an error code.
/// Several producers so that proposals of several ids share a flush (the
/// proposer of an entry applied in the flush that compacts the log is
/// settled only after the compaction).
void transactions_under_compaction(move_cluster& c, size_t brokers, size_t coord, const std::string& bootstrap,
                                   const std::string& topic, const std::vector<std::string>& ids) {
  const int producers = static_cast<int>(ids.size()), transactions = 10, per = 5;
  const int total = producers * transactions * per;
  std::string id_list;
  for (const auto& id : ids)
    id_list += (id_list.empty() ? "'" : ", '") + id + "'";
  std::string py =
    "import threading\n"
    "from confluent_kafka import Producer, Consumer, TopicPartition\n"
    "bs = '" + bootstrap + "'\n"
    "topics = ['" + topic + "']\n"
    "ids = [" + id_list + "]\n"
    "def run(k):\n"
    "    p = Producer({'bootstrap.servers': bs, 'transactional.id': ids[k]})\n"
    "    p.init_transactions(30)\n"
    "    for t in range(" + std::to_string(transactions) + "):\n"
    "        p.begin_transaction()\n"
    "        for i in range(" + std::to_string(per) + "):\n"
    "            n = (k * " + std::to_string(transactions) + " + t) * " + std::to_string(per) + " + i\n"
    "            p.produce(topics[0], value=('c-%d' % n).encode())\n"
    "        p.commit_transaction(30)\n"
    "threads = [threading.Thread(target=run, args=(k,)) for k in range(len(ids))]\n"
    "for t in threads: t.start()\n"
    "for t in threads: t.join()\n"
    "print('committed')\n"
    + python_reader() +
    "read('read_committed', " + std::to_string(total) + ")\n";
  {
    auto [rc, out] = python_script(c.data_dir(coord), "compacting.py", py);
    INFO("confluent-kafka: " << out);
    REQUIRE(rc == 0);
    CHECK(out.find("committed\n") != std::string::npos);
    CHECK(lines_with(out, "read_committed ") == values("c", total));
  }

  // The log did compact under the transactions (else this test shows nothing).
  auto actors = call(c.admin(coord), "GET", "/admin/actors");
  REQUIRE(actors.body.contains("actors"));
  int64_t snapshot_index = -1;
  for (const auto& a : actors.body["actors"])
    if (a.value("kind", "") == "raft_node" && a["state"].is_object())
      snapshot_index = a["state"]["log"].value("snapshot_index", int64_t{-1});
  INFO(actors.raw);
  CHECK(snapshot_index > producers * transactions);

  // No transactional request was answered with an error code. On failure:
  // the series and, from the broker's log, what its coordinator and raft
  // node said of the transactions and of installed snapshots.
  for (size_t b = 0; b < brokers; ++b) {
    auto metrics = call(c.admin(b), "GET", "/metrics").raw;
    for (const char* api : {"InitProducerId", "AddPartitionsToTxn", "EndTxn"}) {
      auto series = std::string("moonmq_kafka_errors_total{api=\"") + api + "\"} ";
      auto at = metrics.find(series);
      const bool clean = at == std::string::npos || metrics.compare(at + series.size(), 2, "0\n") == 0;
      std::string said;
      if (!clean) {
        std::istringstream lines(c.logs(b));
        for (std::string line; std::getline(lines, line);)
          if (line.find("txn.") != std::string::npos || line.find("snapshot_installed") != std::string::npos
              || line.find("NOT_COORDINATOR") != std::string::npos || line.find("fenced") != std::string::npos)
            said += line + "\n";
      }
      INFO(c.id(b) << " " << metrics.substr(at == std::string::npos ? 0 : at, at == std::string::npos ? 0 : 60));
      INFO(said);
      CHECK(clean);
    }
  }
}

}  // namespace

// Test names keep their part before ": " short: Catch2 2.13 indents the
// rest of a failing test's header by it and loops when it nears 80 columns.
TEST_CASE("kafka transactions, log compacted at every flush: no request is answered with an error because its "
          "entry was compacted before its proposer was settled",
          "[kafka_cluster][txn]") {
  // Cluster.Raft.MaxLogEntries 2: the log compacts the applied prefix into a
  // snapshot at nearly every flush, so the entries of many InitProducerId,
  // AddPartitionsToTxn and EndTxn requests are out of the log by the time
  // their proposer is settled. The raft node keeps the terms of recently
  // applied entries (raft/applied_terms.hpp); before it did, such a request
  // was answered COORDINATOR_NOT_AVAILABLE and librdkafka waited 500 ms to
  // find its coordinator again (this test failed so).
  move_cluster c({"b1"}, kafka_raft({"Cluster.Raft.MaxLogEntries=2"}));
  c.launch(0);
  c.wait_ready(0);
  REQUIRE(wait_until([&] { return call(c.admin(0), "GET", "/admin/cluster").body["controller"]["id"] == "b1"; }, 15s));
  auto created = call(c.client(0), "POST", "/v1/topics", json{{"name", "snap0"}}.dump());
  INFO(created.raw);
  REQUIRE(created.status == 201);
  transactions_under_compaction(c, 1, 0, "127.0.0.1:" + std::to_string(c.kafka(0)), "snap0",
                                {"snap-0", "snap-1", "snap-2", "snap-3"});
}

TEST_CASE("kafka transactions, three brokers compacting: a coordinator that forwards its proposals to the "
          "leader answers no request with an error",
          "[kafka_cluster][txn]") {
  // The same with every id coordinated by a follower: its proposals go to the
  // leader, and each is registered here only when the leader's answer
  // arrives, possibly after this broker applied (and compacted) the entry.
  move_cluster c({"b1", "b2", "b3"}, kafka_raft({"Cluster.Raft.MaxLogEntries=2"}));
  start_three(c);
  auto leader = raft_leader(c);
  REQUIRE(leader);
  const size_t coord = (*leader + 1) % 3;
  const std::vector<std::string> all{c.id(0), c.id(1), c.id(2)};
  std::vector<std::string> ids;
  for (int n = 0; ids.size() < 4; ++n)
    if (auto id = "snap3-" + std::to_string(n); cluster::group_coordinator(id, all) == c.id(coord))
      ids.push_back(id);
  create_topics(c, {"snap3"});
  transactions_under_compaction(c, 3, coord, bootstrap(c), "snap3", ids);
}

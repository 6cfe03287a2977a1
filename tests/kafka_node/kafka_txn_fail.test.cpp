// Kafka transactions (docs/transactions.md) across failures and moves, on
// three Raft brokers with librdkafka 2.0.2 (python3-confluent-kafka): the
// coordinator killed with a transaction open, the owner of one partition of
// a committed transaction down until after EndTxn, and a partition moved
// while a transaction on it is open. Label scenario.

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "cluster/group_placement.hpp"
#include "tests/kafka_node/kafka_client.hpp"
#include "tests/kafka_node/raft_kafka.hpp"
#include "tests/kafka_node/txn_support.hpp"
#include "tests/node/move_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

const std::vector<std::string> all_three{"b1", "b2", "b3"};

/// Creates one-partition topic `topic` through broker `i` (so broker i owns
/// it) and waits until every broker lists it.
void create_owned(move_cluster& c, size_t i, const std::string& topic) {
  auto a = call(c.client(i), "POST", "/v1/topics", nlohmann::json{{"name", topic}, {"partitions", 1}}.dump());
  INFO(a.raw);
  REQUIRE(a.status == 201);
  REQUIRE(wait_until([&] {
    for (size_t b = 0; b < 3; ++b)
      if (call(c.client(b), "GET", "/v1/topics/" + topic).status != 200)
        return false;
    return true;
  }, 10s));
}

/// Python lines defining `bs` (every broker's Kafka address) and `topics`.
std::string python_head(move_cluster& c, const std::vector<std::string>& topics) {
  std::string py = "import sys\nfrom confluent_kafka import Producer, Consumer, TopicPartition, KafkaException\nbs = '";
  for (size_t i = 0; i < 3; ++i)
    py += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(c.kafka(i));
  py += "'\ntopics = [";
  for (const auto& t : topics)
    py += "'" + t + "', ";
  return py + "]\n";
}

/// A python script: a transactional producer of id `id` writes "<tag>-<i>"
/// for i in [0, 10) alternately to `topics`, flushes, prints "open", and at
/// step "commit" commits, printing "commit ok <seconds>" or "commit failed
/// <error name> fatal|retriable".
std::string open_then_commit(move_cluster& c, const std::string& id, int timeout_ms,
                             const std::vector<std::string>& topics, const std::string& tag) {
  return python_head(c, topics) + "p = Producer({'bootstrap.servers': bs, 'transactional.id': '" + id
         + "', 'transaction.timeout.ms': " + std::to_string(timeout_ms)
         + "})\n"
           "p.init_transactions(30)\n"
           "p.begin_transaction()\n"
           "for i in range(10):\n"
           "    p.produce(topics[i % len(topics)], value=('" + tag + "-%d' % i).encode())\n"
           "p.flush(30)\n"
           "print('open')\n"
           "wait_for('commit')\n"
           "t = time.time()\n"
           "try:\n"
           "    p.commit_transaction(30)\n"
           "    print('commit ok %.3f s' % (time.time() - t))\n"
           "except KafkaException as e:\n"
           "    print('commit failed', e.args[0].name(), 'fatal' if e.args[0].fatal() else 'retriable')\n";
}

/// The state the transaction coordinator of the broker with admin port
/// `admin` reports (GET /admin/actors, kind txn_coordinator); null if none.
nlohmann::json coordinator_status(uint16_t admin) {
  auto a = call(admin, "GET", "/admin/actors");
  if (a.status == 200 && a.body.is_object() && a.body["actors"].is_array())
    for (const auto& row : a.body["actors"])
      if (row.value("kind", "") == "txn_coordinator" && row["state"].is_object())
        return row["state"];
  return nullptr;
}

/// The values of the records of topic/0 a read_committed HTTP read returns
/// from offset 0 at broker `client` (one page).
std::multiset<std::string> committed_values(uint16_t client, const std::string& topic) {
  std::multiset<std::string> out;
  auto a = call(client, "GET", "/v1/topics/" + topic + "/partitions/0/records?offset=0&isolation=read_committed");
  if (a.status == 200 && a.body["records"].is_array())
    for (const auto& r : a.body["records"])
      if (r["value"].is_string())
        out.insert(r["value"].get<std::string>());
  return out;
}

}  // namespace

TEST_CASE("kafka transactions: the coordinator killed with a transaction open, once it is fenced the next "
          "coordinator aborts it at a bumped epoch, read_committed passes it and the old producer is fenced",
          "[kafka_cluster][txn]") {
  move_cluster c(all_three, kafka_raft({"Cluster.Raft.SessionTimeoutMs=2000"}));
  start_three(c);
  auto leader = raft_leader(c);
  REQUIRE(leader);
  // The coordinator is not the Raft leader (no election after the kill) and
  // owns no data: the two topics are owned by the brokers that stay.
  const size_t coord = (*leader + 1) % 3;
  const size_t stay[2] = {(coord + 1) % 3, (coord + 2) % 3};
  create_owned(c, stay[0], "fa");
  create_owned(c, stay[1], "fb");
  const auto id = txn_id_coordinated_by(c.id(coord), all_three);
  const auto next = cluster::group_coordinator(id, {c.id(stay[0]), c.id(stay[1])});
  const size_t next_i = next == c.id(stay[0]) ? stay[0] : stay[1];

  python_run open(c.data_dir(stay[0]), "open.py", open_then_commit(c, id, 5000, {"fa", "fb"}, "open"));
  open.expect("open", 30s);
  auto before = txn_record(c.admin(next_i), id);
  INFO("record before the kill: " << before.dump());
  REQUIRE(before.is_object());
  REQUIRE(before["state"] == "ongoing");
  REQUIRE(before["partitions"].size() == 2);
  c.kill(coord);

  nlohmann::json rec;
  const auto killed = std::chrono::steady_clock::now();
  REQUIRE(wait_until([&] {
    rec = txn_record(c.admin(next_i), id);
    return rec.is_object() && rec["state"] == "complete_abort";
  }, 20s));
  const auto took_ms =
    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed).count();
  INFO("record after: " << rec.dump());
  CHECK(rec["producer_id"] == before["producer_id"]);
  CHECK(rec["producer_epoch"].get<int>() == before["producer_epoch"].get<int>() + 1);  // the producer is fenced
  // The broker the id moved to did the abort (its timeout, in the record).
  auto status = coordinator_status(c.admin(next_i));
  INFO("coordinator " << next << ": " << status.dump());
  CHECK(status["timeouts_aborted"] == 1);
  WARN("coordinator killed; " << next << " aborted the transaction " << took_ms
                              << " ms after the kill (SessionTimeoutMs 2000, transaction.timeout.ms 5000)");

  // The old producer cannot commit: its epoch is older than the record's.
  open.proceed("commit");
  open.expect("commit ", 30s);
  auto outcome = *lines_with(open.output(), "commit ").begin();
  CHECK(outcome.rfind("failed", 0) == 0);
  CHECK(outcome.find("fatal") != std::string::npos);
  WARN("the old producer's commit: " << outcome);
  INFO("producer: " << open.output());
  CHECK(open.wait(10s) == 0);

  // Records produced after the abort are readable at read_committed: the
  // last stable offset passed the aborted ones, which no reader returns.
  auto [rc, out] = python_script(c.data_dir(stay[0]), "after.py",
                                 python_head(c, {"fa", "fb"})
                                   + "p = Producer({'bootstrap.servers': bs})\n"
                                     "for i in range(6):\n"
                                     "    p.produce(topics[i % 2], value=('after-%d' % i).encode())\n"
                                     "p.flush(30)\n"
                                   + python_reader() + "read('read_committed', 6)\nread('read_uncommitted', 16)\n");
  INFO("readers: " << out);
  REQUIRE(rc == 0);
  CHECK(lines_with(out, "read_committed ") == values("after", 6));
  auto uncommitted = lines_with(out, "read_uncommitted ");
  for (const auto& v : values("open", 10))
    CHECK(uncommitted.count(v) == 1);  // the aborted records are in the logs
}

TEST_CASE("kafka transactions: a commit whose partition owner is down is answered, stays prepare_commit, and "
          "completes once the owner is back, and read_committed then sees every record once",
          "[kafka_cluster][txn]") {
  move_cluster c(all_three, kafka_raft());
  start_three(c);
  auto leader = raft_leader(c);
  REQUIRE(leader);
  // `down` owns "pb" and is not the Raft leader; the coordinator stays the
  // same whether or not `down` gets fenced meanwhile.
  const size_t down = (*leader + 1) % 3;
  const size_t coord = (*leader + 2) % 3;
  const size_t keep = *leader;
  create_owned(c, keep, "pa");
  create_owned(c, down, "pb");
  const auto id = txn_id_coordinated_by(c.id(coord), all_three, {{c.id(coord), c.id(keep)}});

  python_run run(c.data_dir(keep), "commit.py", open_then_commit(c, id, 60000, {"pa", "pb"}, "ok"));
  run.expect("open", 30s);
  c.kill(down);
  run.proceed("commit");
  run.expect("commit ", 30s);
  const auto answered = lines_with(run.output(), "commit ");
  CHECK(answered.begin()->rfind("ok", 0) == 0);  // the outcome is durable: EndTxn succeeds
  WARN("commit with the owner of pb down: " << *answered.begin());

  // The marker of "pb" cannot be written: the record stays prepared while
  // the coordinator's tick tries again; "pa" got its marker.
  auto rec = txn_record(c.admin(coord), id);
  INFO("record: " << rec.dump());
  CHECK(rec["state"] == "prepare_commit");
  nlohmann::json status;
  REQUIRE(wait_until([&] {
    status = coordinator_status(c.admin(coord));
    return status.is_object() && status.value("markers_failed", 0) >= 3;
  }, 10s));
  CHECK(txn_record(c.admin(coord), id)["state"] == "prepare_commit");
  const std::multiset<std::string> even{"ok-0", "ok-2", "ok-4", "ok-6", "ok-8"};
  CHECK(committed_values(c.client(keep), "pa") == even);
  // Retries write only the missing marker: "pa" holds its five records and
  // one COMMIT marker, however many rounds failed.
  auto pa = call(c.client(keep), "GET", "/v1/topics/pa/partitions/0/records?offset=0");
  INFO(pa.raw);
  CHECK(pa.body["log_end_offset"] == 6);

  // Back on the same data dir, the owner takes the marker at the next tick.
  c.restart(down);
  REQUIRE(wait_until([&] {
    rec = txn_record(c.admin(coord), id);
    return rec.is_object() && rec["state"] == "complete_commit";
  }, 20s));
  CHECK(rec["producer_epoch"] == txn_record(c.admin(keep), id)["producer_epoch"]);
  auto [rc, out] = python_script(c.data_dir(keep), "read.py",
                                 python_head(c, {"pa", "pb"}) + python_reader() + "read('read_committed', 10)\n");
  INFO("reader: " << out);
  REQUIRE(rc == 0);
  CHECK(lines_with(out, "read_committed ") == values("ok", 10));
  INFO("producer: " << run.output());
  CHECK(run.wait(10s) == 0);
}

TEST_CASE("kafka transactions: a partition moved while a transaction on it is open: the commit is seen once and "
          "the abort (racing a second move) not at all",
          "[kafka_cluster][txn]") {
  move_cluster c(all_three, kafka_raft());
  start_three(c);
  REQUIRE(raft_leader(c));
  create_owned(c, 0, "mv");  // owned by b1
  python_run run(c.data_dir(2), "move.py",
                 python_head(c, {"mv"})
                   + "p = Producer({'bootstrap.servers': bs, 'transactional.id': 'txn-move', "
                     "'transaction.timeout.ms': 60000})\n"
                     "def send(tag, first, n):\n"
                     "    for i in range(first, first + n):\n"
                     "        p.produce('mv', value=('%s-%d' % (tag, i)).encode())\n"
                     "    p.flush(30)\n"
                     "p.init_transactions(30)\n"
                     "p.begin_transaction(); send('c', 0, 10)\n"
                     "print('first')\n"
                     "wait_for('more')\n"
                     "send('c', 10, 10); p.commit_transaction(30)\n"
                     "print('committed')\n"
                     "p.begin_transaction(); send('a', 0, 20)\n"
                     "print('second')\n"
                     "wait_for('abort')\n"
                     "p.abort_transaction(30)\n"
                     "print('aborted')\n"
                     "wait_for('read')\n"
                     "q = Producer({'bootstrap.servers': bs}); q.produce('mv', value=b'after-0'); q.flush(30)\n"
                   + python_reader() + "read('read_committed', 21)\nread('read_uncommitted', 41)\n");
  // Half of the committed transaction is written on b1, the rest on b2 once
  // the move has ended: the open transaction moved with the log.
  run.expect("first", 30s);
  submit_move(c.admin(0), "mv", 0, "b2");
  auto row = wait_move(c.admin(0), "mv", 0, "b1", {"done"}, 30s);
  INFO("first move: " << row.dump());
  REQUIRE(row.value("state", "") == "done");
  run.proceed("more");
  run.expect("committed", 30s);
  // The abort races a move from b2 to b3: its markers land on b2 before the
  // seal (and are copied), meet the sealed partition (and are retried on the
  // coordinator's tick) or land on b3.
  run.expect("second", 30s);
  submit_move(c.admin(1), "mv", 0, "b3");
  auto seen = wait_move(c.admin(1), "mv", 0, "b2", {"cutover", "draining", "offsets"}, 30s);
  run.proceed("abort");
  WARN("abort at move state " << seen.value("state", ""));
  run.expect("aborted", 30s);
  row = wait_move(c.admin(1), "mv", 0, "b2", {"done"}, 30s);
  INFO("second move: " << row.dump());
  REQUIRE(row.value("state", "") == "done");
  REQUIRE(wait_until([&] { return txn_record(c.admin(2), "txn-move")["state"] == "complete_abort"; }, 20s));
  const auto coordinator = cluster::group_coordinator("txn-move", all_three);
  const size_t coordinator_i = coordinator == "b1" ? 0 : coordinator == "b2" ? 1 : 2;
  WARN("marker rounds retried by " << coordinator << ": "
                                   << coordinator_status(c.admin(coordinator_i)).value("markers_failed", -1));
  run.proceed("read");
  auto rc = run.wait(40s);
  auto out = run.output();
  INFO("script: " << out);
  REQUIRE(rc == 0);
  auto expected = values("c", 20);
  expected.insert("after-0");
  CHECK(lines_with(out, "read_committed ") == expected);  // the commit once, nothing of the abort
  auto uncommitted = lines_with(out, "read_uncommitted ");
  for (const auto& v : values("a", 20))
    CHECK(uncommitted.count(v) == 1);
}

TEST_CASE("kafka transactions: an operator aborts an open transaction on its coordinator, the producer is fenced "
          "and read_committed passes the aborted records at once",
          "[kafka_cluster][txn]") {
  move_cluster c(all_three, kafka_raft({}));
  start_three(c);
  create_owned(c, 0, "ha");
  const auto id = txn_id_coordinated_by(c.id(1), all_three);
  const std::string route = "/admin/transactions/" + id + "/abort";
  python_run open(c.data_dir(0), "open.py", open_then_commit(c, id, 60000, {"ha"}, "hang"));
  open.expect("open", 30s);
  auto before = txn_record(c.admin(1), id);
  INFO("record before: " << before.dump());
  REQUIRE(before.is_object());
  REQUIRE(before["state"] == "ongoing");

  auto elsewhere = call(c.admin(2), "POST", route);
  CHECK(elsewhere.status == 409);
  CHECK(elsewhere.body["error"] == "not_coordinator");
  // The coordinator knows this transaction: the partition's owner will not
  // abort its one partition of it.
  auto at_partition = call(c.admin(0), "POST", "/admin/partitions/ha/0/abort-transaction",
                           nlohmann::json{{"producer_id", before["producer_id"]},
                                          {"producer_epoch", before["producer_epoch"]}}
                             .dump());
  CHECK(at_partition.status == 409);
  CHECK(at_partition.body["error"] == "coordinated_transaction");
  auto a = call(c.admin(1), "POST", route);
  INFO(a.raw);
  REQUIRE(a.status == 200);
  CHECK(a.body["markers"] == "written");
  CHECK(a.body["producer_epoch"] == before["producer_epoch"].get<int>() + 1);
  // Answered once the markers are written: the owner's last stable offset
  // already passed the aborted records.
  auto r = call(c.client(0), "GET", "/v1/topics/ha/partitions/0/records?offset=0&isolation=read_committed");
  INFO(r.raw);
  REQUIRE(r.status == 200);
  CHECK(r.body["records"].empty());
  CHECK(r.body["last_stable_offset"] == r.body["log_end_offset"]);
  CHECK(r.body["log_end_offset"].get<int64_t>() == 11);  // 10 records and the ABORT marker
  auto again = call(c.admin(1), "POST", route);
  CHECK(again.status == 409);
  CHECK(again.body["error"] == "no_open_transaction");

  open.proceed("commit");
  open.expect("commit ", 30s);
  auto outcome = *lines_with(open.output(), "commit ").begin();
  INFO("producer: " << open.output());
  CHECK(outcome.rfind("failed", 0) == 0);
  CHECK(outcome.find("fatal") != std::string::npos);
  CHECK(open.wait(10s) == 0);
}

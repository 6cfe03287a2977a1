// Topic deletion through the metadata log on three real moonmq-node
// processes (docs/metadata.md "Deleting a topic"):
//  - a topic deleted through one broker is gone from every broker, with its
//    partition directories, and a topic created again under its name starts
//    empty at offset 0;
//  - a broker that was down while the topic was deleted (and created again)
//    removes its old copy when it comes back, and never imports it;
//  - a deletion is refused while a move of the topic is under way.

#include <catch2/catch.hpp>

#include <filesystem>

#include "tests/node/metadata_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;

namespace {

/// True when broker `i` lists `topic` in GET /v1/topics.
bool lists(const move_cluster& c, size_t i, const std::string& topic) {
  auto a = call(c.client(i), "GET", "/v1/topics");
  if (a.status != 200 || !a.body.is_object() || !a.body["topics"].is_array())
    return true;  // unknown counts as still listed
  for (const auto& t : a.body["topics"])
    if (t.value("name", "") == topic)
      return true;
  return false;
}

/// Number of partition directories `<data_dir>/<topic>-<n>` broker `i` holds.
int partition_dirs(const move_cluster& c, size_t i, const std::string& topic, int partitions) {
  int n = 0;
  for (int p = 0; p < partitions; ++p)
    n += std::filesystem::exists(c.data_dir(i) + "/" + topic + "-" + std::to_string(p));
  return n;
}

/// Waits until no broker of `brokers` lists `topic` nor holds a directory of it.
void wait_gone(const move_cluster& c, const std::vector<size_t>& brokers, const std::string& topic, int partitions) {
  for (auto i : brokers) {
    INFO("broker " << c.id(i));
    bool gone = wait_until([&] { return !lists(c, i, topic) && partition_dirs(c, i, topic, partitions) == 0; }, 10s);
    if (!gone)
      FAIL("broker " << c.id(i) << " still lists " << topic << " or holds "
                     << partition_dirs(c, i, topic, partitions) << " of its directories\n" << log_tails(c));
  }
}

}  // namespace

TEST_CASE("a topic deleted through one broker is gone from every broker, and created again it starts empty",
          "[node][metadata][raft][scenario]") {
  constexpr int partitions = 3;
  move_cluster c{{"b1", "b2", "b3"}, raft_config()};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "gone", partitions);
  // b2 serves the topic once it applied the create (within a heartbeat,
  // docs/metadata.md "Known limits": no read-your-writes across brokers).
  REQUIRE(wait_until(
    [&] {
      auto a = call(c.client(1), "GET", "/v1/topics");
      return a.status == 200 && a.raw.find("\"gone\"") != std::string::npos;
    },
    10s));
  for (int p = 0; p < partitions; ++p)
    REQUIRE(fill(c.client(1), "gone", p, 20, 5, 64).size() == 20);
  // A committed offset goes with the topic (a consumer of the topic created
  // again must not skip its first records).
  auto commit = call(c.client(2), "POST", "/v1/groups/readers/offsets",
                     json{{"offsets", {{{"topic", "gone"}, {"partition", 0}, {"offset", 15}}}}}.dump());
  INFO("commit: " << commit.raw);
  REQUIRE(commit.status == 200);
  auto committed = [&] {
    auto a = call(c.client(0), "GET", "/v1/groups/readers/offsets?topic=gone");
    return a.status == 200 && a.body.is_object() && a.body["offsets"].is_array() ? a.body["offsets"].size()
                                                                                 : size_t{99};
  };
  REQUIRE(committed() == 1);
  // Every broker holds a local copy once it applied the create; only the
  // owner (b1, which created it) has written one, so only it has the
  // directories (storage::partition_log::open: no disk work until written).
  for (size_t i = 0; i < 3; ++i)
    CHECK(wait_until([&] { return lists(c, i, "gone"); }, 10s));
  CHECK(partition_dirs(c, 0, "gone", partitions) == partitions);
  CHECK(partition_dirs(c, 1, "gone", partitions) == 0);
  CHECK(partition_dirs(c, 2, "gone", partitions) == 0);

  auto d = call(c.client(2), "DELETE", "/v1/topics/gone");
  INFO("DELETE through b3: " << d.raw);
  REQUIRE(d.status == 200);
  CHECK(d.body["deleted"] == true);
  wait_gone(c, {0, 1, 2}, "gone", partitions);
  for (size_t i = 0; i < 3; ++i) {
    json body{{"records", {{{"key", "k"}, {"value", "late"}, {"partition", 0}}}}};
    auto a = call(c.client(i), "POST", "/v1/topics/gone/records?acks=leader", body.dump());
    INFO("produce through " << c.id(i) << " after the deletion: " << a.raw);
    CHECK(a.status == 404);
  }
  auto again = call(c.client(0), "DELETE", "/v1/topics/gone");
  CHECK(again.status == 404);
  CHECK(again.body.value("error", "") == "unknown_topic");

  // Created again under the same name: a new topic, empty, offsets from 0.
  create_topic(c.client(1), "gone", 2);
  std::map<int64_t, sent_record> acked;
  auto a = produce_one(c.client(2), "gone", 0, "new", acked, 5s);
  INFO("produce to the new gone/0: " << a.raw);
  REQUIRE(a.status == 200);
  CHECK(acked.begin()->first == 0);
  auto read = read_partition(c.client(1), "gone", 0);  // b2 created it: its owner
  CHECK(read.log_start == 0);
  CHECK(read.log_end == 1);
  REQUIRE(read.records.size() == 1);
  CHECK(as_sent(read.records.begin()->second).key == acked.begin()->second.key);
  CHECK(wait_until([&] { return committed() == 0; }, 5s));
  // Only the new count's directories exist on any broker.
  for (size_t i = 0; i < 3; ++i)
    CHECK(partition_dirs(c, i, "gone", partitions) <= 2);
}

TEST_CASE("a broker down while its topic was deleted and created again drops its old copy and never imports it",
          "[node][metadata][raft][scenario]") {
  move_cluster c{{"b1", "b2", "b3"}, raft_config()};
  start_all(c);
  auto leader = agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound);
  if (!leader)
    FAIL("no leader elected\n" << log_tails(c));
  // The broker taken down is not the leader: the deletion commits at once.
  size_t l = leader->first, other = (l + 1) % 3, down = (l + 2) % 3;
  create_topic(c.client(l), "stale", 2);
  create_topic(c.client(l), "dropped", 1);
  REQUIRE(fill(c.client(l), "stale", 0, 30, 10, 64, "old").size() == 30);
  REQUIRE(wait_until([&] { return lists(c, down, "stale") && lists(c, down, "dropped"); }, 10s));
  c.kill(down);

  // While it is down: both deleted, "stale" created again with one record.
  auto d1 = call(c.client(l), "DELETE", "/v1/topics/stale");
  INFO(d1.raw);
  REQUIRE(d1.status == 200);
  auto d2 = call(c.client(other), "DELETE", "/v1/topics/dropped");
  INFO(d2.raw);
  REQUIRE(d2.status == 200);
  create_topic(c.client(other), "stale", 2);
  std::map<int64_t, sent_record> acked;
  REQUIRE(produce_one(c.client(other), "stale", 0, "fresh", acked, 5s).status == 200);
  REQUIRE(acked.begin()->first == 0);

  c.restart(down);
  wait_gone(c, {down}, "dropped", 1);
  REQUIRE(wait_until([&] { return lists(c, down, "stale"); }, 10s));
  // Longer than the import interval (2 s): nothing brings "dropped" back.
  std::this_thread::sleep_for(3s);
  for (size_t i = 0; i < 3; ++i)
    CHECK_FALSE(lists(c, i, "dropped"));
  // The topic the log holds has the single new record, and the restarted
  // broker serves none of its old 30: it forwards fetches to the owner.
  auto read = read_partition(c.client(other), "stale", 0);  // created again there: its owner
  CHECK(read.log_end == 1);
  CHECK(read.records.size() == 1);
  auto via = call(c.client(down), "GET", "/v1/topics/stale/partitions/0/records?offset=0&max_records=100");
  INFO("fetch of stale/0 through the restarted broker: " << via.raw);
  CHECK(via.status == 421);
  INFO(c.logs(down));
  CHECK(c.logs(down).find("partition.deleted topic=stale") != std::string::npos);
  CHECK(c.logs(down).find("topic.importing") == std::string::npos);
}

TEST_CASE("a topic with a move under way is not deleted until the move ends", "[node][metadata][raft][scenario]") {
  auto cfg = raft_config(throttled());
  move_cluster c{{"b1", "b2", "b3"}, cfg};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "busy", 2);
  REQUIRE(fill(c.client(0), "busy", 1, 400, 50, 10000).size() == 400);  // ~4 MB: a few seconds at 1 MB/s
  submit_move(c.admin(0), "busy", 1, "b2");
  wait_copied(c, 0, "busy", 1, "b1", 1, 10s);

  for (size_t via : {size_t{1}, size_t{2}}) {
    auto d = call(c.client(via), "DELETE", "/v1/topics/busy");
    INFO("DELETE through " << c.id(via) << " during the move: " << d.raw);
    CHECK(d.status == 409);
    CHECK(d.body.value("error", "") == "topic_moving");
  }
  CHECK(lists(c, 0, "busy"));
  auto row = wait_terminal(c, 0, "busy", 1, "b1", 60s);
  CHECK(row.value("state", "") == "done");
  // The log's own record of the move ends too before the deletion goes in.
  auto d = call(c.client(2), "DELETE", "/v1/topics/busy");
  bool deleted = d.status == 200 || wait_until([&] {
    d = call(c.client(2), "DELETE", "/v1/topics/busy");
    return d.status == 200;
  }, 10s);
  INFO("DELETE after the move: " << d.raw);
  CHECK(deleted);
  wait_gone(c, {0, 1, 2}, "busy", 2);
}

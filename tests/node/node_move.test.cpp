// Partition moves between real moonmq-node processes on loopback (the
// reassigner's "Done when" scenarios, docs/cluster.md "The MOVE protocol"),
// the cases where every broker stays up:
//  - a move under live produce and a consuming group loses, duplicates and
//    renumbers nothing, and the group resumes on the new owner;
//  - a log start above zero survives the move, also one DeleteRecords put
//    inside a batch;
//  - a plan of several moves runs MaxConcurrentMoves at a time and each lands
//    whole;
//  - the cluster listener refuses unauthenticated and stale requests, a move
//    to an unknown or dead broker copies nothing, and a move being copied
//    can be cancelled.
// Brokers that die, freeze or restart during a move: node_move_failure.test.cpp.
// The checks both files share are in move_checks.hpp. The source's copy is
// throttled (Cluster.MoveThrottleBytesPerSec) so that each move lasts a few
// seconds and the scenario can act during the copy.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "tests/node/move_checks.hpp"
#include "tests/node/move_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

/// The port in a client URL "http://host:port" (0 when there is none).
uint16_t port_of_url(const std::string& url) {
  auto colon = url.rfind(':');
  if (colon == std::string::npos)
    return 0;
  return static_cast<uint16_t>(std::atoi(url.c_str() + colon + 1));
}

/// The committed offset of `group` for topic/partition on one broker (nullopt
/// when none is stored there).
std::optional<int64_t> committed(uint16_t client, const std::string& group, const std::string& topic, int partition) {
  auto a = call(client, "GET", "/v1/groups/" + group + "/offsets?topic=" + topic);
  if (a.status != 200 || !a.body.is_object())
    return std::nullopt;
  for (auto& o : a.body["offsets"])
    if (o["topic"] == topic && o["partition"] == partition)
      return o["offset"].get<int64_t>();
  return std::nullopt;
}

/// A group consumer of one partition: joins the group on the broker it
/// talks to, fetches from its position, commits after every non-empty page,
/// heartbeats. A 421 sends it to the named owner, where it joins again and,
/// once that broker serves the partition, resumes from the committed offset
/// stored there. Runs on its own thread; assertions are made afterwards.
class group_consumer {
public:
  group_consumer(uint16_t client, std::string group, std::string topic, int partition)
      : start_(client), group_(std::move(group)), topic_(std::move(topic)), partition_(partition) {
    thread_ = std::thread([this] { run(); });
  }
  ~group_consumer() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }

  std::map<uint16_t, int64_t> last_commit;     ///< per broker: the last offset committed with 200
  std::map<uint16_t, int64_t> resumed_from;    ///< per broker: the first position used there
  std::map<uint16_t, std::optional<int64_t>> committed_at_resume;  ///< what the broker had stored then
  std::map<int64_t, sent_record> consumed;     ///< offset → record as fetched (last fetch wins)
  std::vector<std::string> errors;
  int redirects = 0;
  std::atomic<uint16_t> serving_port{0};  ///< the broker that last served a fetch

private:
  struct membership {
    std::string member_id;
    int64_t generation = -1;
    clock_type::time_point last_beat;
  };

  bool join(uint16_t port) {
    auto a = call(port, "POST", "/v1/groups/" + group_ + "/members", json{{"topics", {topic_}}}.dump());
    if (a.status != 200) {
      note("join " + std::to_string(a.status) + " " + a.raw);
      return false;
    }
    members_[port] = {a.body["member_id"].get<std::string>(), a.body["generation"].get<int64_t>(), clock_type::now()};
    return true;
  }

  void note(std::string e) {
    if (errors.size() < 20)
      errors.push_back(std::move(e));
  }

  /// Follows a 421 to the owner it names; false when the answer names none.
  bool redirect(const answer& a, uint16_t& port, int64_t& pos) {
    auto url = a.body.is_object() && a.body["url"].is_string() ? a.body["url"].get<std::string>() : std::string{};
    auto next = port_of_url(url);
    if (next == 0) {
      note("421 without url: " + a.raw);
      return false;
    }
    ++redirects;
    port = next;
    pos = -1;
    std::this_thread::sleep_for(50ms);
    return true;
  }

  void run() {
    uint16_t port = start_;
    int64_t pos = -1;  // unknown: find the committed offset on `port`
    const std::string records = "/v1/topics/" + topic_ + "/partitions/" + std::to_string(partition_) + "/records";
    while (!stop_) {
      if (!members_.count(port) && !join(port)) {
        std::this_thread::sleep_for(100ms);
        continue;
      }
      auto& m = members_[port];
      if (clock_type::now() - m.last_beat > 1s) {
        auto hb = call(port, "POST", "/v1/groups/" + group_ + "/members/" + m.member_id + "/heartbeat");
        if (hb.status != 200) {
          members_.erase(port);
          continue;
        }
        m.generation = hb.body["generation"].get<int64_t>();
        m.last_beat = clock_type::now();
      }
      if (pos < 0) {
        // Is this broker serving the partition? Only then are the committed
        // offsets it stores final (they are pushed before it confirms).
        auto probe = call(port, "GET", records + "?max_records=1");
        if (probe.status == 421) {
          redirect(probe, port, pos);
          continue;
        }
        if (probe.status != 200) {
          note("probe " + std::to_string(probe.status) + " " + probe.raw);
          std::this_thread::sleep_for(50ms);
          continue;
        }
        serving_port = port;
        auto c = committed(port, group_, topic_, partition_);
        pos = c ? *c : probe.body["log_start_offset"].get<int64_t>();
        if (!resumed_from.count(port)) {
          resumed_from[port] = pos;
          committed_at_resume[port] = c;
        }
      }
      auto page = call(port, "GET", records + "?offset=" + std::to_string(pos) + "&max_records=500");
      if (page.status == 421) {
        redirect(page, port, pos);
        continue;
      }
      if (page.status != 200) {
        note("fetch " + std::to_string(page.status) + " " + page.raw);
        std::this_thread::sleep_for(50ms);
        continue;
      }
      for (auto& r : page.body["records"])
        consumed[r["offset"].get<int64_t>()] = {r["key"].is_string() ? r["key"].get<std::string>() : "",
                                               r["value"].is_string() ? r["value"].get<std::string>() : ""};
      auto next = page.body["next_offset"].get<int64_t>();
      if (next == pos) {
        std::this_thread::sleep_for(20ms);
        continue;
      }
      pos = next;
      json commit{{"offsets", {{{"topic", topic_}, {"partition", partition_}, {"offset", pos}}}},
                  {"generation", m.generation},
                  {"member_id", m.member_id}};
      auto c = call(port, "POST", "/v1/groups/" + group_ + "/offsets", commit.dump());
      if (c.status == 200)
        last_commit[port] = pos;
      else if (c.status == 421)
        redirect(c, port, pos);
      else if (c.status == 409 || c.status == 404)
        members_.erase(port);  // a newer generation or an evicted member: join again
      else
        note("commit " + std::to_string(c.status) + " " + c.raw);
    }
  }

  uint16_t start_;
  std::string group_;
  std::string topic_;
  int partition_;
  std::atomic<bool> stop_{false};
  std::map<uint16_t, membership> members_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("a partition moves b1 to b2 under live produce and a consuming group with nothing lost or renumbered",
          "[node][move][scenario]") {
  move_cluster c{{"b1", "b2"}};
  c.start(0, {"Cluster.MoveThrottleBytesPerSec=1000000"});  // ~2.5 MB copy: ~2.5 s of copying
  c.start(1);
  create_topic(c.client(0), "orders", 1);
  auto filled = fill(c.client(0), "orders", 0, 10000, 500, 200);
  REQUIRE(filled.size() == 10000);
  auto before = read_partition(c.client(0), "orders", 0);
  REQUIRE(before.log_start == 0);
  REQUIRE(before.log_end == 10000);

  producer prod{c.client(0), "orders", 0, 5, "live"};
  group_consumer cons{c.client(0), "billing", "orders", 0};
  std::this_thread::sleep_for(300ms);

  auto t0 = clock_type::now();
  auto sub = submit_move(c.admin(0), "orders", 0, "b2");
  INFO(sub.dump());
  REQUIRE(sub["rejected"].empty());
  REQUIRE(sub["accepted"].size() == 1);
  CHECK(sub["accepted"][0]["from"] == "b1");
  CHECK(sub["accepted"][0]["to"] == "b2");
  auto row = wait_terminal(c, 0, "orders", 0, "b1", 45s);
  double move_s = seconds_since(t0);
  INFO(row.dump());
  REQUIRE(row["state"] == "done");
  CHECK(row["bytes_copied"].get<int64_t>() >= row["bytes_total"].get<int64_t>());
  // Produce keeps going through b1 (forwarded to b2) after the move.
  int ok_at_done = prod.ok_requests();
  auto acked_at_done = prod.acked().size();
  std::this_thread::sleep_for(700ms);
  // The consumer must have found the partition on b2 before it stops.
  CHECK(wait_until([&] { return cons.serving_port.load() == c.client(1); }, 10s));
  prod.stop();
  cons.stop();

  auto acked = prod.acked();
  WARN("move took " << move_s << " s; producer " << prod.ok_requests() << " requests acknowledged, "
                    << prod.failed_requests() << " failed; " << acked.size() << " records acknowledged; consumer "
                    << cons.redirects << " redirects");
  for (const auto& e : prod.errors())
    WARN("produce error: " << e);
  for (const auto& e : cons.errors)
    WARN("consumer error: " << e);
  CHECK(prod.double_acks().empty());
  CHECK(prod.ok_requests() > ok_at_done);  // produce through b1 works after the move
  CHECK(acked.size() > acked_at_done);

  // b2 serves the partition, b1 sends clients there.
  auto [b1_status, b1_owner] = who_serves(c.client(0), "orders", 0);
  CHECK(b1_status == 421);
  CHECK(b1_owner == "b2");
  auto after = read_partition(c.client(1), "orders", 0);
  CHECK(after.log_start == 0);
  CHECK(after.log_end >= before.log_end + static_cast<int64_t>(acked.size()));
  check_same_records(before.records, after);
  check_acked(filled, after);
  check_acked(acked, after);
  // Every record the group consumed (from b1 or b2) is the one b2 has there.
  int consumed_wrong = 0;
  for (const auto& [off, rec] : cons.consumed) {
    auto it = after.records.find(off);
    if (it == after.records.end() || as_sent(it->second).key != rec.key || as_sent(it->second).value != rec.value)
      ++consumed_wrong;
  }
  CHECK(consumed_wrong == 0);

  // The group resumed on b2 from the offset it last committed on b1.
  INFO("consumer errors: " << cons.errors.size());
  REQUIRE(cons.last_commit.count(c.client(0)));
  REQUIRE(cons.resumed_from.count(c.client(1)));
  auto last_on_b1 = cons.last_commit[c.client(0)];
  INFO("last commit on b1 " << last_on_b1 << ", resumed on b2 from " << cons.resumed_from[c.client(1)]);
  REQUIRE(cons.committed_at_resume[c.client(1)].has_value());
  CHECK(*cons.committed_at_resume[c.client(1)] >= last_on_b1);
  CHECK(cons.resumed_from[c.client(1)] >= last_on_b1);
  auto final_b2 = committed(c.client(1), "billing", "orders", 0);
  REQUIRE(final_b2);
  CHECK(*final_b2 >= last_on_b1);

  // Every broker's admin API lists the move (rows from every reachable broker).
  auto via_b2 = latest_row(c.admin(1), "orders", 0, "b1");
  CHECK(via_b2["state"] == "done");
}

TEST_CASE("a partition whose log start is above zero keeps its log start and offsets when moved",
          "[node][move][scenario]") {
  move_cluster c{{"b1", "b2"}, {"Storage.RetentionCheckMs=50"}};
  c.start(0);
  c.start(1);
  create_topic(c.client(0), "ret", 1, json{{"segment.bytes", 4096}, {"retention.bytes", 8192}});
  // One record per request: one ~300-byte batch each, ~13 batches per segment.
  auto filled = fill(c.client(0), "ret", 0, 300, 1, 200, "ret");
  // Wait until retention has advanced the log start and then left it alone
  // for a second (its 50 ms checks can lag well behind on a loaded machine).
  // Probed at the log end, which no deletion can move out of range (a full
  // read here would race the deletions it waits for).
  auto current_log_start = [&] {
    auto a = call(c.client(0), "GET", "/v1/topics/ret/partitions/0/records?offset=300&max_records=1");
    INFO(a.raw);
    REQUIRE(a.status == 200);
    return a.body["log_start_offset"].get<int64_t>();
  };
  int64_t log_start = 0;
  int unchanged = 0;
  bool settled = false;
  for (int round = 0; round < 80 && !settled; ++round) {
    auto now = current_log_start();
    unchanged = now > 0 && now == log_start ? unchanged + 1 : 0;
    settled = unchanged >= 4;
    log_start = now;
    std::this_thread::sleep_for(250ms);
  }
  REQUIRE(settled);
  auto before = read_partition(c.client(0), "ret", 0);
  REQUIRE(before.log_start > 0);
  REQUIRE(before.log_end == 300);

  auto sub = submit_move(c.admin(0), "ret", 0, "b2");
  INFO(sub.dump());
  REQUIRE(sub["accepted"].size() == 1);
  auto row = wait_terminal(c, 0, "ret", 0, "b1", 30s);
  INFO(row.dump());
  REQUIRE(row["state"] == "done");

  auto after = read_partition(c.client(1), "ret", 0);
  CHECK(after.log_start == before.log_start);
  CHECK(after.log_end == before.log_end);
  check_same_records(before.records, after);
  auto bounds = cluster_call(c.cluster_port(1), "GET", "/cluster/partitions/ret/0/log-end");
  INFO(bounds.raw);
  REQUIRE(bounds.status == 200);
  CHECK(bounds.body["log_start_offset"] == before.log_start);
  CHECK(bounds.body["log_end_offset"] == before.log_end);
  // Below the log start is still out of range on b2, with the same bounds.
  auto below = call(c.client(1), "GET", "/v1/topics/ret/partitions/0/records?offset=" + std::to_string(before.log_start - 1));
  CHECK(below.status == 400);
  CHECK(below.body["error"] == "offset_out_of_range");
  CHECK(below.body["log_start_offset"] == before.log_start);
  // New records continue the numbering, produced through either broker.
  auto via_b1 = fill(c.client(0), "ret", 0, 1, 1, 50, "after-b1");
  auto via_b2 = fill(c.client(1), "ret", 0, 1, 1, 50, "after-b2");
  CHECK(via_b1.begin()->first == before.log_end);
  CHECK(via_b2.begin()->first == before.log_end + 1);
}

TEST_CASE("delete-records moves the log start inside a batch on the owner only, and a move carries it",
          "[node][move][delete_records][scenario]") {
  move_cluster c{{"b1", "b2"}};
  c.start(0);
  c.start(1);
  create_topic(c.client(0), "dr", 1);
  // Five records per request: batches [0, 5), [5, 10), ...
  fill(c.client(0), "dr", 0, 40, 5, 100, "dr");
  const std::string route = "/v1/topics/dr/partitions/0/delete-records";
  auto bad = call(c.client(0), "POST", route, R"({"before_offset":"7"})");
  CHECK(bad.status == 400);
  CHECK(bad.body["error"] == "invalid_request");
  auto above = call(c.client(0), "POST", route, R"({"before_offset":41})");
  CHECK(above.status == 400);
  CHECK(above.body["error"] == "offset_out_of_range");
  CHECK(above.body["log_end_offset"] == 40);
  auto elsewhere = call(c.client(1), "POST", route, R"({"before_offset":7})");
  CHECK(elsewhere.status == 421);
  CHECK(elsewhere.body["owner"] == "b1");
  CHECK(call(c.client(0), "POST", "/v1/topics/nope/partitions/0/delete-records", R"({"before_offset":1})").status
        == 404);
  auto done = call(c.client(0), "POST", route, R"({"before_offset":7})");
  INFO(done.raw);
  REQUIRE(done.status == 200);
  CHECK(done.body == json{{"topic", "dr"}, {"partition", 0}, {"log_start_offset", 7}});
  auto lower = call(c.client(0), "POST", route, R"({"before_offset":3})");
  CHECK(lower.body["log_start_offset"] == 7);
  auto before = read_partition(c.client(0), "dr", 0);
  REQUIRE(before.log_start == 7);
  REQUIRE(before.records.begin()->first == 7);

  // The move copies from the batch [5, 10); the destination keeps 7.
  auto sub = submit_move(c.admin(0), "dr", 0, "b2");
  INFO(sub.dump());
  REQUIRE(sub["accepted"].size() == 1);
  auto row = wait_terminal(c, 0, "dr", 0, "b1", 30s);
  INFO(row.dump() << log_tails(c));
  REQUIRE(row["state"] == "done");
  auto check_b2 = [&] {
    auto after = read_partition(c.client(1), "dr", 0);
    CHECK(after.log_start == 7);
    CHECK(after.log_end == 40);
    check_same_records(before.records, after);
    CHECK(after.records.size() == before.records.size());
    auto below = call(c.client(1), "GET", "/v1/topics/dr/partitions/0/records?offset=6");
    CHECK(below.status == 400);
    CHECK(below.body["log_start_offset"] == 7);
  };
  check_b2();
  c.kill(1);  // no clean close: the log start must have been durable
  c.restart(1);
  check_b2();
  // The new owner answers the next one; the old one names it.
  CHECK(call(c.client(0), "POST", route, R"({"before_offset":12})").status == 421);
  auto at_end = call(c.client(1), "POST", route, R"({"before_offset":-1})");
  CHECK(at_end.body["log_start_offset"] == 40);
}

TEST_CASE("delete-records on the source during a move's copy reaches the destination with the confirm",
          "[node][move][delete_records][scenario]") {
  move_cluster c{{"b1", "b2"}};
  c.start(0, {"Cluster.MoveThrottleBytesPerSec=200000"});  // ~0.5 MB: ~2.5 s of copying
  c.start(1);
  create_topic(c.client(0), "drc", 1);
  fill(c.client(0), "drc", 0, 500, 5, 1000, "drc");
  auto sub = submit_move(c.admin(0), "drc", 0, "b2");
  REQUIRE(sub["accepted"].size() == 1);
  auto copying = wait_copied(c, 0, "drc", 0, "b1", 100000, 20s);
  // Below what was copied already (the destination holds it from before).
  const int64_t before_offset = copying["copy_position"].get<int64_t>() - 3;
  REQUIRE(before_offset > 0);
  auto done = call(c.client(0), "POST", "/v1/topics/drc/partitions/0/delete-records",
                   json{{"before_offset", before_offset}}.dump());
  INFO(done.raw);
  REQUIRE(done.status == 200);
  CHECK(done.body["log_start_offset"] == before_offset);
  auto before = read_partition(c.client(0), "drc", 0);
  auto row = wait_terminal(c, 0, "drc", 0, "b1", 60s);
  INFO(row.dump() << log_tails(c));
  REQUIRE(row["state"] == "done");
  auto after = read_partition(c.client(1), "drc", 0);
  CHECK(after.log_start == before_offset);
  CHECK(after.log_end == 500);
  CHECK(after.records.size() == before.records.size());
  check_same_records(before.records, after);
}

TEST_CASE("a plan moving several partitions to two brokers runs MaxConcurrentMoves at a time and each lands whole",
          "[node][move][scenario]") {
  move_cluster c{{"b1", "b2", "b3"}};
  c.start(0, {"Cluster.MoveThrottleBytesPerSec=2000000", "Cluster.MaxConcurrentMoves=1"});
  c.start(1);
  c.start(2);
  create_topic(c.client(0), "plan", 4);
  std::vector<std::map<int64_t, sent_record>> filled;
  std::vector<partition_read> before;
  for (int p = 0; p < 4; ++p) {
    filled.push_back(fill(c.client(0), "plan", p, 1000, 500, 450, "plan" + std::to_string(p)));  // ~0.5 MB each
    before.push_back(read_partition(c.client(0), "plan", p));
  }
  json body{{"version", 1}, {"partitions", json::array()}};
  for (int p = 0; p < 4; ++p)
    body["partitions"].push_back({{"topic", "plan"}, {"partition", p}, {"replicas", {p % 2 == 0 ? "b2" : "b3"}}});
  auto sub = call(c.admin(0), "POST", "/admin/reassignments", body.dump());
  INFO(sub.raw);
  REQUIRE(sub.status == 202);
  REQUIRE(sub.body["accepted"].size() == 4);
  // One move at a time: never two of them copying at once.
  int most_active = 0;
  auto deadline = clock_type::now() + 40s;
  std::map<int, std::string> state;
  while (clock_type::now() < deadline) {
    int active = 0, finished = 0;
    auto moves = cluster_call(c.cluster_port(0), "GET", "/cluster/moves");
    for (auto& r : moves.body["moves"]) {
      auto s = r["state"].get<std::string>();
      state[r["partition"].get<int>()] = s;
      active += s != "queued" && !is_terminal(s) ? 1 : 0;
      finished += is_terminal(s) ? 1 : 0;
    }
    most_active = std::max(most_active, active);
    if (finished == 4)
      break;
    std::this_thread::sleep_for(20ms);
  }
  CHECK(most_active == 1);
  for (int p = 0; p < 4; ++p) {
    INFO("partition " << p);
    REQUIRE(state[p] == "done");
    size_t owner = p % 2 == 0 ? 1 : 2;
    auto after = read_partition(c.client(owner), "plan", p);
    check_same_records(before[p].records, after);
    check_acked(filled[p], after);
    CHECK(who_serves(c.client(0), "plan", p) == std::make_pair(421, c.id(owner)));
  }
  // A partition now owned by b2, moved on through b1's admin API (routed to
  // b2, which runs it as the source).
  auto onward = submit_move(c.admin(0), "plan", 0, "b3");
  INFO(onward.dump());
  REQUIRE(onward["accepted"].size() == 1);
  CHECK(onward["accepted"][0]["from"] == "b2");
  auto row = wait_terminal(c, 1, "plan", 0, "b2", 30s);
  REQUIRE(row["state"] == "done");
  auto final_read = read_partition(c.client(2), "plan", 0);
  check_same_records(before[0].records, final_read);
  CHECK(who_serves(c.client(1), "plan", 0) == std::make_pair(421, std::string("b3")));
}

TEST_CASE("the cluster listener refuses unauthenticated and stale requests and a move to an unknown or dead broker copies nothing",
          "[node][move][scenario]") {
  // b3 is a configured peer that never starts.
  move_cluster c{{"b1", "b2", "b3"}};
  c.start(0, {"Cluster.MoveThrottleBytesPerSec=262144", "Cluster.BatchBytes=16384"});
  c.start(1);
  create_topic(c.client(0), "sec", 2);
  fill(c.client(0), "sec", 0, 10, 10, 100, "sec0");
  auto slow = fill(c.client(0), "sec", 1, 2000, 500, 450, "sec1");  // ~1 MB at 256 KB/s: ~4 s
  auto owners_before = cluster_call(c.cluster_port(0), "GET", "/cluster/owners");
  REQUIRE(owners_before.status == 200);
  auto loads_before = cluster_call(c.cluster_port(1), "GET", "/cluster/loads");
  REQUIRE(loads_before.status == 200);

  // b2 holds sec's partitions as the metadata log created them: empty, owned by b1.
  auto no_sec_on_b2 = [&] {
    auto loads = cluster_call(c.cluster_port(1), "GET", "/cluster/loads");
    INFO(loads.raw);
    REQUIRE(loads.status == 200);
    int listed = 0;
    for (auto& p : loads.body["partitions"])
      if (p["topic"] == "sec") {
        ++listed;
        CHECK(p["owner"] == "b1");
        CHECK(p["log_end_offset"] == 0);
      }
    CHECK(listed == 2);
  };
  // The Raft controller before any request below: (term, leader).
  auto controller_now = [&] {
    auto a = call(c.admin(0), "GET", "/admin/cluster");
    REQUIRE(a.status == 200);
    return a.body["controller"];
  };
  REQUIRE(wait_until([&] { return controller_now()["id"].is_string(); }, 10s));
  auto controller_before = controller_now();
  auto term = controller_before["epoch"].get<int64_t>();
  auto leader = controller_before["id"].get<std::string>();
  auto unchanged = [&] {
    auto owners = cluster_call(c.cluster_port(0), "GET", "/cluster/owners");
    CHECK(owners.body["owners"] == owners_before.body["owners"]);
    auto moves = cluster_call(c.cluster_port(0), "GET", "/cluster/moves");
    INFO(moves.raw);
    REQUIRE(moves.status == 200);
    CHECK(moves.body["moves"].empty());
    CHECK(reassignments(c.admin(0)).empty());
    no_sec_on_b2();
  };

  SECTION("no or a wrong token: 401 and nothing changes") {
    for (std::string token : {"", "wrong"}) {
      moonmq::transport::header_list h{{"X-Controller-Epoch", "7"}, {"X-Controller-Id", "b2"}};
      if (!token.empty())
        h.emplace_back("X-Cluster-Token", token);
      auto own = call(c.cluster_port(0), "POST", "/cluster/owners", R"({"topic":"sec","partition":0,"owner":"b2"})", h);
      CHECK(own.status == 401);
      auto mv = call(c.cluster_port(0), "POST", "/cluster/moves", R"({"topic":"sec","partition":0,"to":"b2"})", h);
      CHECK(mv.status == 401);
      auto ens = call(c.cluster_port(1), "POST", "/cluster/partitions/sec/0/ensure",
                      R"({"from":"b1","partitions":2,"config":{},"log_start_offset":0,"owners":[]})", h);
      CHECK(ens.status == 401);
    }
    unchanged();
    // The controller is still the Raft leader of the same term.
    CHECK(controller_now() == controller_before);
    CHECK(who_serves(c.client(0), "sec", 0).first == 200);
  }

  SECTION("a controller epoch that is not the Raft leader's: 409 and nothing changes") {
    // At the current term only the leader acts as controller (docs/raft.md "Wiring").
    moonmq::transport::header_list impostor{{"X-Controller-Epoch", std::to_string(term)},
                                            {"X-Controller-Id", leader == "b1" ? "b2" : "b1"}};
    auto own = cluster_call(c.cluster_port(0), "POST", "/cluster/owners", R"({"topic":"sec","partition":0,"owner":"b2"})",
                            impostor);
    CHECK(own.status == 409);
    CHECK(own.body["error"] == "epoch_conflict");
    auto mv = cluster_call(c.cluster_port(0), "POST", "/cluster/moves", R"({"topic":"sec","partition":0,"to":"b2"})",
                           impostor);
    CHECK(mv.status == 409);
    CHECK(mv.body["error"] == "epoch_conflict");
    unchanged();
  }

  SECTION("a move to an unknown or a dead broker is rejected and copies nothing") {
    // Any broker's admin API takes the request; b2 routes it to b1's view.
    for (auto admin : {c.admin(0), c.admin(1)}) {
      auto unknown = submit_move(admin, "sec", 0, "b9");
      INFO(unknown.dump());
      CHECK(unknown["accepted"].empty());
      REQUIRE(unknown["rejected"].size() == 1);
      CHECK(unknown["rejected"][0]["error"] == "unknown_broker");
      auto dead = submit_move(admin, "sec", 0, "b3");
      INFO(dead.dump());
      CHECK(dead["accepted"].empty());
      REQUIRE(dead["rejected"].size() == 1);
      CHECK(dead["rejected"][0]["error"] == "broker_not_alive");
    }
    std::this_thread::sleep_for(300ms);
    unchanged();
  }

  SECTION("a second move of a partition being moved is rejected and a cancel before cutover leaves it on the source") {
    // Submitted through b2, whose admin API routes it to the owner b1.
    auto first = submit_move(c.admin(1), "sec", 1, "b2");
    INFO(first.dump());
    REQUIRE(first["accepted"].size() == 1);
    CHECK(first["accepted"][0]["from"] == "b1");
    wait_copied(c, 0, "sec", 1, "b1", 32 * 1024, 10s);
    auto second = submit_move(c.admin(0), "sec", 1, "b2");
    INFO(second.dump());
    CHECK(second["accepted"].empty());
    REQUIRE(second["rejected"].size() == 1);
    CHECK(second["rejected"][0]["error"] == "move_in_progress");

    auto cancel = call(c.admin(0), "DELETE", "/admin/reassignments/sec/1");
    INFO(cancel.raw);
    REQUIRE(cancel.status == 200);
    CHECK(cancel.body["state"] == "cancelled");
    auto row = wait_terminal(c, 0, "sec", 1, "b1", 10s);
    CHECK(row["state"] == "cancelled");
    CHECK(call(c.admin(0), "DELETE", "/admin/reassignments/sec/1").status == 404);
    // b1 still serves every record; b2 sends clients to b1.
    auto served = read_partition(c.client(0), "sec", 1);
    check_acked(slow, served);
    CHECK(who_serves(c.client(1), "sec", 1) == std::make_pair(421, std::string("b1")));
  }
}

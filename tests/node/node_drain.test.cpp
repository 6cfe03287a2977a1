// Drain and removal of a broker on three real moonmq-node processes with the
// metadata log (docs/metadata.md "Drain and removal"):
//  - POST /admin/brokers/{id}/drain empties the broker under produce load,
//    with the balancer configured off, and loses no acknowledged record;
//  - nothing moves onto a draining broker, by hand or by the balancer, and
//    the balancer does not fill it again;
//  - DELETE /admin/brokers/{id} is refused until the broker is drained and
//    empty, then removes it on every broker; new topics never land on it.

#include <catch2/catch.hpp>

#include "tests/node/metadata_cluster.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::meta;
using namespace std::chrono_literals;

namespace {

json broker_row(move_cluster& c, size_t via, const std::string& id) {
  return call(c.admin(via), "GET", "/admin/brokers/" + id).body;
}

/// Waits until broker `id` owns nothing and no move from or to it is running.
bool drained(move_cluster& c, const std::string& id, std::chrono::seconds timeout) {
  return wait_until(
    [&] {
      auto row = broker_row(c, 0, id);
      return row.value("partitions", -1) == 0 && row.value("moves_in_flight", -1) == 0;
    },
    timeout);
}

}  // namespace

TEST_CASE("a drained broker is emptied under produce load with the balancer off, then removed",
          "[node][metadata][raft][drain][scenario]") {
  // The balance loop is configured off: a drain is an operator's order, not
  // a proposal, so the controller's loop runs for it anyway.
  auto config = raft_config({"Autobalance.Enabled=false", "Autobalance.IntervalSeconds=1", "Autobalance.Window=3",
                             "Autobalance.MinValid=1"});
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  constexpr int partitions = 4;
  create_topic(c.client(2), "drained", partitions);  // all four on b3, the proposer
  // b3 answered once it applied the entry; b1 applies it a moment later.
  REQUIRE(wait_until([&] { return owned_by(c, 0, "drained") == std::map<std::string, int>{{"b3", partitions}}; }, 5s));

  // Unknown brokers and a removal before any drain are refused.
  auto unknown = call(c.admin(0), "POST", "/admin/brokers/b9/drain");
  CHECK(unknown.status == 404);
  auto early = call(c.admin(0), "DELETE", "/admin/brokers/b3");
  INFO(early.raw);
  CHECK(early.status == 409);
  CHECK(early.body.value("error", "") == "not_draining");

  std::vector<std::unique_ptr<producer>> producers;
  for (int p = 0; p < partitions; ++p)
    producers.push_back(std::make_unique<producer>(c.client(0), "drained", p, 5, "d" + std::to_string(p)));
  std::this_thread::sleep_for(500ms);

  auto drain = call(c.admin(1), "POST", "/admin/brokers/b3/drain");
  INFO(drain.raw << "\n" << log_tails(c));
  REQUIRE(drain.status == 202);
  CHECK(drain.body.value("state", "") == "draining");
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return broker_row(c, i, "b3").value("state", "") == "draining"; }, 5s));
  }
  // Still owning partitions: not removable yet. Which refusal comes first
  // depends on timing: the drain's first moves may already be running.
  auto busy = call(c.admin(0), "DELETE", "/admin/brokers/b3");
  INFO(busy.raw);
  CHECK(busy.status == 409);
  auto refusal = busy.body.value("error", "");
  CHECK((refusal == "broker_not_empty" || refusal == "moves_in_flight"));
  // Nothing moves onto a draining broker by hand either.
  create_topic(c.client(0), "elsewhere", 1);
  auto onto = call(c.admin(0), "POST", "/admin/reassignments",
                   json{{"version", 1}, {"partitions", {{{"topic", "elsewhere"}, {"partition", 0}, {"replicas", {"b3"}}}}}}
                     .dump());
  INFO(onto.raw);
  CHECK((onto.status == 202 && onto.body["rejected"].size() == 1
         && onto.body["rejected"][0].dump().find("broker_draining") != std::string::npos));

  // Empty once it owns nothing and no move from it is still confirming.
  bool empty = drained(c, "b3", 90s);
  INFO("owners " << json(owned_by(c, 0, "drained")).dump() << "\n" << lines_with(c, "balancer.", 20));
  REQUIRE(empty);
  auto spread = owned_by(c, 0, "drained");
  CHECK(spread["b3"] == 0);
  CHECK(spread["b1"] + spread["b2"] == partitions);
  CHECK(spread["b1"] >= 1);
  CHECK(spread["b2"] >= 1);
  // The balancer leaves it empty.
  std::this_thread::sleep_for(3s);
  CHECK(broker_row(c, 0, "b3").value("partitions", -1) == 0);

  auto total = stop_and_count_loss(producers, "drained", [&](int p) {
    auto owner = owner_seen_by(c, 0, "drained", p);
    REQUIRE(owner);
    return c.client(*owner);
  });
  INFO(total.text());
  CHECK(total.lost() == 0);

  // Drained and empty: removed, on every broker, through moonmqctl.
  auto [rc, out] = moonmqctl(c.admin(1), "broker remove b3 --format json");
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(json::parse(out, nullptr, false).value("state", "") == "removed");
  for (size_t i = 0; i < 3; ++i) {
    INFO(c.id(i));
    CHECK(wait_until([&] { return broker_row(c, i, "b3").value("state", "") == "removed"; }, 5s));
  }
  auto list = call(c.admin(2), "GET", "/admin/brokers");
  INFO(list.raw);
  REQUIRE(list.status == 200);
  CHECK(list.body["brokers"].size() == 3);
  // A removed broker cannot be drained again, and a topic created through
  // it is owned elsewhere.
  CHECK(call(c.admin(0), "POST", "/admin/brokers/b3/drain").status == 409);
  create_topic(c.client(2), "after", 2);
  std::map<std::string, int> after;
  wait_until([&] { return !(after = owned_by(c, 0, "after")).empty(); }, 5s);
  INFO(json(after).dump());
  CHECK(after.count("b3") == 0);
  CHECK(after["b1"] == 2);
}

TEST_CASE("a drain is cancelled with DELETE /admin/brokers/{id}/drain", "[node][metadata][raft][drain][scenario]") {
  move_cluster c{{"b1", "b2", "b3"}, raft_config()};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  // No balance loop runs (Autobalance off and no drain left): the
  // partitions stay where they are once the drain is cancelled.
  REQUIRE(call(c.admin(0), "POST", "/admin/brokers/b2/drain").status == 202);
  auto undrain = call(c.admin(2), "DELETE", "/admin/brokers/b2/drain");
  INFO(undrain.raw);
  REQUIRE(undrain.status == 200);
  CHECK(undrain.body.value("state", "") == "active");
  CHECK(call(c.admin(0), "DELETE", "/admin/brokers/b2").body.value("error", "") == "not_draining");
}

TEST_CASE("a drain runs while the balancer is live in DryRun, and only the drain moves", "[node][metadata][raft][drain][scenario]") {
  // DryRun: the goals plan but move nothing; the drain's moves are made.
  auto config = raft_config();
  for (auto& a : autobalance(true, 1))
    config.push_back(a);
  move_cluster c{{"b1", "b2", "b3"}, config};
  start_all(c);
  if (!agreed_leader(c, {0, 1, 2}, 0, 4 * election_bound))
    FAIL("no leader elected\n" << log_tails(c));
  create_topic(c.client(0), "skewed", 4);  // all on b1: the goals would spread them, but DryRun
  create_topic(c.client(2), "leaving", 3);  // all on b3, to be drained
  REQUIRE(wait_until([&] { return owned_by(c, 0, "leaving") == std::map<std::string, int>{{"b3", 3}}; }, 5s));
  REQUIRE(call(c.admin(0), "POST", "/admin/brokers/b3/drain").status == 202);
  bool empty = drained(c, "b3", 60s);
  INFO("leaving " << json(owned_by(c, 0, "leaving")).dump() << "\n" << lines_with(c, "balancer.", 20));
  REQUIRE(empty);
  // No goal move was made: skewed stays on b1.
  CHECK(owned_by(c, 0, "skewed") == std::map<std::string, int>{{"b1", 4}});
  CHECK(call(c.admin(1), "DELETE", "/admin/brokers/b3").status == 200);
}

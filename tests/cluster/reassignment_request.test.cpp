#include <catch2/catch.hpp>

#include <string>

#include "cluster/reassignment_request.hpp"

using namespace moonmq::cluster;
using json = nlohmann::json;

namespace {

/// b1, b2 alive, b3 dead. orders has partitions 0..3 (0,1 on b1; 2 on b2;
/// 3 on b3); payments/0 on b1 is being moved already; __internal/0 exists.
cluster_view test_view() {
  cluster_view v;
  v.brokers = {{broker_id{"b1"}, true}, {broker_id{"b2"}, true}, {broker_id{"b3"}, false}};
  v.owner_of = [](const topic_partition& tp) -> std::optional<broker_id> {
    if (tp.topic == "orders" && tp.partition >= 0 && tp.partition <= 3)
      return broker_id{tp.partition <= 1 ? "b1" : tp.partition == 2 ? "b2" : "b3"};
    if ((tp.topic == "payments" || tp.topic == "__internal") && tp.partition == 0)
      return broker_id{"b1"};
    return std::nullopt;
  };
  v.moving = [](const topic_partition& tp) { return tp.topic == "payments"; };
  return v;
}

json entry(const std::string& topic, int partition, json replicas) {
  return {{"topic", topic}, {"partition", partition}, {"replicas", std::move(replicas)}};
}

reassignment_outcome parse(const json& partitions) {
  json body = {{"version", 1}, {"partitions", partitions}};
  auto r = parse_reassignment_request(body.dump(), test_view());
  REQUIRE(r.ok());
  return std::move(r).value();
}

/// The single rejection code for a request holding one entry.
std::string rejection_of(const json& e) {
  auto out = parse(json::array({e}));
  REQUIRE(out.accepted.empty());
  REQUIRE(out.rejected.size() == 1);
  return out.rejected[0].error;
}

}  // namespace

TEST_CASE("a valid entry becomes a queued move from the current owner", "[cluster][request]") {
  auto out = parse(json::array({entry("orders", 0, {"b2"})}));
  REQUIRE(out.accepted.size() == 1);
  CHECK(out.rejected.empty());
  // Built field by field: GCC 12 warns maybe-uninitialized on a braced
  // temporary inside CHECK.
  requested_move expected;
  expected.tp = {"orders", 0};
  expected.from = broker_id{"b1"};
  expected.to = broker_id{"b2"};
  CHECK(out.accepted[0] == expected);
  auto j = to_json(out);
  CHECK(j["accepted"][0] == json{{"topic", "orders"}, {"partition", 0}, {"replicas", {"b2"}},
                                 {"from", "b1"}, {"to", "b2"}, {"state", "queued"}});
  CHECK(j["rejected"] == json::array());
}

TEST_CASE("per-entry validation table", "[cluster][request]") {
  struct row {
    json e;
    const char* code;
  };
  const row rows[] = {
      {json(42), "invalid_entry"},
      {json{{"partition", 0}, {"replicas", {"b2"}}}, "invalid_entry"},
      {json{{"topic", "orders"}, {"partition", "0"}, {"replicas", {"b2"}}}, "invalid_entry"},
      {json{{"topic", "orders"}, {"partition", 0}, {"replicas", "b2"}}, "invalid_entry"},
      {entry("bad..name", 0, {"b2"}), "invalid_topic"},
      {entry("bad/name", 0, {"b2"}), "invalid_topic"},
      {entry(std::string(250, 't'), 0, {"b2"}), "invalid_topic"},
      {entry("__internal", 0, {"b2"}), "internal_topic"},
      {entry("orders", -1, {"b2"}), "invalid_partition"},
      {entry("orders", 0, json::array()), "invalid_replicas"},
      {entry("orders", 0, {"b1", "b2"}), "invalid_replicas"},
      {entry("orders", 0, {4}), "unknown_broker"},
      {entry("orders", 0, {0}), "unknown_broker"},
      {entry("orders", 0, {1.5}), "invalid_replicas"},
      {entry("orders", 0, {"b9"}), "unknown_broker"},
      {entry("orders", 0, {"b3"}), "broker_not_alive"},
      {entry("orders", 4, {"b2"}), "unknown_partition"},
      {entry("nosuch", 0, {"b2"}), "unknown_partition"},
      {entry("orders", 3, {"b1"}), "source_not_alive"},
      {entry("payments", 0, {"b2"}), "move_in_progress"},
  };
  for (const auto& r : rows) {
    INFO(r.e.dump());
    CHECK(rejection_of(r.e) == r.code);
  }
}

TEST_CASE("a partition beyond int32 is an invalid partition", "[cluster][request]") {
  json e = {{"topic", "orders"}, {"partition", 4294967296LL}, {"replicas", {"b2"}}};
  CHECK(rejection_of(e) == "invalid_partition");
}

TEST_CASE("more than one replica is refused with an explanation of the single copy", "[cluster][request]") {
  auto out = parse(json::array({entry("orders", 0, {"b1", "b2"})}));
  REQUIRE(out.rejected.size() == 1);
  CHECK_THAT(out.rejected[0].message, Catch::Contains("one copy"));
}

TEST_CASE("rejected entries echo the entry with error and message", "[cluster][request]") {
  auto out = parse(json::array({entry("orders", 0, {"b9"}), entry("orders", 1, {"b2"})}));
  auto j = to_json(out);
  REQUIRE(j["rejected"].size() == 1);
  CHECK(j["rejected"][0]["topic"] == "orders");
  CHECK(j["rejected"][0]["partition"] == 0);
  CHECK(j["rejected"][0]["replicas"] == json{"b9"});
  CHECK(j["rejected"][0]["error"] == "unknown_broker");
  CHECK(j["rejected"][0]["message"].get<std::string>().find("b9") != std::string::npos);
  REQUIRE(j["accepted"].size() == 1);
  CHECK(j["accepted"][0]["partition"] == 1);
  // A non-object entry is wrapped so that "error" can sit beside it.
  auto odd = to_json(parse(json::array({json("x")})));
  CHECK(odd["rejected"][0]["entry"] == "x");
  CHECK(odd["rejected"][0]["error"] == "invalid_entry");
}

TEST_CASE("every occurrence of a duplicated partition is rejected", "[cluster][request]") {
  auto out = parse(json::array({entry("orders", 0, {"b2"}), entry("orders", 1, {"b2"}), entry("orders", 0, {"b1"})}));
  REQUIRE(out.accepted.size() == 1);
  CHECK(out.accepted[0].tp == topic_partition{"orders", 1});
  REQUIRE(out.rejected.size() == 2);
  CHECK(out.rejected[0].error == "duplicate_partition");
  CHECK(out.rejected[1].error == "duplicate_partition");
}

TEST_CASE("a move to the current owner is accepted as a no-op reported done", "[cluster][request]") {
  auto out = parse(json::array({entry("orders", 2, {"b2"})}));
  REQUIRE(out.accepted.size() == 1);
  CHECK(out.accepted[0].noop);
  CHECK(to_json(out)["accepted"][0]["state"] == "done");
  // A dead destination is refused even when it is the current owner.
  auto dead_owner = parse(json::array({entry("orders", 3, {"b3"})}));
  CHECK(dead_owner.rejected[0].error == "broker_not_alive");
  // Staying put while a move away is running is not "done".
  auto mid_move = parse(json::array({entry("payments", 0, {"b1"})}));
  REQUIRE(mid_move.rejected.size() == 1);
  CHECK(mid_move.rejected[0].error == "move_in_progress");
}

TEST_CASE("malformed bodies are refused as a whole", "[cluster][request]") {
  auto v = test_view();
  const std::string bad[] = {
      "not json",
      "[]",
      R"({"partitions":[]})",
      R"({"version":2,"partitions":[]})",
      R"({"version":"1","partitions":[]})",
      R"({"version":1})",
      R"({"version":1,"partitions":{}})",
  };
  for (const auto& body : bad) {
    INFO(body);
    auto r = parse_reassignment_request(body, v);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::invalid_request);
  }
  auto ver = parse_reassignment_request(R"({"version":2,"partitions":[]})", v);
  CHECK_THAT(ver.err().message, Catch::Contains("must be 1"));
  json many = {{"version", 1}, {"partitions", json::array()}};
  for (size_t i = 0; i <= max_reassignment_entries; ++i)
    many["partitions"].push_back(entry("orders", 0, {"b2"}));
  CHECK(parse_reassignment_request(many.dump(), v).err().code == errc::invalid_request);
}

TEST_CASE("an empty partition list is accepted with nothing to do", "[cluster][request]") {
  auto out = parse(json::array());
  CHECK(out.accepted.empty());
  CHECK(out.rejected.empty());
}

TEST_CASE("replicas may name the new owner by Kafka node id, as Kafka's reassignment tool writes them",
          "[cluster][request]") {
  // Node ids number the brokers 1..N in id order: b1 = 1, b2 = 2, b3 = 3.
  auto out = parse(json::array({entry("orders", 0, {2}), entry("orders", 2, {1})}));
  REQUIRE(out.accepted.size() == 2);
  CHECK(out.accepted[0].to == broker_id{"b2"});
  CHECK(out.accepted[0].from == broker_id{"b1"});
  CHECK(out.accepted[1].to == broker_id{"b1"});
  CHECK(out.accepted[1].from == broker_id{"b2"});
  CHECK(rejection_of(entry("orders", 0, {3})) == "broker_not_alive");
}

TEST_CASE("a plan's reason is kept for its moves, and a bad one refuses the whole body", "[cluster][request]") {
  json body = {{"version", 1}, {"partitions", json::array({entry("orders", 0, {"b2"})})},
               {"reason", "rack r1 maintenance"}};
  auto r = parse_reassignment_request(body.dump(), test_view());
  REQUIRE(r.ok());
  CHECK(r->reason == "rack r1 maintenance");
  CHECK(r->accepted.size() == 1);
  // Absent: none.
  CHECK(parse(json::array({entry("orders", 0, {"b2"})})).reason.empty());
  for (const json& bad : {json(7), json(std::string(257, 'x')), json("two\nlines")}) {
    body["reason"] = bad;
    auto refused = parse_reassignment_request(body.dump(), test_view());
    INFO(bad.dump());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.err().code == errc::invalid_request);
    CHECK_THAT(refused.err().message, Catch::Contains("\"reason\""));
  }
}

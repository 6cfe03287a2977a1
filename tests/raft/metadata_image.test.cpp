// Topic entries of the metadata log (docs/raft.md "What is replicated"): a
// create names an owner for every partition in the same entry, a growth
// owns what it adds, racing creates resolve by log order, and snapshots keep
// topics (old snapshots without them still load).

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core_fixture.hpp"
#include "raft/ownership_state.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;
using nlohmann::json;

namespace {

log_entry topic_at(uint64_t t, uint64_t i, const std::string& name, int32_t n, const std::string& owner,
                   bool grow = false, const std::string& config = "") {
  return log_entry{term{t}, log_index{i}, topic_entry{name, n, node_id{owner}, config, grow}};
}

}  // namespace

TEST_CASE("a topic entry has the documented JSON shape and decodes strictly", "[raft][wire][metadata]") {
  json j = to_json(topic_at(2, 5, "race0", 6, "b1", false, R"({"retention_ms":1000})"));
  CHECK(j == json::parse(R"({"term":2,"index":5,"type":"topic","topic":"race0","partitions":6,"owner":"b1",
                             "config":"{\"retention_ms\":1000}","grow":false})"));
  auto back = entry_from_json(j);
  REQUIRE(back.ok());
  CHECK(*back == topic_at(2, 5, "race0", 6, "b1", false, R"({"retention_ms":1000})"));

  for (const char* bad : {R"({"term":2,"index":5,"type":"topic","topic":"t","partitions":0,"owner":"b1","config":"","grow":false})",
                          R"({"term":2,"index":5,"type":"topic","topic":"t","partitions":100001,"owner":"b1","config":"","grow":false})",
                          R"({"term":2,"index":5,"type":"topic","topic":"a..b","partitions":1,"owner":"b1","config":"","grow":false})",
                          R"({"term":2,"index":5,"type":"topic","topic":"t","partitions":1,"owner":"","config":"","grow":false})",
                          R"({"term":2,"index":5,"type":"topic","topic":"t","partitions":1,"owner":"b1","config":"","grow":1})",
                          R"({"term":2,"index":5,"type":"topic","topic":"t","partitions":1,"owner":"b1","grow":false})"}) {
    INFO(bad);
    auto r = entry_from_json(json::parse(bad));
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::malformed);
  }
  // The propose body is the payload alone.
  auto p = payload_from_json(json::parse(R"({"type":"topic","topic":"t","partitions":2,"owner":"b3","config":"","grow":true})"));
  REQUIRE(p.ok());
  CHECK(std::get<topic_entry>(*p) == topic_entry{"t", 2, id("b3"), "", true});
  CHECK_FALSE(payload_from_json(json::parse(R"({"type":"nope"})")).ok());
}

TEST_CASE("a created topic has an owner for every partition from its own entry", "[raft][metadata]") {
  ownership_state s;
  REQUIRE(s.apply(topic_at(1, 1, "race0", 6, "b1")).ok());
  REQUIRE(s.topics().count("race0") == 1);
  CHECK(s.topics().at("race0").partitions == 6);
  CHECK(s.topics().at("race0").created_at == log_index{1});
  for (int32_t p = 0; p < 6; ++p)
    CHECK(s.owner_of({"race0", p}) == id("b1"));
  CHECK_FALSE(s.owner_of({"race0", 6}));

  // A move's owner change, then a growth by another broker: the moved row
  // stays, the new partitions belong to the grower.
  REQUIRE(s.apply(owner_at(1, 2, "race0", 0, "b3")).ok());
  REQUIRE(s.apply(topic_at(1, 3, "race0", 8, "b2", true)).ok());
  CHECK(s.topics().at("race0").partitions == 8);
  CHECK(s.owner_of({"race0", 0}) == id("b3"));
  CHECK(s.owner_of({"race0", 5}) == id("b1"));
  CHECK(s.owner_of({"race0", 6}) == id("b2"));
  CHECK(s.owner_of({"race0", 7}) == id("b2"));
  // A growth to a smaller count, or of an unknown topic, changes nothing.
  REQUIRE(s.apply(topic_at(1, 4, "race0", 3, "b3", true)).ok());
  REQUIRE(s.apply(topic_at(1, 5, "ghost", 3, "b3", true)).ok());
  CHECK(s.topics().at("race0").partitions == 8);
  CHECK(s.topics().count("ghost") == 0);
  CHECK_FALSE(s.owner_of({"ghost", 0}));
}

TEST_CASE("of two racing creates the first in log order wins whole", "[raft][metadata]") {
  ownership_state s;
  REQUIRE(s.apply(topic_at(1, 1, "orders", 3, "b1", false, R"({"a":1})")).ok());
  REQUIRE(s.apply(topic_at(1, 2, "orders", 6, "b2", false, R"({"a":2})")).ok());
  const auto& t = s.topics().at("orders");
  CHECK(t.partitions == 3);
  CHECK(t.config == R"({"a":1})");
  CHECK(t.created_at == log_index{1});  // the second proposer sees it did not create the topic
  for (int32_t p = 0; p < 3; ++p)
    CHECK(s.owner_of({"orders", p}) == id("b1"));
  CHECK_FALSE(s.owner_of({"orders", 3}));
}

TEST_CASE("snapshots keep topics, and a snapshot without them still loads", "[raft][metadata][wire]") {
  ownership_state s;
  REQUIRE(s.apply(topic_at(1, 1, "race0", 2, "b1")).ok());
  REQUIRE(s.apply(owner_at(1, 2, "race0", 1, "b2")).ok());
  auto snap = s.to_snapshot();
  auto back = snapshot_from_json(to_json(snap));
  REQUIRE(back.ok());
  CHECK(*back == snap);
  ownership_state loaded;
  loaded.load(*back);
  CHECK(loaded == s);

  auto old = snapshot_from_json(json::parse(
    R"({"last_index":4,"last_term":1,"controller":"b1","owners":[{"topic":"o","partition":0,"owner":"b2"}]})"));
  REQUIRE(old.ok());
  CHECK(old->topics.empty());
  CHECK(old->owners.size() == 1);
  CHECK_FALSE(snapshot_from_json(json::parse(
                R"({"last_index":4,"last_term":1,"controller":"b1","owners":[],
                    "topics":[{"topic":"o","partitions":0,"config":"","created_at":1}]})"))
                .ok());
  CHECK_FALSE(snapshot_from_json(json::parse(
                R"({"last_index":4,"last_term":1,"controller":"b1","owners":[],
                    "topics":[{"topic":"o","partitions":1,"config":"","created_at":1},
                              {"topic":"o","partitions":2,"config":"","created_at":2}]})"))
                .ok());
}

TEST_CASE("config entries merge the dynamic balancer settings key by key, null removes a key",
          "[raft][metadata]") {
  ownership_state s;
  CHECK(s.balancer() == "{}");
  REQUIRE(s.apply(log_entry{term{1}, log_index{1}, config_entry{R"({"DryRun":false,"ExcludedTopics":["a"]})"}}).ok());
  REQUIRE(s.apply(log_entry{term{1}, log_index{2}, config_entry{R"({"Enabled":true,"DryRun":true})"}}).ok());
  CHECK(json::parse(s.balancer()) == json::parse(R"({"DryRun":true,"Enabled":true,"ExcludedTopics":["a"]})"));
  REQUIRE(s.apply(log_entry{term{1}, log_index{3}, config_entry{R"({"ExcludedTopics":null})"}}).ok());
  CHECK(json::parse(s.balancer()) == json::parse(R"({"DryRun":true,"Enabled":true})"));

  auto snap = s.to_snapshot();
  auto back = snapshot_from_json(to_json(snap));
  REQUIRE(back.ok());
  CHECK(back->balancer == s.balancer());
  auto e = entry_from_json(to_json(log_entry{term{1}, log_index{4}, config_entry{R"({"DryRun":false})"}}));
  REQUIRE(e.ok());
  CHECK(std::get<config_entry>(e->payload).balancer == R"({"DryRun":false})");
  CHECK_FALSE(entry_from_json(json::parse(R"({"term":1,"index":4,"type":"config","balancer":"[1]"})")).ok());
  CHECK_FALSE(entry_from_json(json::parse(R"({"term":1,"index":4,"type":"config","balancer":{}})")).ok());
}

TEST_CASE("broker entries fence and unfence, the fenced set is in snapshots", "[raft][metadata]") {
  ownership_state s;
  REQUIRE(s.apply(log_entry{term{1}, log_index{1}, broker_entry{id("b2"), broker_change::fence, {}}}).ok());
  REQUIRE(s.apply(log_entry{term{1}, log_index{2}, broker_entry{id("b3"), broker_change::fence, {}}}).ok());
  REQUIRE(s.apply(log_entry{term{1}, log_index{3}, broker_entry{id("b3"), broker_change::unfence, {}, false}}).ok());
  CHECK(s.fenced() == std::set<node_id>{id("b2")});
  auto back = snapshot_from_json(to_json(s.to_snapshot()));
  REQUIRE(back.ok());
  CHECK(back->fenced == s.fenced());
  auto e = entry_from_json(json::parse(R"({"term":1,"index":4,"type":"broker","id":"b2","fenced":false})"));
  REQUIRE(e.ok());
  CHECK(std::get<broker_entry>(e->payload) == broker_entry{id("b2"), broker_change::unfence, {}, false});
  CHECK_FALSE(entry_from_json(json::parse(R"({"term":1,"index":4,"type":"broker","id":"","fenced":true})")).ok());
  CHECK_FALSE(snapshot_from_json(json::parse(
                R"({"last_index":1,"last_term":1,"controller":"","owners":[],"fenced":[3]})"))
                .ok());
}

TEST_CASE("a drained broker is removed only once it owns nothing, decided in log order", "[raft][metadata]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) { REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok()); };
  apply(topic_entry{"orders", 2, id("b3"), "", false});
  // Not draining: a remove changes nothing.
  apply(broker_entry{id("b3"), broker_change::remove, {}, false});
  CHECK(s.removed().empty());
  apply(broker_entry{id("b3"), broker_change::drain, {}, false});
  CHECK(s.draining() == std::set<node_id>{id("b3")});
  // Draining but still owning partitions: stays.
  apply(broker_entry{id("b3"), broker_change::remove, {}, false});
  CHECK(s.removed().empty());
  CHECK(s.owned_by(id("b3")) == 2);
  apply(owner_entry{"orders", 0, id("b1")});
  apply(owner_entry{"orders", 1, id("b2")});
  CHECK(s.owned_by(id("b3")) == 0);
  apply(broker_entry{id("b3"), broker_change::fence, {}, false});
  apply(broker_entry{id("b3"), broker_change::remove, {}, false});
  CHECK(s.removed() == std::set<node_id>{id("b3")});
  CHECK(s.draining().empty());
  CHECK(s.fenced().empty());
  // A removed broker cannot be drained again.
  apply(broker_entry{id("b3"), broker_change::drain, {}, false});
  CHECK(s.draining().empty());
  // undrain cancels a drain.
  apply(broker_entry{id("b2"), broker_change::drain, {}, false});
  apply(broker_entry{id("b2"), broker_change::undrain, {}, false});
  CHECK(s.draining().empty());
  apply(broker_entry{id("b1"), broker_change::drain, {}, false});

  auto back = snapshot_from_json(to_json(s.to_snapshot()));
  REQUIRE(back.ok());
  CHECK(back->draining == std::set<node_id>{id("b1")});
  CHECK(back->removed == std::set<node_id>{id("b3")});
  ownership_state loaded;
  loaded.load(*back);
  CHECK(loaded == s);
}

TEST_CASE("broker entries name their change, old fenced-only entries still decode", "[raft][wire][metadata]") {
  json j = to_json(log_entry{term{2}, log_index{7}, broker_entry{id("b3"), broker_change::drain, {}, false}});
  CHECK(j == json::parse(R"({"term":2,"index":7,"type":"broker","id":"b3","change":"drain"})"));
  json f = to_json(log_entry{term{2}, log_index{8}, broker_entry{id("b3"), broker_change::fence, {}, false}});
  CHECK(f == json::parse(R"({"term":2,"index":8,"type":"broker","id":"b3","change":"fence","fenced":true})"));
  auto old = entry_from_json(json::parse(R"({"term":1,"index":4,"type":"broker","id":"b2","fenced":true})"));
  REQUIRE(old.ok());
  CHECK(std::get<broker_entry>(old->payload) == broker_entry{id("b2"), broker_change::fence, {}, false});
  for (auto c : {"fence", "unfence", "drain", "undrain", "remove"}) {
    auto e = entry_from_json(json{{"term", 1}, {"index", 4}, {"type", "broker"}, {"id", "b2"}, {"change", c}});
    REQUIRE(e.ok());
    CHECK(to_string(std::get<broker_entry>(e->payload).change) == std::string(c));
  }
  auto bad = entry_from_json(json::parse(R"({"term":1,"index":4,"type":"broker","id":"b2","change":"evict"})"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.err().message.find("change") != std::string::npos);
  // Snapshots written before drains existed load with none.
  auto snap = snapshot_from_json(json::parse(R"({"last_index":1,"last_term":1,"controller":"","owners":[]})"));
  REQUIRE(snap.ok());
  CHECK(snap->draining.empty());
  CHECK(snap->removed.empty());
  CHECK_FALSE(snapshot_from_json(json::parse(
                R"({"last_index":1,"last_term":1,"controller":"","owners":[],"removed":["b 2"]})"))
                .ok());
}

TEST_CASE("a snapshot holds owners per topic as broker indexes, older snapshots with owner rows still load",
          "[raft][snapshot][metadata]") {
  snapshot s;
  s.last_index = log_index{9};
  s.last_term = term{2};
  s.topics["orders"] = topic_record{3, "", log_index{4}};
  s.owners[{"orders", 0}] = id("b2");
  s.owners[{"orders", 1}] = id("b1");
  s.owners[{"orders", 2}] = id("b2");
  s.owners[{"legacy", 0}] = id("b3");  // no topic entry: a row of its own
  json j = to_json(s);
  CHECK(j["brokers"] == json::parse(R"(["b3","b2","b1"])"));  // in the order rows are met
  CHECK(j["topics"][0]["owners"] == json::parse("[1,2,1]"));
  CHECK(j["owners"] == json::parse(R"([{"topic":"legacy","partition":0,"owner":"b3"}])"));
  auto back = snapshot_from_json(j);
  REQUIRE(back.ok());
  CHECK(*back == s);
  // As read from a file or the wire (indexes parse as unsigned numbers).
  auto parsed = snapshot_from_json(json::parse(j.dump()));
  REQUIRE(parsed.ok());
  CHECK(*parsed == s);

  // The same image as written before per-topic owners: every row at the top.
  auto old = snapshot_from_json(json::parse(R"({"last_index":9,"last_term":2,"controller":"",
    "owners":[{"topic":"legacy","partition":0,"owner":"b3"},{"topic":"orders","partition":0,"owner":"b2"},
              {"topic":"orders","partition":1,"owner":"b1"},{"topic":"orders","partition":2,"owner":"b2"}],
    "topics":[{"topic":"orders","partitions":3,"config":"","created_at":4}]})"));
  REQUIRE(old.ok());
  CHECK(*old == s);

  // A partition without a row is -1; bad arrays are refused with the field named.
  s.owners.erase({"orders", 1});
  auto gap = to_json(s);
  CHECK(gap["topics"][0]["owners"][1] == -1);
  REQUIRE(snapshot_from_json(gap).ok());
  CHECK(*snapshot_from_json(gap) == s);
  for (const char* bad : {"[0,1]", "[0,1,9]", "[0,\"b1\",0]", "[0,-2,0]", "[0,18446744073709551615,0]", "[0,1.0,0]"}) {
    json k = j;
    k["topics"][0]["owners"] = json::parse(bad);
    auto r = snapshot_from_json(k);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message.find("owners") != std::string::npos);
  }
  json dup = j;
  dup["owners"].push_back(json{{"topic", "orders"}, {"partition", 0}, {"owner", "b1"}});
  CHECK_FALSE(snapshot_from_json(dup).ok());
}

TEST_CASE("a registration is applied, replaced, dropped on removal and admitted again", "[raft][metadata]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) { REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok()); };
  apply(broker_entry{id("b4"), broker_change::register_broker, {"h:1", "h:2", ""}});
  REQUIRE(s.registered().count(id("b4")) == 1);
  CHECK(s.registered().at(id("b4")).client == "h:2");
  apply(broker_entry{id("b4"), broker_change::register_broker, {"h:5", "h:6", "h:7"}});  // restarted elsewhere
  CHECK(s.registered().at(id("b4")).cluster == "h:5");
  apply(broker_entry{id("b4"), broker_change::drain, {}});
  apply(broker_entry{id("b4"), broker_change::remove, {}});
  CHECK(s.registered().count(id("b4")) == 1);  // still listed, as removed
  CHECK(s.removed().count(id("b4")) == 1);
  apply(broker_entry{id("b4"), broker_change::register_broker, {"h:5", "h:6", "h:7"}});
  CHECK(s.removed().empty());
  CHECK(s.registered().count(id("b4")) == 1);
  ownership_state copy;
  copy.load(s.to_snapshot());
  CHECK(copy == s);
}

TEST_CASE("a joined broker's Kafka node id is given at its first registration and never changes", "[raft][metadata]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) { REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok()); };
  auto join = [&](const char* b, const char* at) {
    apply(broker_entry{id(b), broker_change::register_broker, {at, "", ""}, true});
  };
  // Log order, not id order: b9 registers before b10 and b0.
  join("b9", "h:1");
  join("b10", "h:2");
  join("b0", "h:3");
  CHECK(s.kafka_node_ids() == std::map<node_id, int32_t>{{id("b9"), first_joined_kafka_node_id},
                                                         {id("b10"), first_joined_kafka_node_id + 1},
                                                         {id("b0"), first_joined_kafka_node_id + 2}});
  // Re-registering elsewhere, removal and admission again keep the id.
  join("b9", "h:9");
  apply(broker_entry{id("b9"), broker_change::drain, {}, false});
  apply(broker_entry{id("b9"), broker_change::remove, {}, false});
  REQUIRE(s.removed().count(id("b9")) == 1);
  join("b9", "h:9");
  join("b11", "h:4");
  CHECK(s.kafka_node_ids().at(id("b9")) == first_joined_kafka_node_id);
  CHECK(s.kafka_node_ids().at(id("b11")) == first_joined_kafka_node_id + 3);
  // A register entry written before ids were given (no "assign_node_id")
  // gives none, on replay as in a snapshot of its time; the broker's next
  // registration does.
  apply(broker_entry{id("b12"), broker_change::register_broker, {"h:5", "", ""}, false});
  CHECK(s.registered().count(id("b12")) == 1);
  CHECK(s.kafka_node_ids().count(id("b12")) == 0);
  // The snapshot carries them, and the entry's flag survives its JSON.
  auto j = to_json(s.to_snapshot());
  auto back = snapshot_from_json(j);
  REQUIRE(back.ok());
  ownership_state copy;
  copy.load(*back);
  CHECK(copy == s);
  auto entry = payload_from_json(to_json(entry_payload{broker_entry{id("b12"), broker_change::register_broker,
                                                                          {"h:5", "", ""}, true}}));
  REQUIRE(entry.ok());
  CHECK(std::get<broker_entry>(*entry).assign_node_id);
  join("b12", "h:5");
  CHECK(s.kafka_node_ids().at(id("b12")) == first_joined_kafka_node_id + 4);
  // A node id below the joined range, or one two brokers share, is malformed.
  json bad = j;
  bad["registered"][0]["kafka_node_id"] = 3;
  CHECK_FALSE(snapshot_from_json(bad).ok());
  json twice = j;
  twice["registered"][0]["kafka_node_id"] = twice["registered"][1]["kafka_node_id"];
  CHECK_FALSE(snapshot_from_json(twice).ok());
}

TEST_CASE("owner epochs: 1 at creation, bumped by each owner change, a conditional change applies only at its epoch",
          "[raft][metadata]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) {
    REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok());
    return log_index{i};
  };
  topic_partition tp{"orders", 0};
  CHECK(s.epoch_of(tp) == 0);  // no owner: no epoch
  apply(topic_entry{"orders", 2, id("b1"), "", false});
  CHECK(s.epoch_of(tp) == 1);
  apply(owner_entry{"orders", 0, id("b2"), 0});  // a move's cutover
  CHECK(s.epoch_of(tp) == 2);
  // The source gives up at epoch 2 while the destination confirms at
  // epoch 2: whichever the log orders first wins, the other is a no-op.
  auto confirm = apply(owner_entry{"orders", 0, id("b2"), 2});
  auto take_back = apply(owner_entry{"orders", 0, id("b1"), 2});
  CHECK_FALSE(s.refused(confirm));
  CHECK(s.refused(take_back));
  CHECK(s.owner_of(tp) == id("b2"));
  CHECK(s.epoch_of(tp) == 3);
  // The other order.
  topic_partition tp1{"orders", 1};
  apply(owner_entry{"orders", 1, id("b2"), 0});
  auto back = apply(owner_entry{"orders", 1, id("b1"), 2});
  auto late = apply(owner_entry{"orders", 1, id("b2"), 2});
  CHECK_FALSE(s.refused(back));
  CHECK(s.refused(late));
  CHECK(s.owner_of(tp1) == id("b1"));
  // Epochs survive a snapshot (only those above 1 are written).
  auto snap = s.to_snapshot();
  CHECK(snap.epochs.size() == 2);
  auto j = to_json(snap);
  auto parsed = snapshot_from_json(j);
  REQUIRE(parsed.ok());
  ownership_state copy;
  copy.load(*parsed);
  CHECK(copy.epoch_of(tp) == 3);
  CHECK(copy.epoch_of(tp1) == 3);
  // A snapshot written before epochs: every owned partition at 1.
  j.erase("epochs");
  auto older = snapshot_from_json(j);
  REQUIRE(older.ok());
  ownership_state old;
  old.load(*older);
  CHECK(old.epoch_of(tp) == 1);
  // A conditional entry survives the wire.
  auto wire = entry_from_json(to_json(log_entry{term{1}, log_index{9}, owner_entry{"orders", 0, id("b1"), 7}}));
  REQUIRE(wire.ok());
  CHECK(std::get<owner_entry>(wire->payload).expect_epoch == 7);
}

TEST_CASE("a failover's owner change applies only while the current owner is fenced in log order", "[raft][metadata]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) {
    REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok());
    return log_index{i};
  };
  topic_partition tp{"orders", 0};
  apply(topic_entry{"orders", 1, id("b1"), "", false});
  auto failover = [&](uint64_t epoch) {
    owner_entry o{"orders", 0, id("b2"), epoch};
    o.expect_owner_fenced = true;
    return apply(o);
  };
  // b1 is not fenced: refused, nothing changes.
  auto early = failover(1);
  CHECK(s.refused(early));
  CHECK(s.owner_of(tp) == id("b1"));
  // Fenced: applied.
  apply(broker_entry{id("b1"), broker_change::fence, {}, false});
  auto handed = failover(1);
  CHECK_FALSE(s.refused(handed));
  CHECK(s.owner_of(tp) == id("b2"));
  CHECK(s.epoch_of(tp) == 2);
  // An unfence ordered before the entry keeps the partition where it is.
  topic_partition tp1{"orders2", 0};
  apply(topic_entry{"orders2", 1, id("b3"), "", false});
  apply(broker_entry{id("b3"), broker_change::fence, {}, false});
  apply(broker_entry{id("b3"), broker_change::unfence, {}, false});
  owner_entry late{"orders2", 0, id("b2"), 1};
  late.expect_owner_fenced = true;
  CHECK(s.refused(apply(late)));
  CHECK(s.owner_of(tp1) == id("b3"));
  // The condition survives the wire.
  auto wire = entry_from_json(to_json(log_entry{term{1}, log_index{9}, late}));
  REQUIRE(wire.ok());
  CHECK(std::get<owner_entry>(wire->payload).expect_owner_fenced);
  CHECK(std::get<owner_entry>(wire->payload) == late);
}

TEST_CASE("a deletion drops the topic, its owners and epochs, and records the name, a create afterwards starts anew",
          "[raft][metadata]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) {
    REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok());
    return log_index{i};
  };
  auto removal = [](const std::string& name, int32_t n) {
    topic_entry t{name, n, id("b2"), "", false};
    t.remove = true;
    return t;
  };
  apply(topic_entry{"orders", 2, id("b1"), "", false});
  apply(topic_entry{"audit", 1, id("b1"), "", false});
  apply(owner_entry{"orders", 1, id("b3"), 0});
  apply(owner_entry{"orders", 5, id("b3"), 0});  // a row beyond the topic's count
  REQUIRE(s.epoch_of({"orders", 1}) == 2);
  auto del = apply(removal("orders", 2));
  CHECK_FALSE(s.refused(del));
  CHECK(s.topics().count("orders") == 0);
  CHECK_FALSE(s.owner_of({"orders", 0}));
  CHECK_FALSE(s.owner_of({"orders", 1}));
  CHECK_FALSE(s.owner_of({"orders", 5}));
  CHECK(s.epoch_of({"orders", 1}) == 0);
  CHECK(s.epochs().empty());
  CHECK(s.deleted_topics().at("orders") == del);
  CHECK(s.owner_of({"audit", 0}) == id("b1"));  // the other topic is untouched
  // Deleting it again, or a topic never created, is refused and changes nothing.
  auto twice = apply(removal("orders", 2));
  CHECK(s.refused(twice));
  CHECK(s.deleted_topics().at("orders") == del);
  CHECK(s.refused(apply(removal("never", 1))));
  CHECK(s.deleted_topics().count("never") == 0);
  // An owner entry proposed before the deletion and committed after it
  // leaves no row behind.
  CHECK(s.refused(apply(owner_entry{"orders", 0, id("b3"), 0})));
  CHECK_FALSE(s.owner_of({"orders", 0}));
  // Created again: a new topic (another created_at), at epoch 1, the
  // deletion still recorded.
  auto created = apply(topic_entry{"orders", 1, id("b2"), "", false});
  CHECK(s.topics().at("orders").created_at == created);
  CHECK(s.epoch_of({"orders", 0}) == 1);
  CHECK(s.owner_of({"orders", 0}) == id("b2"));
  CHECK(s.deleted_topics().at("orders") == del);
  // Snapshots keep the deleted names; older snapshots without them load.
  auto j = to_json(s.to_snapshot());
  REQUIRE(j["deleted_topics"] == json::array({json{{"topic", "orders"}, {"deleted_at", del.value}}}));
  auto parsed = snapshot_from_json(j);
  REQUIRE(parsed.ok());
  ownership_state loaded;
  loaded.load(*parsed);
  CHECK(loaded == s);
  j.erase("deleted_topics");
  REQUIRE(snapshot_from_json(j).ok());
  CHECK(snapshot_from_json(j)->deleted_topics.empty());
  j["deleted_topics"] = json::array({json{{"topic", "a"}, {"deleted_at", 3}}, json{{"topic", "a"}, {"deleted_at", 4}}});
  CHECK_FALSE(snapshot_from_json(j).ok());
}

TEST_CASE("a deletion is refused while a move of the topic is unfinished, and applies once it ended",
          "[raft][metadata][move]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) {
    REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok());
    return log_index{i};
  };
  topic_entry removal{"orders", 2, id("b1"), "", false};
  removal.remove = true;
  apply(topic_entry{"orders", 2, id("b1"), "", false});
  move_entry m;
  m.id = "m1";
  m.topic = "orders";
  m.partition = 1;
  m.from = id("b1");
  m.to = id("b2");
  m.state = "queued";
  REQUIRE_FALSE(s.refused(apply(m)));
  CHECK(s.refused(apply(removal)));
  CHECK(s.topics().count("orders") == 1);
  m.state = "cancelled";
  m.expect = {"queued"};
  REQUIRE_FALSE(s.refused(apply(m)));
  CHECK_FALSE(s.refused(apply(removal)));
  CHECK(s.topics().count("orders") == 0);
}

TEST_CASE("a deletion entry has the documented JSON shape", "[raft][wire][metadata]") {
  topic_entry t{"orders", 6, id("b1"), "", false};
  t.remove = true;
  auto j = to_json(entry_payload{t});
  CHECK(j == json{{"type", "topic"}, {"topic", "orders"}, {"partitions", 6}, {"owner", "b1"}, {"config", ""},
                  {"grow", false}, {"delete", true}});
  auto p = payload_from_json(j);
  REQUIRE(p.ok());
  CHECK(std::get<topic_entry>(*p) == t);
  // A create has no "delete" key; an entry both growing and deleting is refused.
  CHECK_FALSE(to_json(entry_payload{topic_entry{"orders", 6, id("b1"), "", false}}).contains("delete"));
  j["grow"] = true;
  CHECK_FALSE(payload_from_json(j).ok());
  CHECK(describe(entry_payload{t}) == "delete orders x6 @b1");
}

TEST_CASE("a config change replaces a topic's config in log order, is refused for a missing topic, and survives a "
          "snapshot",
          "[raft][metadata]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) {
    REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok());
    return log_index{i};
  };
  auto alter = [](const std::string& topic, const std::string& config) {
    topic_entry t{topic, 2, id("b1"), config, false};
    t.alter = true;
    return t;
  };
  apply(topic_entry{"orders", 2, id("b1"), R"({"retention.ms":1000})", false});
  CHECK_FALSE(s.refused(apply(alter("orders", R"({"retention.bytes":4096})"))));
  CHECK(s.topics().at("orders").config == R"({"retention.bytes":4096})");
  CHECK(s.topics().at("orders").partitions == 2);
  CHECK(s.owner_of({"orders", 1}) == id("b1"));
  // The later of two changes wins whole.
  CHECK_FALSE(s.refused(apply(alter("orders", R"({"retention.ms":5})"))));
  CHECK(s.topics().at("orders").config == R"({"retention.ms":5})");
  // Unknown topic: refused, nothing created.
  CHECK(s.refused(apply(alter("nope", R"({"retention.ms":5})"))));
  CHECK(s.topics().count("nope") == 0);
  auto back = snapshot_from_json(to_json(s.to_snapshot()));
  REQUIRE(back.ok());
  CHECK(back->topics.at("orders").config == R"({"retention.ms":5})");

  // Wire shape: "alter":true; an entry that both alters and grows is refused.
  auto j = to_json(entry_payload{alter("orders", "{}")});
  CHECK(j["alter"] == true);
  CHECK_FALSE(j.contains("delete"));
  auto p = payload_from_json(j);
  REQUIRE(p.ok());
  CHECK(std::get<topic_entry>(*p) == alter("orders", "{}"));
  j["grow"] = true;
  CHECK_FALSE(payload_from_json(j).ok());
  CHECK(describe(entry_payload{alter("orders", "{}")}) == "alter orders x2 @b1");
}

TEST_CASE("config patches merge key by key at apply time, so changes of different keys never undo each other",
          "[raft][metadata]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) {
    REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok());
    return log_index{i};
  };
  auto patch = [](const std::string& text) {
    topic_entry t{"orders", 2, id("b2"), text, false};
    t.alter = true;
    t.merge = true;
    return t;
  };
  apply(topic_entry{"orders", 2, id("b1"), R"({"retention.ms":1000})", false});
  // Two brokers patched different keys from the same image: both stay.
  apply(patch(R"({"retention.bytes":4096})"));
  apply(patch(R"({"segment.bytes":1048576})"));
  CHECK(json::parse(s.topics().at("orders").config)
        == json::parse(R"({"retention.ms":1000,"retention.bytes":4096,"segment.bytes":1048576})"));
  // null removes a key; removing every key leaves "" (all defaults).
  apply(patch(R"({"retention.ms":null,"retention.bytes":null,"segment.bytes":null})"));
  CHECK(s.topics().at("orders").config.empty());
  // Wire shape: "merge":true, only with "alter".
  auto j = to_json(entry_payload{patch("{}")});
  CHECK(j["merge"] == true);
  REQUIRE(payload_from_json(j).ok());
  CHECK(std::get<topic_entry>(*payload_from_json(j)) == patch("{}"));
  j.erase("alter");
  CHECK_FALSE(payload_from_json(j).ok());
}

namespace {

topic_entry placed(const std::string& name, int32_t n, const std::string& owner, std::vector<std::string> owners,
                   int32_t first, std::vector<std::string> checked, bool grow = false) {
  topic_entry t{name, n, node_id{owner}, "", grow};
  for (auto& o : owners)
    t.owners.emplace_back(std::move(o));
  t.first = first;
  for (auto& c : checked)
    t.checked.emplace_back(std::move(c));
  return t;
}

}  // namespace

TEST_CASE("a placed topic entry has the documented JSON shape and decodes strictly", "[raft][wire][metadata]") {
  log_entry e{term{2}, log_index{5}, placed("t", 3, "b1", {"b2", "b3", "b1"}, 0, {"b1", "b2", "b3"})};
  json j = to_json(e);
  CHECK(j == json::parse(R"({"term":2,"index":5,"type":"topic","topic":"t","partitions":3,"owner":"b1","config":"",
                             "grow":false,"owners":["b2","b3","b1"],"first":0,"checked":["b1","b2","b3"]})"));
  auto back = entry_from_json(j);
  REQUIRE(back.ok());
  CHECK(*back == e);
  const char* head = R"({"term":2,"index":5,"type":"topic","topic":"t","partitions":3,"owner":"b1","config":"","grow":false,)";
  for (std::string bad : {R"("owners":[],"first":0,"checked":["b1"]})",               // nothing placed
                          R"("owners":["b1","b2"],"first":2,"checked":["b1"]})",      // past the count
                          R"("owners":["b1"],"checked":["b1"]})",                     // no first
                          R"("owners":["b1"],"first":0})",                            // no checked
                          R"("owners":["b 1"],"first":0,"checked":["b1"]})",          // not a broker id
                          R"("owners":[1],"first":0,"checked":["b1"]})",
                          R"("owners":["b1"],"first":0,"checked":["b1"],"delete":true})"}) {
    INFO(bad);
    auto r = entry_from_json(json::parse(head + bad));
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::malformed);
  }
}

TEST_CASE("a placed create gives each partition its named owner, a growth places only what it adds",
          "[raft][metadata]") {
  ownership_state s;
  REQUIRE(s.apply(log_entry{term{1}, log_index{1}, placed("t", 3, "b1", {"b2", "b3", "b1"}, 0, {"b1", "b2", "b3"})})
            .ok());
  CHECK(s.owner_of({"t", 0}) == id("b2"));
  CHECK(s.owner_of({"t", 1}) == id("b3"));
  CHECK(s.owner_of({"t", 2}) == id("b1"));
  CHECK(s.epoch_of({"t", 0}) == 1);
  // A growth from 3 to 5 placed by a proposer that saw 3 partitions.
  REQUIRE(s.apply(log_entry{term{1}, log_index{2}, placed("t", 5, "b2", {"b3", "b3"}, 3, {"b1", "b2", "b3"}, true)})
            .ok());
  CHECK(s.owner_of({"t", 3}) == id("b3"));
  CHECK(s.owner_of({"t", 4}) == id("b3"));
  // A racing growth that saw 4 partitions: only partition 5 is new, and its owner is owners[5 - first].
  REQUIRE(s.apply(log_entry{term{1}, log_index{3}, placed("t", 6, "b1", {"b1", "b2"}, 4, {"b1", "b2", "b3"}, true)})
            .ok());
  CHECK(s.owner_of({"t", 4}) == id("b3"));
  CHECK(s.owner_of({"t", 5}) == id("b2"));
  // A growth whose owners do not reach the new count leaves the rest to `owner`.
  REQUIRE(s.apply(log_entry{term{1}, log_index{4}, placed("t", 8, "b3", {"b1"}, 6, {"b1", "b2", "b3"}, true)}).ok());
  CHECK(s.owner_of({"t", 6}) == id("b1"));
  CHECK(s.owner_of({"t", 7}) == id("b3"));
  ownership_state copy;
  copy.load(s.to_snapshot());
  CHECK(copy == s);
}

TEST_CASE("a placed create falls back to its proposer for a broker that could not read it", "[raft][metadata]") {
  ownership_state s;
  uint64_t i = 0;
  auto apply = [&](entry_payload p) { REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok()); };
  apply(broker_entry{id("b4"), broker_change::register_broker, {"h:1", "h:2", ""}});
  // b4 joined after the proposer looked: it is not among `checked`, so
  // every partition is the proposer's, as b4 (an earlier version) reads it.
  apply(placed("late", 2, "b1", {"b2", "b3"}, 0, {"b1", "b2", "b3"}));
  CHECK(s.owner_of({"late", 0}) == id("b1"));
  CHECK(s.owner_of({"late", 1}) == id("b1"));
  // With b4 checked the placement applies, b4 included.
  apply(placed("known", 2, "b1", {"b4", "b3"}, 0, {"b1", "b2", "b3", "b4"}));
  CHECK(s.owner_of({"known", 0}) == id("b4"));
  CHECK(s.owner_of({"known", 1}) == id("b3"));
  // A named owner removed before the entry applied, or one never checked, gives way to the proposer.
  apply(broker_entry{id("b4"), broker_change::drain, {}});
  apply(owner_entry{"known", 0, id("b1")});  // b4 must own nothing to be removed
  apply(broker_entry{id("b4"), broker_change::remove, {}});
  REQUIRE(s.removed().count(id("b4")) == 1);
  apply(placed("gone", 3, "b2", {"b4", "b3", "b9"}, 0, {"b1", "b2", "b3", "b4"}));
  CHECK(s.owner_of({"gone", 0}) == id("b2"));
  CHECK(s.owner_of({"gone", 1}) == id("b3"));
  CHECK(s.owner_of({"gone", 2}) == id("b2"));
  // An entry without `checked` (never written so, but read strictly elsewhere) places nothing.
  CHECK_FALSE(s.placement_readable({}));
}

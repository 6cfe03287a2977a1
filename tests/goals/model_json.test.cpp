#include <catch2/catch.hpp>

#include "goals/builtin_goals.hpp"
#include "goals/model_json.hpp"

using namespace moonmq::goals;
using json = nlohmann::json;

namespace {

json small_model() {
  return json::parse(R"({
    "brokers": [{"id":"b1","rack":"r1","alive":true,"capacity":{"disk":1000}}, {"id":"b2"}],
    "partitions": [{"topic":"t","partition":0,"owner":"b1","load":{"nw_in":5,"nw_out":6,"disk":7}},
                   {"topic":"t","partition":1,"owner":"b2"}],
    "excluded_topics": ["x"],
    "goals": {"NW_IN": {"Enabled": false, "AvgDeviation": 0.1, "DetectThreshold": 3, "Priority": 7,
                        "CapacityThreshold": 0.5}},
    "max_actions": 9,
    "cooldown": [{"topic":"t","partition":1}],
    "in_flight": [{"topic":"t","partition":0,"to":"b2"}],
    "avoid": [{"topic":"t","partition":1,"broker":"b1"}]
  })");
}

std::string error_of(const json& j) {
  auto m = model_from_json(j);
  return m.ok() ? std::string{} : m.error();
}

}  // namespace

TEST_CASE("model JSON is read with every field of CONTRACT section 6", "[json]") {
  auto m = model_from_json(small_model());
  REQUIRE(m.ok());
  CHECK(m->brokers.size() == 2);
  CHECK(m->brokers[0].rack == "r1");
  CHECK(*m->brokers[0].capacity[2] == 1000.0);
  CHECK_FALSE(m->brokers[1].capacity[2]);
  CHECK(m->replicas[0].load[1] == 6.0);
  CHECK(m->replicas[1].load[0] == 0.0);
  CHECK(m->excluded_topics == std::vector<std::string>{"x"});
  const auto cfg = m->goals.at("NW_IN").apply_to(default_distribution_config(resource::nw_in));
  CHECK_FALSE(cfg.enabled);
  CHECK(cfg.avg_deviation == 0.1);
  CHECK(cfg.detect_threshold == 3.0);
  CHECK(cfg.priority == 7);
  CHECK(cfg.capacity_threshold == 0.5);
  CHECK(m->max_actions == 9);
  CHECK(m->cooldown.size() == 1);
  CHECK(m->in_flight[0].to == "b2");
  REQUIRE(m->avoid.size() == 1);
  CHECK(m->avoid[0].tp == topic_partition{"t", 1});
  CHECK(m->avoid[0].broker == "b1");
  // A model file without "avoid" (written before it existed) reads as before.
  json older = small_model();
  older.erase("avoid");
  auto o = model_from_json(older);
  REQUIRE(o.ok());
  CHECK(o->avoid.empty());
  CHECK_FALSE(model_to_json(o.value()).contains("avoid"));
}

TEST_CASE("model JSON round-trips through model_to_json", "[json]") {
  auto m = model_from_json(small_model());
  REQUIRE(m.ok());
  auto again = model_from_json(model_to_json(m.value()));
  REQUIRE(again.ok());
  CHECK(model_to_json(again.value()) == model_to_json(m.value()));
}

TEST_CASE("invalid model JSON gives an error naming the key path", "[json]") {
  CHECK(error_of(json::array()) == "model: expected a JSON object");
  CHECK(error_of(json::object()) == "brokers: missing or not an array");
  json j = small_model();
  j["partitions"][1]["owner"] = "b7";
  CHECK(error_of(j) == "partitions[1].owner: unknown broker \"b7\"");
  j = small_model();
  j["partitions"][0]["load"]["nw_in"] = "fast";
  CHECK(error_of(j) == "partitions[0].load.nw_in: expected a number >= 0");
  j = small_model();
  j["partitions"][0]["partition"] = 1.5;
  CHECK(error_of(j) == "partitions[0].partition: expected an integer >= 0");
  j = small_model();
  j["brokers"][1]["alive"] = "yes";
  CHECK(error_of(j) == "brokers[1].alive: expected true or false");
  j = small_model();
  j["goals"]["NW_IN"]["Priority"] = "high";
  CHECK(error_of(j) == "goals.NW_IN.Priority: expected an integer");
  j = small_model();
  j["max_actions"] = -1;
  CHECK(error_of(j) == "max_actions: expected an integer >= 0");
  j = small_model();
  j["brokers"][0].erase("id");
  CHECK(error_of(j) == "brokers[0].id: missing (expected a string)");
  j = small_model();
  j["avoid"][0].erase("broker");
  CHECK(error_of(j) == "avoid[0].broker: missing (expected a string)");
  j = small_model();
  j["avoid"] = json::object();
  CHECK(error_of(j) == "avoid: expected an array");
  auto bad = model_from_text("{\"brokers\": [");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().rfind("malformed JSON", 0) == 0);
}

TEST_CASE("plan JSON has the CONTRACT section 6 shape", "[json]") {
  auto m = model_from_json(json::parse(R"({
    "brokers": [{"id":"b1"}, {"id":"b2"}],
    "partitions": [{"topic":"t","partition":0,"owner":"b1"}, {"topic":"t","partition":1,"owner":"b1"},
                   {"topic":"t","partition":2,"owner":"b1"}, {"topic":"t","partition":3,"owner":"b1"}]
  })"));
  REQUIRE(m.ok());
  const auto builtin = make_builtin_goals();
  std::vector<const goal*> ptrs;
  for (const auto& g : builtin) ptrs.push_back(g.get());
  auto p = make_plan(m.value(), ptrs);
  REQUIRE(p.ok());
  const json j = plan_to_json(p.value());
  REQUIRE(j["actions"].size() == 2);
  for (const char* k : {"type", "topic", "partition", "from", "to", "goal", "reason"}) CHECK(j["actions"][0].contains(k));
  CHECK(j["actions"][0]["type"] == "MOVE");
  CHECK(j["actions"][0]["goal"] == "PARTITION_COUNT");
  REQUIRE(j["goals"].size() == 8);  // the enabled built-in goals (TOPIC_SPREAD is off)
  for (const auto& g : j["goals"])
    for (const char* k : {"name", "mean", "lower", "upper", "violations_before", "violations_after", "explanation"})
      CHECK(g.contains(k));
  CHECK(j["brokers_before"]["b1"]["partitions"] == 4.0);
  CHECK(j["brokers_after"]["b2"]["partitions"] == 2.0);
  for (const char* k : {"nw_in", "nw_out", "disk", "partitions"}) CHECK(j["brokers_after"]["b1"].contains(k));
  CHECK(j["balancedness_after"].get<double>() >= j["balancedness_before"].get<double>());
}

TEST_CASE("model JSON carries shared_storage, written only when set", "[json]") {
  auto local = model_from_json(small_model());
  REQUIRE(local.ok());
  CHECK_FALSE(local->shared_storage);
  CHECK_FALSE(model_to_json(local.value()).contains("shared_storage"));
  json j = small_model();
  j["shared_storage"] = true;
  auto shared = model_from_json(j);
  REQUIRE(shared.ok());
  CHECK(shared->shared_storage);
  CHECK(model_to_json(shared.value())["shared_storage"] == true);
  auto text = model_from_text(j.dump());
  REQUIRE(text.ok());
  CHECK(text->shared_storage);
  j["shared_storage"] = "yes";
  CHECK(error_of(j) == "shared_storage: expected true or false");
}

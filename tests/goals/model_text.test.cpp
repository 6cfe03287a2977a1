// model_from_text (simdjson On-Demand for the partitions) against the
// nlohmann DOM reader it replaces (detail::model_from_dom_text): the same
// models, the same errors.

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "goals/model_json.hpp"
#include "goals/model_json_fields.hpp"

using namespace moonmq::goals;
using json = nlohmann::json;

namespace {

const char* const kModel = R"({
  "brokers": [{"id":"b1","rack":"r1","alive":true,"capacity":{"disk":1000}}, {"id":"b2"}],
  "partitions": [{"topic":"t","partition":0,"owner":"b1","load":{"nw_in":5,"nw_out":6.5,"disk":7e3}},
                 {"topic":"t","partition":1,"owner":"b2"},
                 {"load":null,"owner":"b2","partition":2,"topic":"u"}],
  "excluded_topics": ["x"],
  "goals": {"NW_IN": {"Enabled": false, "AvgDeviation": 0.1, "Priority": 7}},
  "max_actions": 9,
  "cooldown": [{"topic":"t","partition":1}],
  "in_flight": [{"topic":"t","partition":0,"to":"b2"}],
  "avoid": [{"topic":"t","partition":1,"broker":"b1"}]
})";

/// The model `text` gives, as JSON, or its error.
std::string read_fast(const std::string& text) {
  auto m = model_from_text(text);
  return m.ok() ? model_to_json(m.value()).dump() : "error: " + m.error();
}

std::string read_dom(const std::string& text) {
  auto m = detail::model_from_dom_text(text);
  return m.ok() ? model_to_json(m.value()).dump() : "error: " + m.error();
}

/// kModel with the second partition replaced by `partition` (JSON text).
std::string with_partition(const std::string& partition) {
  json j = json::parse(kModel);
  std::string text = j.dump();
  const std::string second = j["partitions"][1].dump();
  return text.replace(text.find(second), second.size(), partition);
}

}  // namespace

TEST_CASE("model_from_text reads the model the nlohmann reader reads", "[json]") {
  CHECK(read_fast(kModel) == read_dom(kModel));
  CHECK(read_fast(kModel).rfind("error", 0) == std::string::npos);
  auto m = model_from_text(kModel);
  REQUIRE(m.ok());
  REQUIRE(m->replicas.size() == 3);
  CHECK(m->replicas[0].load == std::array<double, 3>{5.0, 6.5, 7000.0});
  CHECK(m->replicas[2].topic == "u");
  CHECK(m->replicas[2].partition == 2);
  CHECK(m->max_actions == 9);
  CHECK(m->avoid.size() == 1);
  // A dumped model reads back the same (keys sorted, as model_to_json writes them).
  const std::string dumped = model_to_json(m.value()).dump(2);
  CHECK(read_fast(dumped) == read_dom(dumped));
}

TEST_CASE("model_from_text gives the nlohmann reader's error for a bad partition", "[json]") {
  const std::vector<std::pair<std::string, std::string>> cases{
    {R"({"topic":"t","partition":1,"owner":"b7"})", "partitions[1].owner: unknown broker \"b7\""},
    {R"({"topic":"t","partition":1,"owner":"b2","load":{"nw_in":"fast"}})",
     "partitions[1].load.nw_in: expected a number >= 0"},
    {R"({"topic":"t","partition":1,"owner":"b2","load":{"disk":-1}})",
     "partitions[1].load.disk: expected a finite number >= 0"},
    {R"({"topic":"t","partition":1,"owner":"b2","load":[1,2]})", "partitions[1].load: expected an object"},
    {R"({"topic":"t","partition":1.5,"owner":"b2"})", "partitions[1].partition: expected an integer >= 0"},
    {R"({"topic":"t","partition":"1","owner":"b2"})", "partitions[1].partition: expected an integer >= 0"},
    {R"({"topic":"t","partition":2147483648,"owner":"b2"})", "partitions[1].partition: expected an integer >= 0"},
    {R"({"topic":"t","partition":-1,"owner":"b2"})", "partitions[1].partition: expected an integer >= 0"},
    {R"({"partition":1,"owner":"b2"})", "partitions[1].topic: missing (expected a string)"},
    {R"({"topic":"t","partition":1})", "partitions[1].owner: missing (expected a string)"},
    {R"({"topic":"t","owner":"b2"})", "partitions[1].partition: expected an integer >= 0"},
    {R"({"topic":7,"partition":1,"owner":"b2"})", "partitions[1].topic: expected a string"},
    {R"({"topic":"t","partition":0,"owner":"b2"})", "partitions[1]: duplicate partition t-0"},
    {R"("t-1")", "partitions[1]: expected an object"},
  };
  for (const auto& [partition, error] : cases) {
    INFO(partition);
    const std::string text = with_partition(partition);
    CHECK(read_fast(text) == read_dom(text));
    auto m = model_from_text(text);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error() == error);
  }
  CHECK(read_fast(R"({"brokers":[],"partitions":{}})") == "error: partitions: missing or not an array");
  CHECK(read_fast(R"({"brokers":[{"id":"b1"}]})") == "error: partitions: missing or not an array");
  CHECK(read_fast(R"({"brokers":[{"id":"b1","alive":"yes"}],"partitions":[]})") ==
        "error: brokers[0].alive: expected true or false");
  CHECK(read_fast(R"({"partitions":[]})") == "error: brokers: missing or not an array");
  CHECK(read_fast(R"({"brokers":[],"partitions":[],"avoid":{}})") == "error: avoid: expected an array");
  CHECK(read_fast("[]") == "error: model: expected a JSON object");
}

TEST_CASE("a truncated or malformed model file gives the nlohmann reader's syntax error", "[json]") {
  const std::string text = json::parse(kModel).dump();
  for (std::size_t size = 0; size < text.size(); ++size) {
    const std::string cut = text.substr(0, size);
    INFO(cut);
    const std::string error = read_fast(cut);
    CHECK(error == read_dom(cut));
    CHECK(error.rfind("error: malformed JSON: [json.exception.parse_error.101]", 0) == 0);
  }
  const std::string b1 = R"({"brokers":[{"id":"b1"}],"partitions":[)";
  for (const std::string& bad : {std::string(R"({"brokers":[],"partitions":[]} {})"),
                                 std::string(R"({"brokers":[],"partitions":[]}})"),
                                 std::string(R"({"brokers":[],"partitions":[{"topic":"t" "partition":0}]})"),
                                 b1 + R"({"topic":"t","partition":0,"owner":"b1","x":nul}]})",
                                 b1 + R"({"topic":"t","partition":01,"owner":"b1"}]})",
                                 b1 + "{\"topic\":\"t\x01\",\"partition\":0,\"owner\":\"b1\"}]}"}) {
    INFO(bad);
    CHECK(read_fast(bad) == read_dom(bad));
    CHECK(read_fast(bad).rfind("error: malformed JSON", 0) == 0);
  }
}

TEST_CASE("model_from_text agrees with nlohmann on duplicate and escaped keys, unknown fields and -0", "[json]") {
  const std::string head = R"({"brokers":[{"id":"b1"},{"id":"b2"}],"partitions":[)";
  for (const char* partition : {
         R"({"topic":"t","partition":0,"owner":"b1","owner":"b2"})",          // the last duplicate counts
         R"({"topic":"t","partition":0,"owner":"b1","\u006fwner":"b2"})",     // the same key, escaped
         R"({"topic":"t","partition":0,"owner":"b1","load":{"nw_in":1,"nw_in":2}})",
         R"({"topic":"t","partition":0,"owner":"b1","load":{"nw_in":1,"cpu":{"x":[1,2]}}})",
         R"({"topic":"t","partition":0,"owner":"b1","note":"moved by hand","replicas":[1,2,3]})",
         R"({"topic":"t\u00e9\ud83d\ude00","partition":-0,"owner":"b1","load":{"nw_in":-0,"disk":-0.0}})",
         R"({"topic":"t","partition":0,"owner":"b1","load":{"nw_in":18446744073709551616,"disk":1e308}})",
         R"({"topic":"t","partition":0,"owner":"b1","load":{"nw_in":1e400}})",
         R"({"topic":"\ud800","partition":0,"owner":"b1"})",
       }) {
    const std::string text = head + partition + "]}";
    INFO(text);
    CHECK(read_fast(text) == read_dom(text));
  }
  const std::string twice = R"({"brokers":[{"id":"b1"}],"partitions":[{"topic":"a","partition":0,"owner":"b1"}],
                                "partitions":[{"topic":"b","partition":0,"owner":"b1"}]})";
  CHECK(read_fast(twice) == read_dom(twice));
  const std::string bom = "\xEF\xBB\xBF" + std::string(kModel);
  CHECK(read_fast(bom) == read_dom(bom));
}

TEST_CASE("model_from_text matches the nlohmann reader on 3000 seeded mutations of a model", "[json]") {
  const std::string base = json::parse(kModel).dump();
  const std::string alphabet = "{}[]:,\"\\0123456789.-+eEtrufalsn b";
  std::mt19937 rng(19);
  std::size_t accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
      const std::size_t at = rng() % text.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: text.erase(at, 1); break;
        case 1: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        default: text[at] = c;
      }
    }
    INFO(text);
    const std::string fast = read_fast(text);
    REQUIRE(fast == read_dom(text));
    accepted += fast.rfind("error", 0) == std::string::npos;
  }
  CHECK(accepted > 100);  // the mutations reach valid models too, not only syntax errors
}

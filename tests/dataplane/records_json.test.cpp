#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "dataplane/partitioner.hpp"
#include "dataplane/records_json.hpp"

using namespace moonmq;
using namespace moonmq::dataplane;
using nlohmann::json;

TEST_CASE("base64 round trips and rejects malformed text", "[records]") {
  for (std::string s : {std::string{}, std::string("a"), std::string("ab"), std::string("abc"),
                        std::string("\0\xff\x10", 3)}) {
    std::string back;
    REQUIRE(base64_decode(base64_encode(s), back));
    CHECK(back == s);
  }
  std::string out;
  CHECK_FALSE(base64_decode("abc", out));
  CHECK_FALSE(base64_decode("a*c=", out));
}

TEST_CASE("utf8 validation", "[records]") {
  CHECK(is_utf8("plain"));
  CHECK(is_utf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"));
  CHECK_FALSE(is_utf8("\xff"));
  CHECK_FALSE(is_utf8("\xc0\xaf"));          // overlong
  CHECK_FALSE(is_utf8("\xed\xa0\x80"));      // surrogate
  CHECK_FALSE(is_utf8("\xe2\x82"));          // truncated
}

namespace {

/// parse_produce of `text` for a topic of `partitions` (sticky partition 0,
/// timestamp 0); "" or the error, prefixed "malformed: " when the text is
/// not JSON.
std::string produce_error(const std::string& text, int32_t partitions = 2) {
  produce_plan plan;
  bool malformed = false;
  auto why = parse_produce(text, partitions, 0, 0, plan, malformed);
  return malformed ? "malformed: " + why : why;
}

}  // namespace

TEST_CASE("produce bodies are placed by partition, key, then sticky choice", "[records]") {
  std::string body = R"({"records":[
    {"value":"a","partition":2},
    {"key":"k1","value":"b"},
    {"value":"c"},
    {"value_base64":"AAH/","headers":{"h":"v"}},
    {"key_base64":"a2V5","value":"e","headers":[{"key":"x","value_base64":"AA=="},{"key":"n"}]},
    {"value":"esc \" \\ \u00fc \ud83d\ude00 \n","key":null,"value_base64":"AA==","partition":null}]})";
  produce_plan plan;
  bool malformed = true;
  REQUIRE(parse_produce(body, 4, 1, 1234, plan, malformed).empty());
  CHECK_FALSE(malformed);
  REQUIRE(plan.placement.size() == 6);
  CHECK(plan.placement[0] == std::make_pair(2, 0));
  CHECK(plan.placement[1].first == partition_for_key("k1", 4));
  CHECK(plan.placement[2].first == 1);
  CHECK(plan.placement[3].first == 1);
  CHECK(plan.placement[4].first == partition_for_key("key", 4));
  CHECK(plan.placement[5].first == 1);  // null key and partition: sticky
  auto at = [&](size_t i) -> const storage::record& {
    return plan.by_partition[plan.placement[i].first][static_cast<size_t>(plan.placement[i].second)];
  };
  CHECK(at(3).value == std::string("\0\x01\xff", 3));
  CHECK(at(3).timestamp_ms == 1234);
  REQUIRE(at(3).headers.size() == 1);
  CHECK(at(3).headers[0].key == "h");
  CHECK(at(3).headers[0].value == std::optional<std::string>("v"));
  REQUIRE(at(4).headers.size() == 2);
  CHECK(at(4).headers[0].value == std::optional<std::string>(std::string(1, '\0')));
  CHECK(at(4).headers[1].key == "n");
  CHECK_FALSE(at(4).headers[1].value);
  CHECK(at(4).key == std::optional<std::string>("key"));
  // Escapes decoded; the text form wins over value_base64.
  CHECK(at(5).value == "esc \" \\ \xc3\xbc \xf0\x9f\x98\x80 \n");
  CHECK_FALSE(at(5).key);
}

TEST_CASE("produce bodies with duplicate keys take the last, headers keep their order", "[records]") {
  produce_plan plan;
  bool malformed = false;
  REQUIRE(parse_produce(R"({"records":[{"value":"a"}],"records":[{"value":"b","value":"c","partition":0,"partition":1}]})",
                        2, 0, 0, plan, malformed)
            .empty());
  REQUIRE(plan.placement.size() == 1);
  CHECK(plan.placement[0].first == 1);
  CHECK(plan.by_partition[1][0].value == "c");
  // Headers keep the body's order in the object form too, repeated names included.
  plan = {};
  REQUIRE(parse_produce(R"({"records":[{"value":"v","headers":{"b":"1","a":"2","b":"3"}}]})", 2, 0, 0, plan,
                        malformed)
            .empty());
  const auto& headers = plan.by_partition[0][0].headers;
  REQUIRE(headers.size() == 3);
  CHECK(headers[0].key == "b");
  CHECK(headers[1].key == "a");
  CHECK(headers[2].value == std::optional<std::string>("3"));
}

TEST_CASE("bad produce bodies name the offending record and field", "[records]") {
  CHECK(produce_error(R"({"records":[]})") == "records must not be empty");
  CHECK(produce_error(R"({"recs":[]})").find("body must be") == 0);
  CHECK(produce_error(R"([{"value":"a"}])").find("body must be") == 0);
  CHECK(produce_error(R"({"records":{"value":"a"}})").find("body must be") == 0);
  CHECK(produce_error(R"({"records":[{"value":"a"},{"key":"x"}]})") == R"(records[1]: needs "value" or "value_base64")");
  CHECK(produce_error(R"({"records":[{"value":"a","partition":5}]})")
        == "records[0].partition: 5 is not a partition of this topic (0..1)");
  CHECK(produce_error(R"({"records":[{"value":"a","partition":-1}]})").find("records[0].partition: -1 is not") == 0);
  CHECK(produce_error(R"({"records":[{"value":"a","partition":18446744073709551615}]})")
          .find("records[0].partition: 18446744073709551615 is not") == 0);
  CHECK(produce_error(R"({"records":[{"value":"a","partition":1.0}]})") == "records[0].partition: expected an integer, got a number");
  CHECK(produce_error(R"({"records":[{"value":"a","partition":"1"}]})") == "records[0].partition: expected an integer, got a string");
  CHECK(produce_error(R"({"records":[{"value_base64":"!!"}]})") == "records[0].value_base64: expected base64 text");
  CHECK(produce_error(R"({"records":[{"value":1}]})") == "records[0].value: expected a string");
  CHECK(produce_error(R"({"records":[{"value":"v","key":[]}]})") == "records[0].key: expected a string");
  CHECK(produce_error(R"({"records":["v"]})") == "records[0]: expected an object");
  CHECK(produce_error(R"({"records":[{"value":"v","headers":{"h":1}}]})") == "records[0].headers.h: expected a string");
  CHECK(produce_error(R"({"records":[{"value":"v","headers":{"h":null}}]})") == "records[0].headers.h: expected a string");
  CHECK(produce_error(R"({"records":[{"value":"v","headers":"h"}]})") == "records[0].headers: expected an object or an array");
  CHECK(produce_error(R"({"records":[{"value":"v","headers":[{"value":"x"}]}]})")
        == R"(records[0].headers[0]: expected {"key":...,"value":...})");
  CHECK(produce_error(R"({"records":[{"value":"v","headers":[{"key":"k","value":2}]}]})")
        == "records[0].headers[0].value: expected a string");
}

TEST_CASE("produce bodies that are not JSON are told apart from bad records", "[records]") {
  for (std::string text : {std::string(""), std::string("{"), std::string(R"({"records":[{"value":"a"}]} x)"),
                           std::string(R"({"records":[{"value":"a",}]})"), std::string(R"({"records":[{"value":tru}]})"),
                           std::string("{\"records\":[{\"value\":\"\xff\"}]}"),  // not UTF-8
                           std::string(R"({"records":[{"value":"a\x"}]})"), std::string("not json")}) {
    INFO(text);
    CHECK(produce_error(text).rfind("malformed: the request body is not valid JSON", 0) == 0);
  }
}

TEST_CASE("records_to_json renders from an offset inside a batch and honours max_records", "[records]") {
  std::vector<moonmq::storage::record> recs;
  for (int i = 0; i < 5; ++i)
    recs.push_back({std::string("k") + std::to_string(i), "v" + std::to_string(i), {}, 100 + i});
  recs[3].value = std::string("\xff\x00", 2);
  recs[4].key.reset();
  recs[4].headers.push_back({"h", std::string("x")});
  moonmq::storage::batch_options opts;
  opts.base_offset = moonmq::storage::offset{10};
  auto batch = moonmq::storage::encode_batch(recs, opts);
  REQUIRE(batch);
  json out = json::array();
  auto next = records_to_json(*batch, 12, 100, out);
  CHECK(next == 15);
  REQUIRE(out.size() == 3);
  CHECK(out[0]["offset"] == 12);
  CHECK(out[0]["key"] == "k2");
  CHECK(out[0]["timestamp"] == 102);
  CHECK(out[1]["value_base64"] == base64_encode(std::string("\xff\x00", 2)));
  CHECK(out[2]["key"].is_null());
  CHECK(out[2]["headers"][0]["value"] == "x");
  json limited = json::array();
  CHECK(records_to_json(*batch, 10, 2, limited) == 12);
  CHECK(limited.size() == 2);
}

TEST_CASE("offsets_json writes the produce answer a JSON tree would", "[records]") {
  std::vector<std::pair<int32_t, int32_t>> placement{{2, 0}, {0, 0}, {2, 1}, {0, 1}};
  std::map<int32_t, int64_t> base_of{{0, 0}, {2, 9007199254740993}};
  json want = json::array();
  for (const auto& [p, idx] : placement)
    want.push_back(json{{"partition", p}, {"offset", base_of[p] + idx}});
  CHECK(offsets_json(placement, base_of) == json{{"offsets", want}}.dump());
  CHECK(offsets_json({}, {}) == R"({"offsets":[]})");
}

TEST_CASE("fetch_answer_json writes the bytes of the JSON tree it replaces", "[records]") {
  std::string ascii;
  for (int c = 0; c < 128; ++c)
    ascii += static_cast<char>(c);
  std::vector<storage::record> recs(6);
  recs[0].value = ascii;                                  // every escape
  recs[0].key = "quote \" backslash \\ slash /";
  recs[1].value = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80";  // UTF-8 as is
  recs[1].headers = {{"h1", std::string("v")}, {"h2", std::nullopt}, {"\xff", std::string("\xfe")}};
  recs[2].value = std::string("\0\xff", 2);               // base64
  recs[2].key = std::string("\x80", 1);
  recs[3].value = "";
  recs[3].key = "";
  recs[4].value = "last but one";
  recs[5].value = "last";
  for (size_t i = 0; i < recs.size(); ++i)
    recs[i].timestamp_ms = 1700000000000 + static_cast<int64_t>(i);
  storage::batch_options opts;
  opts.base_offset = storage::offset{40};
  auto batch = storage::encode_batch(recs, opts);
  REQUIRE(batch);
  for (auto [from, max] : {std::pair<int64_t, size_t>{40, 100}, {41, 3}, {46, 10}}) {
    json tree = json::array();
    auto next = records_to_json(*batch, from, max, tree);
    json want{{"records", tree}, {"next_offset", next}, {"log_start_offset", 7}, {"log_end_offset", 46}};
    std::string text;
    CHECK(fetch_answer_json(*batch, from, max, 7, 46, text) == next);
    CHECK(text == want.dump());
    want["last_stable_offset"] = 44;  // a read_committed answer
    CHECK(fetch_answer_json(*batch, from, max, 7, 46, text, nullptr, 44) == next);
    CHECK(text == want.dump());
  }
}

TEST_CASE("fetch answers leave out control batches, and with a committed filter aborted transactions' records",
          "[records][txn]") {
  // Offsets: 0 plain "a"; 1 pid 5 "x" (aborted); 2 pid 6 "y" (committed);
  // 3 ABORT of 5; 4 COMMIT of 6; 5 plain "b".
  auto batch = [](int64_t base, const std::string& value, int64_t pid) {
    storage::batch_options o;
    o.base_offset = storage::offset{base};
    if (pid >= 0) {
      o.producer_id = pid;
      o.producer_epoch = 0;
      o.base_sequence = 0;
      o.attributes = storage::attr_transactional;
    }
    return storage::encode_batch({storage::record{std::nullopt, value, {}, 1000}}, o).value();
  };
  auto marker = [](int64_t base, int64_t pid, int16_t type) {
    auto m = storage::make_control_batch(pid, 0, type, 0, 1000).value();
    REQUIRE(storage::set_base_offset(m, storage::offset{base}));
    return m;
  };
  const auto batches = batch(0, "a", -1) + batch(1, "x", 5) + batch(2, "y", 6)
                       + marker(3, 5, storage::control_abort) + marker(4, 6, storage::control_commit)
                       + batch(5, "b", -1);
  auto values = [&](storage::committed_filter* f) {
    std::vector<std::string> out;
    auto next = for_each_fetched(
      batches, 0, 100, [&](const storage::record_view& r) { out.emplace_back(*r.value); }, f);
    CHECK(next == 6);
    return out;
  };
  // read_uncommitted: every data record, never a marker.
  CHECK(values(nullptr) == std::vector<std::string>{"a", "x", "y", "b"});
  storage::committed_filter f({{5, storage::offset{1}}});
  CHECK(values(&f) == std::vector<std::string>{"a", "y", "b"});
  // A page of aborted records and markers only still moves next_offset on.
  std::string text;
  storage::committed_filter g({{5, storage::offset{1}}});
  CHECK(fetch_answer_json(batch(1, "x", 5) + marker(3, 5, storage::control_abort), 1, 10, 0, 6, text, &g) == 4);
  CHECK(json::parse(text)["records"].empty());
}

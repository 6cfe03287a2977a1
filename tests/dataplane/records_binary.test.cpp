// The binary records form (dataplane/records_binary.hpp,
// docs/client-api.md "Binary records"): round trips of produce bodies and
// fetch answers, and malformed bodies refused naming the byte position.

#include <catch2/catch.hpp>

#include "dataplane/partitioner.hpp"
#include "dataplane/records_binary.hpp"

using namespace moonmq;
using namespace moonmq::dataplane;

namespace {

std::string every_byte() {
  std::string s;
  for (int b = 0; b < 256; ++b)
    s += static_cast<char>(b);
  return s;
}

/// Big-endian i32, as the format writes it.
std::string be32(int32_t v) {
  auto u = static_cast<uint32_t>(v);
  return {static_cast<char>(u >> 24), static_cast<char>(u >> 16), static_cast<char>(u >> 8), static_cast<char>(u)};
}

}  // namespace

TEST_CASE("binary produce bodies round trip keys, headers, binary values, empty and null keys", "[records][binary]") {
  const auto bytes = every_byte();
  std::string body;
  produce_body_writer w{body};
  w.add(2, std::string_view("k"), std::string_view(bytes), {{"trace", std::string_view("abc")}, {"nul", std::nullopt}});
  w.add(-1, std::string_view(bytes), std::string_view(""));      // binary key: murmur2 placement
  w.add(-1, std::nullopt, std::string_view("unkeyed"));           // sticky
  w.add(-1, std::string_view(""), std::string_view("empty key")); // present, empty key
  w.add(0, std::nullopt, std::string_view("h"), {{"bin", std::string_view(bytes)}, {"", std::string_view("")}});
  w.finish();
  CHECK(w.count() == 5);
  CHECK(body.substr(0, 4) == be32(5));

  produce_plan plan;
  auto e = parse_produce_binary(body, 4, 3, 1234, plan);
  INFO(e.to_string());
  REQUIRE_FALSE(e);
  REQUIRE(plan.placement.size() == 5);
  CHECK(plan.placement[0] == std::make_pair(2, 0));
  CHECK(plan.placement[1].first == partition_for_key(bytes, 4));
  CHECK(plan.placement[2].first == 3);
  CHECK(plan.placement[3].first == partition_for_key("", 4));
  CHECK(plan.placement[4].first == 0);
  auto at = [&](size_t i) -> const storage::record& {
    return plan.by_partition[plan.placement[i].first][static_cast<size_t>(plan.placement[i].second)];
  };
  CHECK(at(0).key == std::optional<std::string>("k"));
  CHECK(at(0).value == bytes);
  CHECK(at(0).timestamp_ms == 1234);
  REQUIRE(at(0).headers.size() == 2);
  CHECK(at(0).headers[0].key == "trace");
  CHECK(at(0).headers[0].value == std::optional<std::string>("abc"));
  CHECK(at(0).headers[1].key == "nul");
  CHECK_FALSE(at(0).headers[1].value);
  CHECK(at(1).key == std::optional<std::string>(bytes));
  CHECK(at(1).value.empty());
  CHECK_FALSE(at(2).key);
  CHECK(at(2).value == "unkeyed");
  CHECK(at(3).key == std::optional<std::string>(""));
  REQUIRE(at(4).headers.size() == 2);
  CHECK(at(4).headers[0].value == std::optional<std::string>(bytes));
  CHECK(at(4).headers[1].key.empty());
  CHECK(at(4).headers[1].value == std::optional<std::string>(""));
}

TEST_CASE("binary fetch answers round trip offsets, timestamps, keys, headers and the envelope", "[records][binary]") {
  const auto bytes = every_byte();
  std::vector<storage::record> recs;
  for (int i = 0; i < 5; ++i) {
    storage::record r;
    r.value = i == 1 ? bytes : "v" + std::to_string(i);
    r.key = i == 2 ? std::nullopt : std::optional<std::string>(i == 3 ? "" : bytes.substr(0, 10 * i));
    r.timestamp_ms = 1000 + i;
    if (i == 4)
      r.headers = {{"h", bytes}, {"n", std::nullopt}};
    recs.push_back(r);
  }
  storage::batch_options opts;
  opts.base_offset = storage::offset{10};
  auto batch = storage::encode_batch(recs, opts);
  REQUIRE(batch);

  std::string answer;
  CHECK(records_to_binary(*batch, 11, 100, 3, 15, answer) == 15);
  fetched_page page;
  auto e = decode_fetch_binary(answer, page);
  INFO(e.to_string());
  REQUIRE_FALSE(e);
  CHECK(page.next_offset == 15);
  CHECK(page.log_start_offset == 3);
  CHECK(page.log_end_offset == 15);
  REQUIRE(page.records.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    const auto& want = recs[i + 1];
    const auto& got = page.records[i];
    CHECK(got.off.value == static_cast<int64_t>(11 + i));
    CHECK(got.timestamp_ms == want.timestamp_ms);
    CHECK(got.value == std::optional<std::string_view>(want.value));
    CHECK(got.key.has_value() == want.key.has_value());
    if (want.key)
      CHECK(*got.key == *want.key);
  }
  REQUIRE(page.records[3].headers.size() == 2);
  CHECK(page.records[3].headers[0].first == "h");
  CHECK(page.records[3].headers[0].second == std::optional<std::string_view>(bytes));
  CHECK_FALSE(page.records[3].headers[1].second);

  // max_records stops the page early; next_offset says where to go on.
  CHECK(records_to_binary(*batch, 10, 2, 0, 15, answer) == 12);
  REQUIRE_FALSE(decode_fetch_binary(answer, page));
  CHECK(page.records.size() == 2);
  CHECK(page.next_offset == 12);
  // An empty page (at the log end) is the envelope alone.
  CHECK(records_to_binary(*batch, 15, 100, 0, 15, answer) == 15);
  CHECK(answer.size() == 28);
  REQUIRE_FALSE(decode_fetch_binary(answer, page));
  CHECK(page.records.empty());
}

TEST_CASE("binary fetch records carry null values (Kafka tombstones)", "[records][binary]") {
  std::string answer;
  records_to_binary({}, 7, 10, 0, 7, answer);
  answer[27] = 1;  // count 1: the record below
  storage::record_view r;
  r.off = storage::offset{7};
  r.timestamp_ms = 99;
  r.key = std::string_view("gone");
  append_fetched_record(answer, r);
  fetched_page page;
  REQUIRE_FALSE(decode_fetch_binary(answer, page));
  REQUIRE(page.records.size() == 1);
  CHECK(page.records[0].key == std::optional<std::string_view>("gone"));
  CHECK_FALSE(page.records[0].value);
  CHECK(page.records[0].off.value == 7);
}

TEST_CASE("binary fetch answers carry header names as stored, UTF-8 or not", "[records][binary]") {
  // A Kafka client may write any bytes as a header name; a produce in the
  // binary form may not, a fetch answer shows what is stored.
  std::string answer;
  records_to_binary({}, 3, 4, 0, 3, answer);
  answer[27] = 1;
  storage::record_view r;
  r.off = storage::offset{3};
  r.value = std::string_view("v");
  r.headers.emplace_back(std::string_view("\xff\xfe"), std::string_view("x"));
  append_fetched_record(answer, r);
  fetched_page page;
  REQUIRE_FALSE(decode_fetch_binary(answer, page));
  REQUIRE(page.records.size() == 1);
  REQUIRE(page.records[0].headers.size() == 1);
  CHECK(page.records[0].headers[0].first == "\xff\xfe");
}

TEST_CASE("malformed binary produce bodies are refused naming the byte position", "[records][binary]") {
  produce_plan plan;
  auto refuse = [&](const std::string& body, int32_t partitions = 4) {
    plan = {};
    return parse_produce_binary(body, partitions, 0, 0, plan);
  };
  // One valid record: count | partition -1 | key null | value "abc" | 0 headers.
  const std::string one = be32(1) + be32(-1) + be32(-1) + be32(3) + "abc" + be32(0);
  REQUIRE_FALSE(refuse(one));

  SECTION("empty body and a zero count") {
    auto e = refuse("");
    CHECK(e.position == 0);
    CHECK(e.message == "count: the body ends here (4 bytes needed, 0 left)");
    e = refuse(be32(0));
    CHECK(e.position == 0);
    CHECK(e.message == "count: 0 is below 1");
  }
  SECTION("a count the body cannot hold") {
    auto e = refuse(be32(2) + one.substr(4));
    CHECK(e.position == 0);
    CHECK(e.message.find("count: 2 need at least 32 bytes") == 0);
    CHECK(refuse(be32(0x7FFFFFFF) + one.substr(4)).position == 0);
  }
  SECTION("every truncation of a valid body is refused at or before its end") {
    for (size_t n = 0; n < one.size(); ++n) {
      auto e = refuse(one.substr(0, n));
      INFO(n << ": " << e.to_string());
      CHECK(e);
      CHECK(e.position <= n);
    }
    auto e = refuse(one.substr(0, one.size() - 1));
    CHECK(e.position == 19);
    CHECK(e.message == "records[0].header_count: the body ends here (4 bytes needed, 3 left)");
  }
  SECTION("a length past the end names the length field") {
    auto e = refuse(be32(1) + be32(-1) + be32(-1) + be32(1000) + "abc" + be32(0));
    CHECK(e.position == 12);
    CHECK(e.message == "records[0].value: length 1000 runs past the end of the body (23 bytes, 7 left)");
  }
  SECTION("negative lengths other than null") {
    auto e = refuse(be32(1) + be32(-1) + be32(-5) + be32(3) + "abc" + be32(0));
    CHECK(e.position == 8);
    CHECK(e.message.find("records[0].key: length -5 is negative") == 0);
  }
  SECTION("trailing bytes") {
    auto e = refuse(one + "xy");
    CHECK(e.position == one.size());
    CHECK(e.message == "2 bytes after the last of 1 records");
  }
  SECTION("a partition outside the topic") {
    auto second = be32(7) + be32(-1) + be32(1) + "z" + be32(0);
    auto e = refuse(be32(2) + one.substr(4) + second);
    CHECK(e.position == one.size());
    CHECK(e.message == "records[1].partition: 7 is not a partition of this topic (0..3, or -1)");
    CHECK(refuse(be32(1) + be32(-2) + one.substr(8)).position == 4);
  }
  SECTION("a null value") {
    auto e = refuse(be32(1) + be32(-1) + be32(-1) + be32(-1) + be32(0));
    CHECK(e.position == 12);
    CHECK(e.message == "records[0].value: null values are not accepted");
  }
  SECTION("header names: never null, UTF-8") {
    auto base = be32(1) + be32(-1) + be32(-1) + be32(1) + "v" + be32(1);
    auto e = refuse(base + be32(-1) + be32(-1));
    CHECK(e.position == base.size());
    CHECK(e.message.find("records[0].headers[0].name: length -1 is negative") == 0);
    e = refuse(base + be32(1) + "\xff" + be32(-1));
    CHECK(e.position == base.size());
    CHECK(e.message == "records[0].headers[0].name: not UTF-8");
    e = refuse(base + be32(1) + "h" + be32(9) + "v");
    CHECK(e.position == base.size() + 5);
    CHECK(e.message.find("records[0].headers[0].value: length 9 runs past the end") == 0);
  }
  CHECK(refuse("").to_string() == "byte 0: count: the body ends here (4 bytes needed, 0 left)");
}

TEST_CASE("malformed binary fetch answers are refused naming the byte position", "[records][binary]") {
  std::vector<storage::record> recs(3);
  for (auto& r : recs)
    r.value = "value";
  recs[1].headers = {{"h", std::string("x")}};
  auto batch = storage::encode_batch(recs);
  REQUIRE(batch);
  std::string answer;
  records_to_binary(*batch, 0, 10, 0, 3, answer);
  fetched_page page;
  REQUIRE_FALSE(decode_fetch_binary(answer, page));
  for (size_t n = 0; n < answer.size(); ++n) {
    auto e = decode_fetch_binary(answer.substr(0, n), page);
    INFO(n << ": " << e.to_string());
    CHECK(e);
    CHECK(e.position <= n);
  }
  auto e = decode_fetch_binary(answer + "!", page);
  CHECK(e.position == answer.size());
}

TEST_CASE("the binary form is named by Content-Type and chosen from Accept lists", "[records][binary]") {
  CHECK(names_records_binary("application/vnd.moonmq.records.v1"));
  CHECK(names_records_binary(" Application/VND.moonmq.Records.v1 ; charset=binary"));
  CHECK_FALSE(names_records_binary("application/json"));
  CHECK_FALSE(names_records_binary("application/vnd.moonmq.records.v10"));
  CHECK_FALSE(names_records_binary("application/json, application/vnd.moonmq.records.v1"));
  CHECK(names_records_binary("application/json;q=0.5, application/vnd.moonmq.records.v1", true));
  CHECK_FALSE(names_records_binary("*/*", true));
  CHECK_FALSE(names_records_binary("", true));
}

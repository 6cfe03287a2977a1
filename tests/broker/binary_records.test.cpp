// The binary records form (application/vnd.moonmq.records.v1,
// docs/client-api.md "Binary records") through a real node's client
// listener: bodies written and answers read here by the documented byte
// layout (not by the broker's codec), compared with the JSON form.

#include <catch2/catch.hpp>

#include <map>

#include "tests/broker/broker_client.hpp"

using namespace moonmq::test;
using namespace moonmq::test::broker;
using namespace std::chrono_literals;

namespace {

constexpr const char* binary_type = "application/vnd.moonmq.records.v1";

void put32(std::string& out, int32_t v) {
  auto u = static_cast<uint32_t>(v);
  for (int shift = 24; shift >= 0; shift -= 8)
    out += static_cast<char>((u >> shift) & 0xFF);
}

void put_bytes(std::string& out, const std::optional<std::string>& b) {
  put32(out, b ? static_cast<int32_t>(b->size()) : -1);
  if (b)
    out += *b;
}

/// One record as sent and as fetched back.
struct rec {
  int32_t partition = -1;
  std::optional<std::string> key;
  std::string value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  int64_t offset = -1;
  int64_t timestamp = -1;
};

std::string produce_body(const std::vector<rec>& records) {
  std::string out;
  put32(out, static_cast<int32_t>(records.size()));
  for (const auto& r : records) {
    put32(out, r.partition);
    put_bytes(out, r.key);
    put_bytes(out, r.value);
    put32(out, static_cast<int32_t>(r.headers.size()));
    for (const auto& [name, value] : r.headers) {
      put_bytes(out, name);
      put_bytes(out, value);
    }
  }
  return out;
}

/// Reads a fetch answer of the binary form; REQUIREs it is well-formed.
struct answer_reader {
  std::string_view in;
  size_t pos = 0;
  uint64_t fixed(size_t n) {
    REQUIRE(pos + n <= in.size());
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
      v = (v << 8) | static_cast<unsigned char>(in[pos + i]);
    pos += n;
    return v;
  }
  int32_t i32() { return static_cast<int32_t>(static_cast<uint32_t>(fixed(4))); }
  int64_t i64() { return static_cast<int64_t>(fixed(8)); }
  std::optional<std::string> bytes() {
    auto n = i32();
    if (n == -1)
      return std::nullopt;
    REQUIRE(n >= 0);
    REQUIRE(pos + static_cast<size_t>(n) <= in.size());
    std::string out(in.substr(pos, static_cast<size_t>(n)));
    pos += static_cast<size_t>(n);
    return out;
  }
};

struct binary_page {
  int64_t next_offset = 0, log_start_offset = 0, log_end_offset = 0;
  std::vector<rec> records;
};

binary_page parse_page(const std::string& body) {
  answer_reader r{body};
  binary_page page;
  page.next_offset = r.i64();
  page.log_start_offset = r.i64();
  page.log_end_offset = r.i64();
  auto n = r.i32();
  for (int32_t i = 0; i < n; ++i) {
    rec x;
    x.offset = r.i64();
    x.timestamp = r.i64();
    x.key = r.bytes();
    auto value = r.bytes();
    REQUIRE(value);  // produced values are never null
    x.value = *value;
    auto headers = r.i32();
    for (int32_t h = 0; h < headers; ++h) {
      auto name = r.bytes();
      REQUIRE(name);
      x.headers.emplace_back(*name, r.bytes());
    }
    page.records.push_back(std::move(x));
  }
  CHECK(r.pos == body.size());
  return page;
}

moonmq::transport::http_result post_binary(uint16_t port, const std::string& target, const std::string& body) {
  return moonmq::transport::http_call(port, "POST", target, body, {{"Content-Type", binary_type}}, 30s);
}

moonmq::transport::http_result fetch_binary(uint16_t port, const std::string& topic, int partition,
                                            const std::string& query = "") {
  return moonmq::transport::http_call(
    port, "GET", "/v1/topics/" + topic + "/partitions/" + std::to_string(partition) + "/records" + query, {},
    {{"Accept", "application/json;q=0.5, " + std::string(binary_type)}}, 30s);
}

/// The records of a JSON fetch as recs (the test's own base64 decoder).
std::vector<rec> from_json(const std::vector<json>& records) {
  std::vector<rec> out;
  for (const auto& j : records) {
    rec x;
    x.offset = j["offset"].get<int64_t>();
    x.timestamp = j["timestamp"].get<int64_t>();
    x.key = bytes_of(j, "key");
    x.value = *bytes_of(j, "value");
    if (j.contains("headers"))
      for (const auto& h : j["headers"])
        x.headers.emplace_back(h["key"].get<std::string>(), bytes_of(h, "value"));
    out.push_back(std::move(x));
  }
  return out;
}

bool same_record(const rec& a, const rec& b) {
  return a.offset == b.offset && a.timestamp == b.timestamp && a.key == b.key && a.value == b.value
         && a.headers == b.headers;
}

}  // namespace

TEST_CASE("binary produce comes back equal from JSON and binary fetches", "[broker][records][binary]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "bin", 3);
  std::string every_byte;
  for (int b = 0; b < 256; ++b)
    every_byte += static_cast<char>(b);
  std::vector<rec> sent(6);
  sent[0] = {2, std::string("k"), every_byte, {{"trace", std::string("abc")}, {"nul", std::nullopt}}};
  sent[1] = {-1, every_byte, "", {}};                       // binary key, empty value: murmur2 of the key
  sent[2] = {-1, std::nullopt, "text \xc3\xbc", {}};        // sticky
  sent[3] = {0, std::string(""), every_byte, {{"bin", every_byte}, {"", std::string("")}}};
  sent[4] = {2, std::nullopt, "second on 2", {}};
  sent[5] = {1, std::string("k5"), std::string(100000, 'x'), {}};

  auto a = post_binary(n.client, "/v1/topics/bin/records?acks=leader", produce_body(sent));
  INFO(a.body);
  REQUIRE(a.status == 200);
  auto offsets = json::parse(a.body)["offsets"];
  REQUIRE(offsets.size() == sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    if (sent[i].partition >= 0)
      CHECK(offsets[i]["partition"] == sent[i].partition);
    sent[i].partition = offsets[i]["partition"].get<int32_t>();
    sent[i].offset = offsets[i]["offset"].get<int64_t>();
  }
  CHECK(sent[4].offset == sent[0].offset + 1);  // one batch per partition, request order

  // A JSON produce, fetched in the binary form below with the rest.
  auto j = call(n.client, "POST", "/v1/topics/bin/records",
                json{{"records", {{{"value_base64", base64_encode(std::string("\x00\xffj", 3))}, {"partition", 1}}}}});
  REQUIRE(j.status == 200);

  size_t seen = 0;
  for (int p = 0; p < 3; ++p) {
    auto as_json = from_json(fetch_all(n.client, "bin", p));
    auto res = fetch_binary(n.client, "bin", p, "?offset=0&max_records=10000");
    INFO("partition " << p << ": " << res.status);
    REQUIRE(res.status == 200);
    CHECK(res.headers["content-type"] == binary_type);
    auto page = parse_page(res.body);
    CHECK(page.log_start_offset == 0);
    CHECK(page.log_end_offset == static_cast<int64_t>(as_json.size()));
    CHECK(page.next_offset == page.log_end_offset);
    REQUIRE(page.records.size() == as_json.size());
    for (size_t i = 0; i < as_json.size(); ++i) {
      INFO("offset " << i);
      CHECK(same_record(page.records[i], as_json[i]));
      CHECK(page.records[i].offset == static_cast<int64_t>(i));
      CHECK(page.records[i].timestamp > 0);
    }
    for (const auto& s : sent) {
      if (s.partition != p)
        continue;
      REQUIRE(s.offset < static_cast<int64_t>(page.records.size()));
      const auto& got = page.records[static_cast<size_t>(s.offset)];
      CHECK(got.key == s.key);
      CHECK(got.value == s.value);
      CHECK(got.headers == s.headers);
      ++seen;
    }
    if (p == 1)
      CHECK(page.records.back().value == std::string("\x00\xffj", 3));
  }
  CHECK(seen == sent.size());

  // Paging: next_offset continues where max_records stopped.
  auto res = fetch_binary(n.client, "bin", 2, "?offset=0&max_records=1");
  REQUIRE(res.status == 200);
  auto page = parse_page(res.body);
  CHECK(page.records.size() == 1);
  CHECK(page.next_offset == 1);
  // Errors stay JSON whatever the Accept header asks.
  res = fetch_binary(n.client, "bin", 2, "?offset=99");
  CHECK(res.status == 400);
  CHECK(json::parse(res.body)["error"] == "offset_out_of_range");
  n.stop();
}

TEST_CASE("malformed binary produce bodies are answered 400 naming the byte position, too large ones 413",
          "[broker][records][binary]") {
  temp_dir dir;
  auto n = running_node::start(dir, {"Http.MaxBodyBytes=4096"});
  create_topic(n.client, "bad", 2);
  auto good = produce_body({{-1, std::nullopt, "v", {}}});
  auto refused = [&](const std::string& body, size_t position, const std::string& message) {
    auto a = post_binary(n.client, "/v1/topics/bad/records", body);
    INFO(a.body);
    CHECK(a.status == 400);
    auto j = json::parse(a.body, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["error"] == "invalid_request");
    CHECK(j["position"] == position);
    CHECK(j["message"].get<std::string>().rfind("byte " + std::to_string(position) + ": " + message, 0) == 0);
  };
  refused(good.substr(0, good.size() - 1), 17, "records[0].header_count: the body ends here");  // truncated
  std::string past = good;
  past[15] = 9;  // value length 9, one byte there
  refused(past, 12, "records[0].value: length 9 runs past the end of the body");
  refused(good + "zz", good.size(), "2 bytes after the last of 1 records");
  std::string two;
  put32(two, 2);
  auto partition = good.substr(0, 4) + two + good.substr(8);  // partition 2 of a 2-partition topic
  refused(partition, 4, "records[0].partition: 2 is not a partition of this topic (0..1, or -1)");
  refused("", 0, "count: the body ends here");
  // Nothing was appended by any of them.
  for (int p = 0; p < 2; ++p)
    CHECK(call(n.client, "GET", "/v1/topics/bad/partitions/" + std::to_string(p) + "/records").body["log_end_offset"] == 0);

  // Over Server.Http.MaxBodyBytes: 413 as for JSON, nothing appended.
  auto big = produce_body({{0, std::nullopt, std::string(5000, 'b'), {}}});
  auto a = post_binary(n.client, "/v1/topics/bad/records", big);
  CHECK(a.status == 413);
  CHECK(json::parse(a.body, nullptr, false).value("error", "") == "payload_too_large");
  CHECK(call(n.client, "GET", "/v1/topics/bad/partitions/0/records").body["log_end_offset"] == 0);
  auto ok = post_binary(n.client, "/v1/topics/bad/records", good);
  CHECK(ok.status == 200);
  n.stop();
}

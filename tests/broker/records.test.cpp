// Produce and fetch through the client API of a real moonmq-node: 20,000
// records with keys, binary values and headers come back byte-identical and
// in order over several fetch pages, also after a restart; the bounds of
// offset_out_of_range; retention moving the log start; recovery of a
// damaged segment tail at start-up.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "storage/recovery_point.hpp"
#include "tests/broker/broker_client.hpp"

using namespace moonmq::test;
using namespace moonmq::test::broker;
using namespace std::chrono_literals;

namespace {

struct sent_record {
  std::optional<std::string> key;
  std::string value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

/// Deterministic record `i`: null, text or binary keys; values that are
/// empty, UTF-8 text (with multi-byte characters) or arbitrary bytes
/// (invalid UTF-8, NUL bytes); zero to three headers, some with null or
/// binary values.
sent_record make_record(int i, std::mt19937_64& rng) {
  sent_record r;
  switch (i % 4) {
    case 0: break;
    case 1: r.key = "key-" + std::to_string(i % 97); break;
    case 2: r.key = std::string("\xff\x00k", 3) + std::to_string(i); break;
    default: r.key = std::string(); break;
  }
  auto len = static_cast<size_t>(rng() % 300);
  switch (i % 3) {
    case 0:
      for (size_t k = 0; k < len; ++k)
        r.value += static_cast<char>(rng());
      break;
    case 1: r.value = "v\xc3\xa9" + std::to_string(i) + std::string(len, 'a'); break;  // "vé..."
    default: r.value = i % 30 == 2 ? std::string() : std::string(len, '\0'); break;
  }
  for (int h = 0; h < i % 4; ++h) {
    std::optional<std::string> hv;
    if (h == 0)
      hv = "h" + std::to_string(i);
    else if (h == 1)
      hv = std::string("\x80\x81", 2);
    r.headers.emplace_back("hk" + std::to_string(h), hv);
  }
  return r;
}

/// The JSON of `r` for a produce body: binary as *_base64, headers as an
/// array of {key, value|value_base64} (or an object of strings when every
/// header value is text, to cover both accepted forms).
json to_json(const sent_record& r, int partition) {
  json j{{"partition", partition}, {"value_base64", base64_encode(r.value)}};
  if (r.key)
    j["key_base64"] = base64_encode(*r.key);
  if (r.headers.empty())
    return j;
  bool all_text = r.headers.size() == 1 && r.headers[0].second;
  if (all_text) {
    j["headers"] = json{{r.headers[0].first, *r.headers[0].second}};
    return j;
  }
  json hs = json::array();
  for (const auto& [k, v] : r.headers) {
    json h{{"key", k}};
    if (v)
      h["value_base64"] = base64_encode(*v);
    hs.push_back(h);
  }
  j["headers"] = hs;
  return j;
}

/// Checks that `got` is exactly `want`, byte for byte.
void check_same(const json& got, const sent_record& want) {
  INFO("offset " << got["offset"]);
  CHECK(bytes_of(got, "value") == std::optional<std::string>(want.value));
  CHECK(bytes_of(got, "key") == want.key);
  CHECK(got["timestamp"].is_number_integer());
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  if (got.contains("headers"))
    for (const auto& h : got["headers"])
      headers.emplace_back(h["key"].get<std::string>(), bytes_of(h, "value"));
  CHECK(headers == want.headers);
}

constexpr int partitions = 2;

}  // namespace

TEST_CASE("20000 records come back byte-identical over fetch pages and after a restart", "[broker][records]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "data", partitions);
  std::mt19937_64 rng{42};
  std::vector<std::vector<sent_record>> by_partition(partitions);
  moonmq::transport::http_connection conn{"127.0.0.1", n.client};
  const int total = 20000, per_request = 1000;
  for (int base = 0; base < total; base += per_request) {
    json records = json::array();
    std::vector<int> placed;
    for (int i = base; i < base + per_request; ++i) {
      int p = (i / 7) % partitions;  // runs of 7 interleaved across partitions
      auto r = make_record(i, rng);
      records.push_back(to_json(r, p));
      by_partition[static_cast<size_t>(p)].push_back(std::move(r));
      placed.push_back(p);
    }
    auto res = conn.call("POST", "/v1/topics/data/records", json{{"records", records}}.dump(), 30s);
    INFO(res.body.substr(0, 300));
    REQUIRE(res.status == 200);
    auto offsets = json::parse(res.body)["offsets"];
    REQUIRE(offsets.size() == static_cast<size_t>(per_request));
    // Offsets in request order: each record's offset is its index within its
    // partition (the partitions were empty before).
    std::vector<int64_t> seen(partitions, -1);
    for (size_t k = 0; k < offsets.size(); ++k) {
      auto p = placed[k];
      CHECK(offsets[k]["partition"] == p);
      auto off = offsets[k]["offset"].get<int64_t>();
      if (seen[static_cast<size_t>(p)] >= 0)
        CHECK(off == seen[static_cast<size_t>(p)] + 1);
      seen[static_cast<size_t>(p)] = off;
    }
  }
  auto verify = [&](uint16_t port) {
    for (int p = 0; p < partitions; ++p) {
      const auto& want = by_partition[static_cast<size_t>(p)];
      int pages = 0;
      auto got = fetch_all(port, "data", p, 3000, &pages);
      REQUIRE(got.size() == want.size());
      CHECK(pages >= 4);
      for (size_t i = 0; i < got.size(); ++i)
        check_same(got[i], want[i]);
      // The default page is 500 records.
      auto page = call(port, "GET", "/v1/topics/data/partitions/" + std::to_string(p) + "/records?offset=17");
      REQUIRE(page.status == 200);
      CHECK(page.body["records"].size() == 500);
      CHECK(page.body["records"][0]["offset"] == 17);
      CHECK(page.body["next_offset"] == 517);
      CHECK(page.body["log_start_offset"] == 0);
      CHECK(page.body["log_end_offset"] == want.size());
    }
  };
  verify(n.client);
  n.stop();
  auto again = running_node::start(dir);
  verify(again.client);
  // Appends continue at the old log end.
  auto more = call(again.client, "POST", "/v1/topics/data/records", json{{"records", {{{"value", "z"}, {"partition", 1}}}}});
  REQUIRE(more.status == 200);
  CHECK(more.body["offsets"][0]["offset"] == by_partition[1].size());
  again.stop();
}

TEST_CASE("produce answers offsets in request order and accepts text and base64", "[broker][records]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "mix", 3);
  json body{{"records",
             {{{"value", "a"}, {"partition", 2}},
              {{"value", "b"}, {"partition", 0}},
              {{"value_base64", base64_encode("\x01\xfe")}, {"partition", 2}},
              {{"key", "same-key"}, {"value", "k1"}},
              {{"key", "same-key"}, {"value", "k2"}},
              {{"value", "sticky"}}}}};
  for (auto acks : {"", "?acks=leader", "?acks=none"}) {
    auto a = call(n.client, "POST", std::string("/v1/topics/mix/records") + acks, body);
    INFO(a.raw);
    REQUIRE(a.status == 200);
    const auto& o = a.body["offsets"];
    REQUIRE(o.size() == 6);
    CHECK(o[0]["partition"] == 2);
    CHECK(o[1]["partition"] == 0);
    CHECK(o[2]["partition"] == 2);
    CHECK(o[2]["offset"].get<int64_t>() == o[0]["offset"].get<int64_t>() + 1);
    CHECK(o[3]["partition"] == o[4]["partition"]);  // a key picks one partition
    CHECK(o[4]["offset"].get<int64_t>() == o[3]["offset"].get<int64_t>() + 1);
  }
  auto p2 = fetch_all(n.client, "mix", 2);
  REQUIRE(p2.size() >= 6);
  CHECK(p2[0]["value"] == "a");
  CHECK(bytes_of(p2[1], "value") == std::string("\x01\xfe"));
  CHECK(p2[1].contains("value_base64"));  // not UTF-8: answered as base64
  CHECK(p2[0]["key"].is_null());

  auto bad = [&](const std::string& target, const std::string& b, int status, const std::string& code) {
    auto a = call(n.client, "POST", target, b);
    INFO(target << " " << b << " -> " << a.raw);
    CHECK(a.status == status);
    CHECK(a.body["error"] == code);
  };
  bad("/v1/topics/mix/records", R"({"records":[]})", 400, "invalid_request");
  bad("/v1/topics/mix/records", R"({"records":[{"key":"k"}]})", 400, "invalid_request");
  bad("/v1/topics/mix/records", R"({"records":[{"value":"v","partition":3}]})", 400, "invalid_request");
  bad("/v1/topics/mix/records", R"({"records":[{"value":"v","partition":-1}]})", 400, "invalid_request");
  bad("/v1/topics/mix/records", R"({"records":[{"value_base64":"abc"}]})", 400, "invalid_request");
  bad("/v1/topics/mix/records", R"({"records":[{"value":1}]})", 400, "invalid_request");
  bad("/v1/topics/mix/records", R"({"records":[{"value":"v","headers":{"h":1}}]})", 400, "invalid_request");
  bad("/v1/topics/mix/records", R"({"rec)", 400, "malformed_json");
  bad("/v1/topics/mix/records?acks=all2", R"({"records":[{"value":"v"}]})", 400, "invalid_request");
  bad("/v1/topics/nope/records", R"({"records":[{"value":"v"}]})", 404, "unknown_topic");
  for (auto q : {"offset=x", "offset=-1", "max_records=1e3"}) {
    auto a = call(n.client, "GET", std::string("/v1/topics/mix/partitions/0/records?") + q);
    INFO(q << " -> " << a.raw);
    CHECK(a.status == 400);
    CHECK(a.body["error"] == "invalid_request");
  }
  CHECK(call(n.client, "GET", "/v1/topics/mix/partitions/3/records").status == 404);
  CHECK(call(n.client, "GET", "/v1/topics/mix/partitions/x/records").status == 404);
  // A rejected body appended nothing.
  CHECK(fetch_all(n.client, "mix", 2).size() == p2.size());
  n.stop();
}

TEST_CASE("offset_out_of_range names the log start and log end", "[broker][records]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "r", 1);
  json records = json::array();
  for (int i = 0; i < 10; ++i)
    records.push_back(json{{"value", "v" + std::to_string(i)}});
  REQUIRE(call(n.client, "POST", "/v1/topics/r/records", json{{"records", records}}).status == 200);
  // At the log end: an empty page, not an error.
  auto at_end = call(n.client, "GET", "/v1/topics/r/partitions/0/records?offset=10");
  CHECK(at_end.status == 200);
  CHECK(at_end.body["records"].empty());
  CHECK(at_end.body["next_offset"] == 10);
  CHECK(at_end.body["log_end_offset"] == 10);
  for (auto off : {11, 1000000}) {
    auto a = call(n.client, "GET", "/v1/topics/r/partitions/0/records?offset=" + std::to_string(off));
    INFO(a.raw);
    CHECK(a.status == 400);
    CHECK(a.body["error"] == "offset_out_of_range");
    CHECK(a.body["log_start_offset"] == 0);
    CHECK(a.body["log_end_offset"] == 10);
  }
  auto page = call(n.client, "GET", "/v1/topics/r/partitions/0/records?offset=3&max_records=4");
  CHECK(page.body["records"].size() == 4);
  CHECK(page.body["records"][0]["value"] == "v3");
  CHECK(page.body["next_offset"] == 7);
  n.stop();
}

TEST_CASE("retention advances the log start and fetches below it are out of range", "[broker][records]") {
  temp_dir dir;
  auto n = running_node::start(dir, {"Storage.RetentionCheckMs=50"});
  create_topic(n.client, "ret", 1, json{{"segment.bytes", 2048}, {"retention.bytes", 4096}});
  moonmq::transport::http_connection conn{"127.0.0.1", n.client};
  const int total = 200;  // ~300 bytes per one-record batch: ~60 KB, ~30 segments
  for (int i = 0; i < total; ++i) {
    json body{{"records", {{{"value", "r" + std::to_string(i) + "-" + std::string(200, 'x')}}}}};
    auto res = conn.call("POST", "/v1/topics/ret/records", body.dump());
    REQUIRE(res.status == 200);
    CHECK(json::parse(res.body)["offsets"][0]["offset"] == i);
  }
  // Retention runs every 50 ms: wait until the log start has advanced and
  // then stays put (nothing more to delete) before checking the bounds.
  int64_t log_start = 0;
  bool settled = false;
  for (int round = 0; round < 50 && !settled; ++round) {
    auto page = call(n.client, "GET", "/v1/topics/ret/partitions/0/records?max_records=1");
    auto now = page.body["log_start_offset"].get<int64_t>();
    settled = now > total / 2 && now == log_start;
    log_start = now;
    std::this_thread::sleep_for(300ms);
  }
  REQUIRE(settled);
  // Only the newest records are left, under their original offsets.
  auto rest = fetch_all(n.client, "ret", 0, 50, nullptr, &log_start);
  REQUIRE(!rest.empty());
  CHECK(rest.front()["offset"] == log_start);
  CHECK(rest.back()["offset"] == total - 1);
  for (const auto& r : rest)
    CHECK(r["value"].get<std::string>().rfind("r" + std::to_string(r["offset"].get<int64_t>()) + "-", 0) == 0);
  for (auto off : {int64_t{0}, log_start - 1}) {
    auto a = call(n.client, "GET", "/v1/topics/ret/partitions/0/records?offset=" + std::to_string(off));
    INFO(a.raw);
    CHECK(a.status == 400);
    CHECK(a.body["error"] == "offset_out_of_range");
    CHECK(a.body["log_start_offset"] == log_start);
    CHECK(a.body["log_end_offset"] == total);
  }
  // The advanced log start survives a restart.
  n.stop();
  auto again = running_node::start(dir, {"Storage.RetentionCheckMs=50"});
  int64_t start_after = -1;
  auto after = fetch_all(again.client, "ret", 0, 10000, nullptr, &start_after);
  CHECK(start_after >= log_start);
  CHECK(after.back()["offset"] == total - 1);
  again.stop();
}

namespace {

/// Five acknowledged requests of 10 records (offsets 0..49) to topic "torn",
/// SIGKILL, then damage in the last batch (offsets 40..49) past a recovery
/// point of 40: a flipped byte inside it and a torn write of garbage after
/// it. (The same damage below the recovery point takes the partition
/// offline: corruption.test.cpp.) Returns the node started again.
running_node torn_tail_past_recovery_point(const temp_dir& dir, std::vector<std::string> overrides) {
  auto node = running_node::start(dir, overrides);
  create_topic(node.client, "torn", 1);
  for (int i = 0; i < 5; ++i) {
    json recs = json::array();
    for (int k = 0; k < 10; ++k)
      recs.push_back(json{{"value", "v" + std::to_string(i * 10 + k)}, {"partition", 0}});
    REQUIRE(call(node.client, "POST", "/v1/topics/torn/records", json{{"records", recs}}).status == 200);
  }
  // A read writes what the segment holds in memory (docs/storage.md
  // "Write-behind") to its file, so all five batches are there to damage.
  REQUIRE(call(node.client, "GET", "/v1/topics/torn/partitions/0/records?offset=0&max_records=100").status == 200);
  node.kill();
  // As if the last batch had been appended after the last checkpoint
  // (docs/storage.md): recovery may cut it when it is torn.
  REQUIRE(moonmq::storage::write_recovery_checkpoint(dir.path() + "/data/torn-0",
                                                     {moonmq::storage::offset{40}, false})
            .ok());
  std::string seg;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/data/torn-0"))
    if (e.path().extension() == ".log")
      seg = e.path().string();
  REQUIRE_FALSE(seg.empty());
  auto size = std::filesystem::file_size(seg);
  {
    std::fstream f{seg, std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(static_cast<std::streamoff>(size - 5));
    char c = 0;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(size - 5));
    c = static_cast<char>(c ^ 0x40);
    f.write(&c, 1);
    f.seekp(0, std::ios::end);
    f.write("\x00\x00\x00\x00\x00garbage", 12);
  }
  return running_node::start(dir, overrides);
}

}  // namespace

TEST_CASE("without the WAL, a node cuts a torn tail past the recovery point and keeps every earlier record",
          "[broker][records]") {
  temp_dir dir;
  auto again = torn_tail_past_recovery_point(dir, {"Storage.WriteAheadLog=false"});
  auto page = call(again.client, "GET", "/v1/topics/torn/partitions/0/records?offset=0&max_records=100");
  REQUIRE(page.status == 200);
  // The last batch (offsets 40..49) held the flipped byte: it is cut, the
  // four before it are intact, and the log continues at offset 40.
  CHECK(page.body["log_end_offset"] == 40);
  REQUIRE(page.body["records"].size() == 40);
  for (int i = 0; i < 40; ++i)
    CHECK(page.body["records"][static_cast<size_t>(i)]["value"] == "v" + std::to_string(i));
  CHECK(again.node->log().find("log.truncated") != std::string::npos);
  auto next = call(again.client, "POST", "/v1/topics/torn/records", json{{"records", {{{"value", "after"}}}}});
  REQUIRE(next.status == 200);
  CHECK(next.body["offsets"][0]["offset"] == 40);
  again.stop();
}

TEST_CASE("with the WAL, a batch cut as a torn tail past the recovery point is put back from the WAL",
          "[broker][records][wal]") {
  temp_dir dir;
  auto again = torn_tail_past_recovery_point(dir, {});
  auto page = call(again.client, "GET", "/v1/topics/torn/partitions/0/records?offset=0&max_records=100");
  REQUIRE(page.status == 200);
  // Recovery cut the damaged last batch; it was acknowledged through the
  // WAL, whose replay appended it again with its offsets.
  CHECK(again.node->log().find("log.truncated") != std::string::npos);
  CHECK(again.node->log().find("batches_applied=1") != std::string::npos);
  CHECK(page.body["log_end_offset"] == 50);
  REQUIRE(page.body["records"].size() == 50);
  for (int i = 0; i < 50; ++i)
    CHECK(page.body["records"][static_cast<size_t>(i)]["value"] == "v" + std::to_string(i));
  auto next = call(again.client, "POST", "/v1/topics/torn/records", json{{"records", {{{"value", "after"}}}}});
  REQUIRE(next.status == 200);
  CHECK(next.body["offsets"][0]["offset"] == 50);
  again.stop();
}

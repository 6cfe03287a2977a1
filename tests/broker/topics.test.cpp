// Topic administration through the client API of a real moonmq-node:
// create (201, then 200), the validation errors, body limits, grow, list.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "tests/broker/broker_client.hpp"
#include "tests/support/raw_http.hpp"

using namespace moonmq::test;
using namespace moonmq::test::broker;
using namespace std::chrono_literals;

namespace {

std::map<std::string, int> listed(uint16_t port) {
  auto a = call(port, "GET", "/v1/topics");
  REQUIRE(a.status == 200);
  std::map<std::string, int> out;
  for (const auto& t : a.body["topics"])
    out[t["name"].get<std::string>()] = t["partitions"].get<int>();
  return out;
}

void expect_error(const answer& a, int status, const std::string& code) {
  INFO(a.raw);
  CHECK(a.status == status);
  REQUIRE(a.body.is_object());
  CHECK(a.body["error"] == code);
  CHECK(a.body["message"].is_string());
}

}  // namespace

TEST_CASE("topics are created once and listed", "[broker][topics]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  auto created = call(n.client, "POST", "/v1/topics", json{{"name", "orders"}, {"partitions", 3}});
  INFO(created.raw);
  CHECK(created.status == 201);
  CHECK(created.body == json{{"name", "orders"}, {"partitions", 3}});
  auto again = call(n.client, "POST", "/v1/topics", json{{"name", "orders"}, {"partitions", 3}});
  CHECK(again.status == 200);
  CHECK(again.body == json{{"name", "orders"}, {"partitions", 3}});
  // The same name with another partition count is refused, not changed.
  expect_error(call(n.client, "POST", "/v1/topics", json{{"name", "orders"}, {"partitions", 4}}), 400,
               "invalid_request");
  // partitions defaults to 1; names may use letters, digits, '.', '_', '-'.
  CHECK(call(n.client, "POST", "/v1/topics", json{{"name", "a.b_c-9"}}).status == 201);
  CHECK(call(n.client, "POST", "/v1/topics", json{{"name", std::string(249, 'x')}, {"partitions", 2}}).status == 201);
  CHECK(call(n.client, "POST", "/v1/topics",
             json{{"name", "small"}, {"partitions", 1}, {"config", {{"segment.bytes", 4096}, {"retention.bytes", 8192}}}})
          .status == 201);
  auto topics = listed(n.client);
  CHECK(topics == std::map<std::string, int>{{"orders", 3}, {"a.b_c-9", 1}, {std::string(249, 'x'), 2}, {"small", 1}});

  // The catalogue is durable.
  n.stop();
  auto again_node = running_node::start(dir);
  CHECK(listed(again_node.client) == topics);
  CHECK(call(again_node.client, "POST", "/v1/topics", json{{"name", "orders"}, {"partitions", 3}}).status == 200);
  again_node.stop();
}

TEST_CASE("invalid topic requests are 400 and change nothing", "[broker][topics]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  auto port = n.client;
  auto create = [&](const json& body) { return call(port, "POST", "/v1/topics", body); };
  expect_error(create(json{{"name", "../x"}, {"partitions", 1}}), 400, "invalid_request");
  expect_error(create(json{{"name", ".."}, {"partitions", 1}}), 400, "invalid_request");
  expect_error(create(json{{"name", "a/b"}, {"partitions", 1}}), 400, "invalid_request");
  expect_error(create(json{{"name", ""}, {"partitions", 1}}), 400, "invalid_request");
  expect_error(create(json{{"name", std::string(250, 'y')}, {"partitions", 1}}), 400, "invalid_request");
  expect_error(create(json{{"name", "zero"}, {"partitions", 0}}), 400, "invalid_request");
  expect_error(create(json{{"name", "negative"}, {"partitions", -1}}), 400, "invalid_request");
  expect_error(create(json{{"name", "huge"}, {"partitions", 10001}}), 400, "invalid_request");
  expect_error(create(json{{"name", "text"}, {"partitions", "3"}}), 400, "invalid_request");
  expect_error(create(json{{"partitions", 3}}), 400, "invalid_request");
  expect_error(create(json{{"name", "cfg"}, {"partitions", 1}, {"config", {{"segment.bytes", 10}}}}), 400,
               "invalid_request");
  expect_error(create(json{{"name", "cfg"}, {"partitions", 1}, {"config", {{"cleanup.policy", "compact"}}}}), 400,
               "invalid_request");
  expect_error(call(port, "POST", "/v1/topics", std::string("{\"name\":\"x\",")), 400, "malformed_json");
  expect_error(call(port, "POST", "/v1/topics", std::string("not json")), 400, "malformed_json");
  CHECK(listed(port).empty());
  n.stop();
}

TEST_CASE("a body over Server.Http.MaxBodyBytes is 413", "[broker][topics]") {
  temp_dir dir;
  auto n = running_node::start(dir, {"Http.MaxBodyBytes=2048"});
  // Announced by Content-Length: refused before the body is read.
  auto raw = raw_exchange(n.client,
                          "POST /v1/topics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: 4096\r\n\r\n",
                          5s);
  CHECK(status_of(raw) == 413);
  CHECK(raw.find("payload_too_large") != std::string::npos);
  // A whole oversized produce body, sent in full.
  create_topic(n.client, "t", 1);
  json records = json::array();
  for (int i = 0; i < 40; ++i)
    records.push_back(json{{"value", std::string(100, 'v')}});
  auto body = json{{"records", records}}.dump();
  REQUIRE(body.size() > 2048);
  auto a = call(n.client, "POST", "/v1/topics/t/records", body);
  expect_error(a, 413, "payload_too_large");
  // Nothing was appended; a body under the limit still works.
  auto f = call(n.client, "GET", "/v1/topics/t/partitions/0/records");
  CHECK(f.body["log_end_offset"] == 0);
  CHECK(call(n.client, "POST", "/v1/topics/t/records", json{{"records", {{{"value", "ok"}}}}}).status == 200);
  n.stop();
}

TEST_CASE("topics grow but never shrink", "[broker][topics]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "g", 2);
  auto grown = call(n.client, "POST", "/v1/topics/g/partitions", json{{"count", 5}});
  INFO(grown.raw);
  CHECK(grown.status == 200);
  CHECK(grown.body == json{{"name", "g"}, {"partitions", 5}});
  expect_error(call(n.client, "POST", "/v1/topics/g/partitions", json{{"count", 5}}), 400, "invalid_request");
  expect_error(call(n.client, "POST", "/v1/topics/g/partitions", json{{"count", 3}}), 400, "invalid_request");
  expect_error(call(n.client, "POST", "/v1/topics/g/partitions", json{{"count", 10001}}), 400, "invalid_request");
  expect_error(call(n.client, "POST", "/v1/topics/g/partitions", json{{"count", "6"}}), 400, "invalid_request");
  expect_error(call(n.client, "POST", "/v1/topics/g/partitions", std::string("{")), 400, "malformed_json");
  expect_error(call(n.client, "POST", "/v1/topics/nope/partitions", json{{"count", 3}}), 404, "unknown_topic");
  CHECK(listed(n.client) == std::map<std::string, int>{{"g", 5}});
  // The new partitions take records and are fetchable.
  auto p = call(n.client, "POST", "/v1/topics/g/records", json{{"records", {{{"value", "x"}, {"partition", 4}}}}});
  CHECK(p.status == 200);
  CHECK(p.body["offsets"] == json::array({{{"partition", 4}, {"offset", 0}}}));
  CHECK(call(n.client, "GET", "/v1/topics/g/partitions/4/records").body["records"].size() == 1);
  expect_error(call(n.client, "GET", "/v1/topics/g/partitions/5/records"), 404, "unknown_partition");
  expect_error(call(n.client, "GET", "/v1/topics/nope/partitions/0/records"), 404, "unknown_topic");
  n.stop();
  auto again = running_node::start(dir);
  CHECK(listed(again.client) == std::map<std::string, int>{{"g", 5}});
  CHECK(call(again.client, "GET", "/v1/topics/g/partitions/4/records").body["records"].size() == 1);
  again.stop();
}

TEST_CASE("a deleted topic is gone with its directories, and created again it starts at offset 0",
          "[broker][topics]") {
  // A single broker (no Cluster section) deletes its own copy.
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "d", 2);
  for (int i = 0; i < 3; ++i)
    REQUIRE(call(n.client, "POST", "/v1/topics/d/records", json{{"records", {{{"value", "old"}, {"partition", 1}}}}})
              .status == 200);
  REQUIRE(std::filesystem::exists(dir.path() + "/data/d-1"));
  auto deleted = call(n.client, "DELETE", "/v1/topics/d");
  INFO(deleted.raw);
  CHECK(deleted.status == 200);
  CHECK(deleted.body == json{{"name", "d"}, {"deleted", true}});
  CHECK(listed(n.client).empty());
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/data/d-0"));
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/data/d-1"));
  expect_error(call(n.client, "DELETE", "/v1/topics/d"), 404, "unknown_topic");
  expect_error(call(n.client, "GET", "/v1/topics/d/partitions/1/records"), 404, "unknown_topic");
  // Gone for good: not back after a restart; created again, it is empty.
  n.stop();
  auto again = running_node::start(dir);
  CHECK(listed(again.client).empty());
  create_topic(again.client, "d", 2);
  auto p = call(again.client, "POST", "/v1/topics/d/records", json{{"records", {{{"value", "new"}, {"partition", 1}}}}});
  CHECK(p.body["offsets"] == json::array({{{"partition", 1}, {"offset", 0}}}));
  auto f = call(again.client, "GET", "/v1/topics/d/partitions/1/records?offset=0");
  REQUIRE(f.body["records"].size() == 1);
  CHECK(f.body["records"][0]["value"] == "new");
  again.stop();
}

TEST_CASE("a deletion cut short by a crash is finished at the next start", "[broker][topics]") {
  // The catalogue marks a topic `deleting` before any directory goes: a
  // crash after that point leaves the mark, and the next start removes what
  // is left instead of serving a partial copy.
  temp_dir dir;
  {
    auto n = running_node::start(dir);
    create_topic(n.client, "half", 2);
    create_topic(n.client, "kept", 1);
    REQUIRE(call(n.client, "POST", "/v1/topics/half/records", json{{"records", {{{"value", "x"}, {"partition", 0}}}}})
              .status == 200);
    n.stop();
  }
  // As the crash left it: marked, one directory already gone, one not.
  auto catalog = json::parse(read_text(dir.path() + "/data/topics.json"));
  for (auto& t : catalog["topics"])
    if (t["name"] == "half")
      t["deleting"] = true;
  {
    std::ofstream out(dir.path() + "/data/topics.json", std::ios::trunc);
    out << catalog.dump();
  }
  std::filesystem::remove_all(dir.path() + "/data/half-1");
  REQUIRE(std::filesystem::exists(dir.path() + "/data/half-0"));
  auto again = running_node::start(dir);
  CHECK(listed(again.client) == std::map<std::string, int>{{"kept", 1}});
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/data/half-0"));
  CHECK(read_text(dir.path() + "/data/topics.json").find("half") == std::string::npos);
  // Created again, it starts empty.
  create_topic(again.client, "half", 2);
  auto f = call(again.client, "GET", "/v1/topics/half/partitions/0/records?offset=0");
  CHECK(f.body["log_end_offset"] == 0);
  again.stop();
}

TEST_CASE("topics are known as soon as the node reports ready", "[broker][topics]") {
  // The catalogue is loaded by the broker actor after it was spawned; the
  // node must not open its listeners before that (a restarted node answered
  // unknown_topic for a moment).
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "wide", 300);
  create_topic(n.client, "narrow", 1);
  n.stop();
  for (int i = 0; i < 3; ++i) {
    auto again = running_node::start(dir);
    CHECK(listed(again.client) == std::map<std::string, int>{{"wide", 300}, {"narrow", 1}});
    auto p = call(again.client, "POST", "/v1/topics/narrow/records", json{{"records", {{{"value", "x"}}}}});
    INFO(p.raw);
    CHECK(p.status == 200);
    again.stop();
  }
}

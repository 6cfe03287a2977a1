// HTTP/1.1 pipelining on a real node's client listener (api/
// http_server.hpp): requests written at once on one connection are answered
// in order, produce requests run side by side and still land in each
// partition in the order sent, and other requests wait for those before them.

#include <catch2/catch.hpp>

#include "tests/broker/broker_client.hpp"
#include "tests/support/raw_http.hpp"

using namespace moonmq::test;
using namespace moonmq::test::broker;
using namespace std::chrono_literals;

namespace {

std::string request(const std::string& method, const std::string& target, const std::string& body = {}) {
  std::string out = method + " " + target + " HTTP/1.1\r\nHost: x\r\n";
  if (!body.empty())
    out += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return out + "\r\n" + body;
}

}  // namespace

TEST_CASE("pipelined produce requests land in each partition in the order sent", "[broker][pipelining]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  constexpr int requests = 40, per_request = 25;
  // Created, written and read back in one write of one connection: the
  // produce requests must wait for the topic, the fetches for the produces.
  std::string bytes = request("POST", "/v1/topics", json{{"name", "piped"}, {"partitions", 2}}.dump());
  for (int i = 0; i < requests; ++i) {
    json records = json::array();
    for (int j = 0; j < per_request; ++j)
      records.push_back(json{{"partition", i % 2}, {"value", "r" + std::to_string(i) + "-" + std::to_string(j)}});
    bytes += request("POST", "/v1/topics/piped/records?acks=leader", json{{"records", records}}.dump());
  }
  for (int p = 0; p < 2; ++p)
    bytes += request("GET", "/v1/topics/piped/partitions/" + std::to_string(p) + "/records?max_records=10000");
  auto got = pipelined_exchange(n.client, bytes, requests + 3, 30s);
  REQUIRE(got.size() == static_cast<size_t>(requests + 3));
  CHECK(got[0].status == 201);
  std::vector<int64_t> next(2, 0);  // each partition's next offset, in request order
  for (int i = 0; i < requests; ++i) {
    const auto& a = got[static_cast<size_t>(i) + 1];
    INFO("request " << i << ": " << a.body);
    REQUIRE(a.status == 200);
    auto offsets = json::parse(a.body)["offsets"];
    REQUIRE(offsets.size() == static_cast<size_t>(per_request));
    for (const auto& o : offsets) {
      CHECK(o["partition"] == i % 2);
      CHECK(o["offset"] == next[static_cast<size_t>(i % 2)]++);
    }
  }
  for (int p = 0; p < 2; ++p) {
    const auto& a = got[static_cast<size_t>(requests + 1 + p)];
    REQUIRE(a.status == 200);
    auto page = json::parse(a.body);
    CHECK(page["log_end_offset"] == requests / 2 * per_request);
    // The values in offset order are the requests' in the order sent.
    std::vector<std::string> want, have;
    for (int i = p; i < requests; i += 2)
      for (int j = 0; j < per_request; ++j)
        want.push_back("r" + std::to_string(i) + "-" + std::to_string(j));
    for (const auto& r : page["records"])
      have.push_back(r["value"].get<std::string>());
    CHECK(have == want);
  }
}

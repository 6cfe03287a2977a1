// A broker holding 20,000 partitions (docs/storage.md "Threads, group
// commit and file descriptors"): the partitions run on a fixed set of I/O
// workers, not a thread each, and their segment files within the open-file
// budget (half the fd limit), so every partition is online and serves, a
// SIGTERM closes them all, and a restart brings them all back with their
// records.

#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/node/node_harness.hpp"
#include "net/blocking_client.hpp"

using namespace moonmq::test;
using moonmq::transport::http_call;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

constexpr int topics = 2;
constexpr int per_topic = 10000;  // the per-topic limit

long threads_of(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Threads:", 0) == 0)
      return std::stol(line.substr(8));
  return -1;
}

std::string topic(int t) { return "scale-" + std::to_string(t); }

/// Waits until the node's I/O workers opened every partition log
/// (moonmq_partitions_opening 0) and none is offline.
void wait_all_open(uint16_t admin) {
  bool open = wait_until(
    [&] {
      auto m = http_call(admin, "GET", "/metrics").body;
      return m.find("moonmq_partitions_opening 0\n") != std::string::npos
             && m.find("moonmq_offline_partitions 0\n") != std::string::npos;
    },
    120s);
  REQUIRE(open);
}

/// One produce request with one record for every partition of topic `t`
/// (value "<tag>-<partition>"); every record must get `offset`.
void produce_everywhere(uint16_t port, int t, const std::string& tag, int64_t offset) {
  json records = json::array();
  for (int p = 0; p < per_topic; ++p)
    records.push_back({{"partition", p}, {"value", tag + "-" + std::to_string(p)}});
  auto r = http_call(port, "POST", "/v1/topics/" + topic(t) + "/records?acks=leader", json{{"records", records}}.dump(),
                     {}, 120s);
  REQUIRE(r.status == 200);
  auto offsets = json::parse(r.body)["offsets"];
  REQUIRE(offsets.size() == static_cast<size_t>(per_topic));
  int wrong = 0;
  for (const auto& o : offsets)
    wrong += o["offset"] != offset ? 1 : 0;
  CHECK(wrong == 0);
}

/// Every 97th partition of topic `t` holds exactly `values` records, "<tag>-<p>" for each tag.
void check_sample(uint16_t port, int t, const std::vector<std::string>& tags) {
  for (int p = 0; p < per_topic; p += 97) {
    auto r = http_call(port, "GET",
                       "/v1/topics/" + topic(t) + "/partitions/" + std::to_string(p) + "/records?offset=0&max_records=10");
    REQUIRE(r.status == 200);
    auto got = json::parse(r.body)["records"];
    REQUIRE(got.size() == tags.size());
    for (size_t i = 0; i < tags.size(); ++i)
      CHECK(got[i]["value"] == tags[i] + "-" + std::to_string(p));
  }
}

}  // namespace

TEST_CASE("a broker holds 20,000 partitions on a fixed set of threads, serves every one, and brings all back "
          "after a restart",
          "[node][storage][scale][scenario]") {
  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &lim) == 0);
  INFO("fd limit " << lim.rlim_cur);  // the machine's default; the node keeps half for segment files
  temp_dir dir;
  {
    node_process node{dir};
    auto admin = node.wait_ready();
    REQUIRE(admin);
    auto port = *node.client_port();
    for (int t = 0; t < topics; ++t) {
      auto r = http_call(port, "POST", "/v1/topics", json{{"name", topic(t)}, {"partitions", per_topic}}.dump(), {},
                         120s);
      REQUIRE(r.status == 201);
    }
    wait_all_open(*admin);
    for (int t = 0; t < topics; ++t)
      produce_everywhere(port, t, "first", 0);
    check_sample(port, 0, {"first"});
    check_sample(port, 1, {"first"});
    auto threads = threads_of(node.process().pid());
    CHECK(threads > 0);
    CHECK(threads <= 64);
    node.process().signal(SIGTERM);
    CHECK(node.process().wait(30s) == 0);
    CHECK(node.log().find("node.stopped") != std::string::npos);
  }
  node_process again{dir};
  auto admin = again.wait_ready(60s);
  REQUIRE(admin);
  wait_all_open(*admin);
  auto port = *again.client_port();
  for (int t = 0; t < topics; ++t)
    produce_everywhere(port, t, "second", 1);
  check_sample(port, 0, {"first", "second"});
  check_sample(port, 1, {"first", "second"});
  CHECK(threads_of(again.process().pid()) <= 64);
  again.process().signal(SIGTERM);
  CHECK(again.process().wait(30s) == 0);
}

// GET /metrics on one real moonmq-node: the per-partition series follow the
// log (log end = records produced), a committed group offset shows as lag,
// and a deleted topic's partition and lag series are gone from the next
// scrape. The text passes `promtool check metrics`.

#include <catch2/catch.hpp>

#include "tests/broker/broker_client.hpp"
#include "tests/support/metrics_text.hpp"

using namespace moonmq::test;
using namespace moonmq::test::broker;

namespace {

std::string scrape(uint16_t admin) {
  auto a = call(admin, "GET", "/metrics");
  INFO(a.raw.substr(0, 2000));
  REQUIRE(a.status == 200);
  return a.raw;
}

}  // namespace

TEST_CASE("/metrics shows each partition's log and a group's lag, and forgets a deleted topic",
          "[broker][metrics]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "metered", 2);
  create_topic(n.client, "kept", 1);
  produce_values(n.client, "metered", 0, 30, "a");
  produce_values(n.client, "metered", 1, 4, "b");
  produce_values(n.client, "kept", 0, 5, "c");
  auto commit = call(n.client, "POST", "/v1/groups/billing/offsets",
                     json{{"offsets", {{{"topic", "metered"}, {"partition", 0}, {"offset", 12}},
                                       {{"topic", "kept"}, {"partition", 0}, {"offset", 5}}}}});
  INFO(commit.raw);
  REQUIRE(commit.status == 200);

  auto text = scrape(n.admin);
  INFO(text);
  const std::map<std::string, std::string> p0{{"topic", "metered"}, {"partition", "0"}};
  const std::map<std::string, std::string> p1{{"topic", "metered"}, {"partition", "1"}};
  CHECK(metric(text, "moonmq_partition_log_end_offset", p0) == 30.0);
  CHECK(metric(text, "moonmq_partition_log_end_offset", p1) == 4.0);
  CHECK(metric(text, "moonmq_partition_log_start_offset", p0) == 0.0);
  CHECK(metric(text, "moonmq_partition_size_bytes", p0).value_or(0) > 0.0);
  CHECK(metric(text, "moonmq_group_lag", {{"group", "billing"}, {"topic", "metered"}, {"partition", "0"}}) == 18.0);
  CHECK(metric(text, "moonmq_group_lag", {{"group", "billing"}, {"topic", "kept"}, {"partition", "0"}}) == 0.0);
  // No committed offset for partition 1: no lag series for it.
  CHECK_FALSE(metric(text, "moonmq_group_lag", {{"group", "billing"}, {"topic", "metered"}, {"partition", "1"}}));
  CHECK(metric(text, "moonmq_group_total_lag", {{"group", "billing"}}) == 18.0);
  CHECK(metric(text, "moonmq_offline_partitions") == 0.0);
  // A standalone broker runs no moves and has no metadata log.
  CHECK_FALSE(metric(text, "moonmq_reassignments_in_progress"));
  CHECK_FALSE(metric(text, "moonmq_brokers", {{"state", "active"}}));
  auto [rc, out] = promtool_check(text);
  INFO(out);
  CHECK(rc == 0);

  // More records: the next scrape follows the log, and the lag grows.
  produce_values(n.client, "metered", 0, 10, "d");
  text = scrape(n.admin);
  CHECK(metric(text, "moonmq_partition_log_end_offset", p0) == 40.0);
  CHECK(metric(text, "moonmq_group_lag", {{"group", "billing"}, {"topic", "metered"}, {"partition", "0"}}) == 28.0);

  auto deleted = call(n.client, "DELETE", "/v1/topics/metered");
  INFO(deleted.raw);
  REQUIRE(deleted.status == 200);
  text = scrape(n.admin);
  INFO(text);
  for (const char* name : {"moonmq_partition_log_start_offset", "moonmq_partition_log_end_offset",
                           "moonmq_partition_size_bytes", "moonmq_group_lag"}) {
    INFO(name);
    CHECK_FALSE(metric(text, name, {{"topic", "metered"}}));
  }
  CHECK(metric(text, "moonmq_partition_log_end_offset", {{"topic", "kept"}, {"partition", "0"}}) == 5.0);
  CHECK(metric(text, "moonmq_group_total_lag", {{"group", "billing"}}) == 0.0);
  auto [rc2, out2] = promtool_check(text);
  INFO(out2);
  CHECK(rc2 == 0);
  n.stop();
}

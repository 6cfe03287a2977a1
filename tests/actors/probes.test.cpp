// The balance loop's and the reassigner's metrics through their probes
// (actors/balancer_probe.hpp): the series each event sets, and the series
// of brokers that left going away.

#include <catch2/catch.hpp>

#include "actors/balancer_probe.hpp"
#include "goals/detector.hpp"
#include "tests/support/metrics_text.hpp"
#include "util/metrics.hpp"

using namespace moonmq;
using moonmq::test::metric;

TEST_CASE("the balancer probe keeps a series per live broker and drops the others'", "[probes]") {
  balancer_probe probe;
  probe.slow_brokers({{"pb1", true}, {"pb2", true}, {"pb3", false}}, {"pb2"});
  auto text = metrics::registry::global().render();
  CHECK(metric(text, "moonmq_autobalancer_broker_slow", {{"broker", "pb1"}}) == 0.0);
  CHECK(metric(text, "moonmq_autobalancer_broker_slow", {{"broker", "pb2"}}) == 1.0);
  CHECK_FALSE(metric(text, "moonmq_autobalancer_broker_slow", {{"broker", "pb3"}}));  // not alive: no series
  probe.slow_brokers({{"pb1", true}}, {});
  text = metrics::registry::global().render();
  CHECK(metric(text, "moonmq_autobalancer_broker_slow", {{"broker", "pb1"}}) == 0.0);
  CHECK_FALSE(metric(text, "moonmq_autobalancer_broker_slow", {{"broker", "pb2"}}));  // gone from the cluster

  goals::plan plan;
  plan.broker_ids = {"pb1", "pb2"};
  plan.brokers_before = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  plan.actions.resize(3);
  probe.plan_made(plan, {"pb1"});
  text = metrics::registry::global().render();
  CHECK(metric(text, "moonmq_autobalancer_broker_load", {{"broker", "pb1"}, {"resource", "partitions"}}) == 4.0);
  CHECK_FALSE(metric(text, "moonmq_autobalancer_broker_load", {{"broker", "pb2"}}));  // not listed
  CHECK(metric(text, "moonmq_autobalancer_last_plan_size") == 3.0);
}

TEST_CASE("the reassigner probe counts bytes and finished moves per destination", "[probes]") {
  reassigner_probe probe;
  probe.bytes_sent("pd1", 100);
  probe.bytes_sent("pd1", 50);
  probe.move_done("pd1", 2.5);
  const auto text = metrics::registry::global().render();
  CHECK(metric(text, "moonmq_reassign_bytes_total", {{"dest", "pd1"}}) == 150.0);
  CHECK(metric(text, "moonmq_reassign_partitions_total", {{"dest", "pd1"}}) == 1.0);
}

// The balance loop's and the reassigner's metrics through their probes
// (actors/balancer_probe.hpp): the series each event sets, and the series
// of brokers that left going away.

#include <catch2/catch.hpp>

#include "actors/balancer_probe.hpp"
#include "goals/detector.hpp"
#include "util/metrics.hpp"

using namespace moonmq;

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("the balancer probe keeps a series per live broker and drops the others'", "[probes]") {
  balancer_probe probe;
  probe.slow_brokers({{"pb1", true}, {"pb2", true}, {"pb3", false}}, {"pb2"});
  auto text = metrics::registry::global().render();
  CHECK(has_line(text, R"(moonmq_autobalancer_broker_slow{broker="pb1"} 0)"));
  CHECK(has_line(text, R"(moonmq_autobalancer_broker_slow{broker="pb2"} 1)"));
  CHECK(text.find(R"(broker="pb3")") == std::string::npos);  // not alive: no series
  probe.slow_brokers({{"pb1", true}}, {});
  text = metrics::registry::global().render();
  CHECK(has_line(text, R"(moonmq_autobalancer_broker_slow{broker="pb1"} 0)"));
  CHECK(text.find(R"(broker="pb2")") == std::string::npos);  // gone from the cluster

  goals::plan plan;
  plan.broker_ids = {"pb1", "pb2"};
  plan.brokers_before = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  plan.actions.resize(3);
  probe.plan_made(plan, {"pb1"});
  text = metrics::registry::global().render();
  CHECK(has_line(text, R"(moonmq_autobalancer_broker_load{broker="pb1",resource="partitions"} 4)"));
  CHECK(text.find(R"(moonmq_autobalancer_broker_load{broker="pb2")") == std::string::npos);  // not listed
  CHECK(has_line(text, "moonmq_autobalancer_last_plan_size 3"));
}

TEST_CASE("the reassigner probe counts bytes and finished moves per destination", "[probes]") {
  reassigner_probe probe;
  probe.bytes_sent("pd1", 100);
  probe.bytes_sent("pd1", 50);
  probe.move_done("pd1", 2.5);
  const auto text = metrics::registry::global().render();
  CHECK(has_line(text, R"(moonmq_reassign_bytes_total{dest="pd1"} 150)"));
  CHECK(has_line(text, R"(moonmq_reassign_partitions_total{dest="pd1"} 1)"));
}

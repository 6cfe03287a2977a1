#include <catch2/catch.hpp>

#include "placement/load_tracker.hpp"
#include "report_builder.hpp"

using namespace moonmq::placement;
using test::report;

namespace {

load_report at(load_report r, int64_t report_time_ms, uint64_t in_total, uint64_t out_total) {
  r.report_time_ms = report_time_ms;
  r.bytes_in_total = in_total;
  r.bytes_out_total = out_total;
  return r;
}

}  // namespace

TEST_CASE("placement tracker: a newer sample replaces the held one and refreshes seen_ms", "[placement][load_tracker]") {
  load_tracker t;
  CHECK(t.observe(at(report("b1", 3), 1000, 10, 10), 50) == observe_outcome::first);
  CHECK(t.observe(at(report("b1", 4), 6000, 20, 15), 5050) == observe_outcome::updated);
  const auto* b = t.find(broker_id{"b1"});
  REQUIRE(b);
  CHECK(b->report.active_sessions == 4);
  CHECK(b->seen_ms == 5050);
  CHECK_FALSE(b->counters_reset);
}

TEST_CASE("placement tracker: a repeated or older sample does not refresh the broker", "[placement][load_tracker]") {
  load_tracker t;
  (void)t.observe(at(report("b1", 3), 6000, 20, 20), 100);
  CHECK(t.observe(at(report("b1", 9), 6000, 20, 20), 900) == observe_outcome::duplicate);
  CHECK(t.observe(at(report("b1", 9), 1000, 10, 10), 900) == observe_outcome::out_of_order);
  CHECK(t.find(broker_id{"b1"})->seen_ms == 100);
  CHECK(t.find(broker_id{"b1"})->report.active_sessions == 3);
}

TEST_CASE("placement tracker: counters that went backwards mark a reset until the next sound report", "[placement][load_tracker]") {
  load_tracker t;
  (void)t.observe(at(report("b1"), 1000, 5000, 5000), 0);
  CHECK(t.observe(at(report("b1"), 6000, 12, 5100), 5000) == observe_outcome::reset);
  CHECK(t.find(broker_id{"b1"})->counters_reset);
  CHECK(t.observe(at(report("b1"), 11000, 400, 5200), 10000) == observe_outcome::updated);
  CHECK_FALSE(t.find(broker_id{"b1"})->counters_reset);
}

TEST_CASE("placement tracker: a restarted process is taken even when its clock is behind", "[placement][load_tracker]") {
  load_tracker t;
  (void)t.observe(at(report("b1", 8), 9000, 5000, 5000), 0);
  auto restarted = at(report("b1", 0), 7000, 0, 0);
  restarted.started_ms = 6500;
  CHECK(t.observe(restarted, 100) == observe_outcome::reset);
  const auto* b = t.find(broker_id{"b1"});
  CHECK(b->report.active_sessions == 0);
  CHECK(b->counters_reset);
  CHECK(b->seen_ms == 100);
}

TEST_CASE("placement tracker: liveness, invalid reports and forgetting", "[placement][load_tracker]") {
  load_tracker t;
  auto bad = report("b2");
  bad.machine_cpu = 2;
  CHECK(t.observe(bad, 0) == observe_outcome::invalid);
  CHECK(t.find(broker_id{"b2"}) == nullptr);

  (void)t.observe(at(report("b1"), 1000, 1, 1), 0);
  (void)t.observe(at(report("b3"), 1000, 1, 1), 0);
  t.set_alive(broker_id{"b1"}, false);
  CHECK_FALSE(t.find(broker_id{"b1"})->alive);
  (void)t.observe(at(report("b1"), 2000, 2, 2), 10);  // it answered again
  CHECK(t.find(broker_id{"b1"})->alive);

  t.forget(broker_id{"b3"});
  auto all = t.snapshot();
  REQUIRE(all.size() == 1);
  CHECK(all[0].report.broker == broker_id{"b1"});
  CHECK(std::string(to_string(observe_outcome::out_of_order)) == "out_of_order");
}

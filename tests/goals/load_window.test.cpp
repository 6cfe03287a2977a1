#include <catch2/catch.hpp>

#include "goals/load_model.hpp"
#include "goals/load_window.hpp"

using moonmq::goals::counter_rate;
using moonmq::goals::load_window;
using moonmq::goals::percentile;
using moonmq::goals::window_config;

TEST_CASE("percentile interpolates linearly between closest ranks", "[window]") {
  CHECK(percentile({}, 0.9) == 0.0);
  CHECK(percentile({7.0}, 0.9) == 7.0);
  CHECK(percentile({10.0, 20.0}, 0.5) == Approx(15.0));
  // rank = 0.9 * 4 = 3.6 -> 40 + 0.6 * (50 - 40)
  CHECK(percentile({50.0, 10.0, 40.0, 20.0, 30.0}, 0.9) == Approx(46.0));
  CHECK(percentile({1.0, 2.0, 3.0}, 0.0) == 1.0);
  CHECK(percentile({1.0, 2.0, 3.0}, 1.0) == 3.0);
  CHECK(percentile({1.0, 2.0, 3.0}, 7.0) == 3.0);  // clamped
}

TEST_CASE("window is trusted only once it holds MinValid samples", "[window]") {
  load_window w(window_config{5, 3, 0.5});
  CHECK_FALSE(w.trusted());
  CHECK_FALSE(w.value());
  w.add(1.0);
  w.add(2.0);
  CHECK_FALSE(w.value());
  w.add(3.0);
  REQUIRE(w.value());
  CHECK(*w.value() == Approx(2.0));
}

TEST_CASE("window evicts the oldest sample once full", "[window]") {
  load_window w(window_config{3, 1, 1.0});
  for (double v : {100.0, 1.0, 2.0, 3.0}) w.add(v);
  CHECK(w.size() == 3);
  CHECK(*w.value() == Approx(3.0));  // 100 is gone
}

TEST_CASE("window ignores negative and non-finite samples", "[window]") {
  load_window w(window_config{4, 1, 1.0});
  CHECK_FALSE(w.add(-1.0));
  CHECK_FALSE(w.add(std::numeric_limits<double>::quiet_NaN()));
  CHECK_FALSE(w.add(std::numeric_limits<double>::infinity()));
  CHECK(w.size() == 0);
  CHECK(w.add(5.0));
  CHECK(*w.value() == 5.0);
}

TEST_CASE("counter rate primes, differences and re-primes on a reset", "[window]") {
  counter_rate r;
  CHECK_FALSE(r.observe(1000, 0));          // baseline only
  auto v = r.observe(3000, 2000);           // 2000 bytes over 2 s
  REQUIRE(v);
  CHECK(*v == Approx(1000.0));
  CHECK_FALSE(r.observe(500, 3000));        // counter went down: restart, no negative rate
  v = r.observe(1500, 4000);
  REQUIRE(v);
  CHECK(*v == Approx(1000.0));
  CHECK_FALSE(r.observe(2000, 4000));       // clock did not advance
}

TEST_CASE("load model turns counters into windowed rates and trusts from the second report", "[window]") {
  using namespace moonmq::goals;
  load_model lm(window_config{10, 1, 1.0});
  broker_spec b;
  b.id = "b1";
  lm.set_brokers({b});
  lm.observe({{"t", 0}, "b1", 1000, 0, 500.0, 0});
  auto m = lm.to_model();
  REQUIRE(m.replicas.size() == 1);
  CHECK_FALSE(m.replicas[0].trusted);  // no rate yet
  lm.observe({{"t", 0}, "b1", 3000, 4000, 700.0, 1000});
  lm.observe({{"t", 0}, "b1", 4000, 4000, 600.0, 2000});
  m = lm.to_model();
  CHECK(m.replicas[0].trusted);
  CHECK(m.replicas[0].load[0] == Approx(2000.0));  // max of 2000 and 1000 bytes/s (percentile 1.0)
  CHECK(m.replicas[0].load[1] == Approx(4000.0));
  CHECK(m.replicas[0].load[2] == Approx(700.0));
  lm.observe({{"t", 0}, "b2", 10, 4000, 600.0, 3000});  // moved + counter reset: owner follows, no negative rate
  m = lm.to_model();
  CHECK(m.replicas[0].owner == "b2");
  CHECK(m.replicas[0].load[0] == Approx(2000.0));
  lm.forget({"t", 0});
  CHECK(lm.size() == 0);
}

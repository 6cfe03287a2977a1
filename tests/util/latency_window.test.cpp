// util/latency_window: quantiles over a sliding window of time slots.

#include <catch2/catch.hpp>

#include "util/latency_window.hpp"

using moonmq::util::latency_window;

TEST_CASE("a latency window reports nearest-rank quantiles as bucket bounds, never below the sample",
          "[util][latency]") {
  latency_window w(30, 1000);
  CHECK(w.summary(0).count == 0);
  CHECK(w.summary(0).p99_ms == 0.0);
  // 98 samples of 1 ms, then 2 of 200 ms: p50 is the 1 ms bucket, p99 is
  // the 99th sample (200 ms), max the largest.
  for (int i = 0; i < 98; ++i) w.record(1.0, 500);
  w.record(200.0, 500);
  w.record(200.0, 600);
  auto s = w.summary(900);
  CHECK(s.count == 100);
  CHECK(s.p50_ms >= 1.0);
  CHECK(s.p50_ms < 1.25);
  CHECK(s.p90_ms == s.p50_ms);
  CHECK(s.p99_ms >= 200.0);
  CHECK(s.p99_ms < 250.0);
  CHECK(s.max_ms == s.p99_ms);
  CHECK(latency_window::bucket_bound(1.0) == s.p50_ms);
  // With a 101st, fast sample the p99 is rank ceil(0.99·101) = 100: still slow.
  w.record(0.0, 900);
  CHECK(w.summary(900).p99_ms >= 200.0);
  CHECK(latency_window::bucket_bound(0.0) == latency_window::kFirstBoundMs);
  CHECK(latency_window::bucket_bound(1e9) > 20000.0);
  CHECK(latency_window::bucket_bound(1e300 * 1e300) == latency_window::bucket_bound(1e9));  // +inf: the last bucket
}

TEST_CASE("a latency window forgets samples once their slot leaves the window", "[util][latency]") {
  latency_window w(3, 1000);  // three slots of 1 s
  w.record(500.0, 100);       // slot 0
  w.record(2.0, 1100);        // slot 1
  w.record(2.0, 2100);        // slot 2
  CHECK(w.summary(2500).count == 3);
  CHECK(w.summary(2500).max_ms >= 500.0);
  // At 3.0 s the window is slots 1–3: the slow sample is gone.
  auto s = w.summary(3000);
  CHECK(s.count == 2);
  CHECK(s.max_ms < 2.5);
  // A sample in slot 3 reuses slot 0's storage and does not inherit it.
  w.record(3.0, 3200);
  s = w.summary(3200);
  CHECK(s.count == 3);
  CHECK(s.max_ms < 4.0);
  // Far in the future nothing is left.
  CHECK(w.summary(100000).count == 0);
}

#include <catch2/catch.hpp>

#include "placement/client_activity.hpp"

using namespace moonmq::placement;

TEST_CASE("placement activity: producers and consumers are one session per client id", "[placement][activity]") {
  client_activity a{0};
  a.produced("c1", 1000, 10, 5000);
  a.produced("c1", 500, 20, 5000);
  a.fetched("c1", 200, 30, 5000);
  a.fetched("c2", 300, 40, 5000);
  auto s = a.sample(1000);
  CHECK(s.interval_ms == 1000);
  CHECK(s.active_sessions == 2);
  CHECK(s.bytes_in == 1500);
  CHECK(s.bytes_out == 500);
  CHECK(s.in_per_sec() == Approx(1500.0));
  REQUIRE(s.clients.size() == 2);
  CHECK(s.clients["c1"].sessions == 1);
  CHECK(s.clients["c1"].bytes_in == 1500);
  CHECK(s.clients["c1"].bytes_out == 200);
  CHECK(s.clients["c2"].bytes_out == 300);
}

TEST_CASE("placement activity: anonymous requests count bytes but no session", "[placement][activity]") {
  client_activity a{0};
  a.produced("", 700, 1, 5000);
  a.fetched("", 300, 2, 5000);
  auto s = a.sample(500);
  CHECK(s.active_sessions == 0);
  CHECK(s.clients.empty());
  CHECK(s.bytes_in == 700);
  CHECK(s.out_per_sec() == Approx(600.0));
}

TEST_CASE("placement activity: sessions expire after their ttl and totals keep counting", "[placement][activity]") {
  client_activity a{0};
  a.produced("c1", 100, 0, 1000);
  auto first = a.sample(500);
  CHECK(first.active_sessions == 1);
  auto second = a.sample(1000);  // expiry 1000 <= now: gone
  CHECK(second.active_sessions == 0);
  CHECK(second.bytes_in == 0);
  CHECK(second.bytes_in_total == 100);
  CHECK(second.interval_ms == 500);
  a.produced("c1", 50, 1100, 1000);
  auto third = a.sample(1200);
  CHECK(third.bytes_in_total == 150);
  CHECK(third.clients["c1"].sessions == 1);
}

TEST_CASE("placement activity: group members are sessions until they leave or time out", "[placement][activity]") {
  client_activity a{0};
  a.member_seen("g", "m1", "c1", 0, 10'000);
  a.member_seen("g", "m2", "c1", 0, 10'000);
  a.member_seen("g", "m3", "", 0, 10'000);
  a.produced("c1", 10, 0, 10'000);
  auto s = a.sample(100);
  CHECK(s.active_sessions == 4);
  CHECK(s.clients["c1"].sessions == 3);  // two members and the producer
  a.member_left("g", "m1");
  a.member_seen("g", "m2", "", 5'000, 10'000);  // heartbeat without an id keeps the attribution
  auto later = a.sample(12'000);                // m3 and the producer timed out
  CHECK(later.active_sessions == 1);
  CHECK(later.clients["c1"].sessions == 1);
}

TEST_CASE("placement activity: a sample fills a valid report with rates over its interval", "[placement][activity]") {
  client_activity a{0};
  a.produced("c1", 2000, 0, 5000);
  a.fetched("c2", 4000, 0, 5000);
  a.member_seen("g", "m", "", 0, 5000);
  load_report r;
  r.broker = broker_id{"b1"};
  r.report_time_ms = 2000;
  fill_report(r, a.sample(2000));
  REQUIRE(validate(r).ok());
  CHECK(r.active_sessions == 3);
  CHECK(r.bytes_in_per_sec == Approx(1000.0));
  CHECK(r.bytes_out_per_sec == Approx(2000.0));
  CHECK(r.bytes_in_total == 2000);
  CHECK(r.clients.at("c1").bytes_in_per_sec == Approx(1000.0));
  CHECK(r.clients.at("c2").sessions == 1);
}

TEST_CASE("placement activity: the session table is bounded", "[placement][activity]") {
  client_activity a{0};
  for (size_t i = 0; i < client_activity::max_sessions + 10; ++i)
    a.produced("c" + std::to_string(i), 1, 0, 5000);
  CHECK(a.session_count() == client_activity::max_sessions);
  auto s = a.sample(1000);
  CHECK(s.bytes_in == client_activity::max_sessions + 10);  // every byte counted
  load_report r;
  r.broker = broker_id{"b1"};
  r.report_time_ms = 1000;
  fill_report(r, s);
  CHECK(validate(r).ok());
}

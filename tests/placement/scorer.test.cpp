#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "placement/scorer.hpp"
#include "report_builder.hpp"

using namespace moonmq::placement;
using test::mib;
using test::report;
using test::seen;

namespace {

constexpr int64_t now = 1'000'000;

recommendation run(const std::vector<broker_load>& brokers, const placement_request& req = {"c1", std::nullopt},
                   const scorer_config& cfg = {}, const std::vector<broker_id>& owners = {}) {
  auto r = recommend(brokers, now, req, cfg, owners);
  REQUIRE(r.ok());
  return *r;
}

std::vector<std::string> order(const recommendation& r) {
  std::vector<std::string> out;
  for (const auto& k : r.ranked)
    out.push_back(k.broker.str());
  return out;
}

const candidate& find(const recommendation& r, const std::string& id) {
  for (const auto& k : r.ranked)
    if (k.broker.str() == id)
      return k;
  FAIL("broker " << id << " not ranked");
  throw 0;  // unreachable: FAIL throws
}

bool all_finite(const nlohmann::json& j) {
  if (j.is_number())
    return std::isfinite(j.get<double>());
  if (j.is_structured()) {
    for (const auto& v : j)
      if (!all_finite(v))
        return false;
  }
  return !j.is_null();
}

}  // namespace

TEST_CASE("placement scorer: the least-loaded broker wins and the rest follow by score", "[placement][scorer]") {
  auto rec = run({seen(report("b1", 30, 2 * mib, 0.5)), seen(report("b2", 5, 0.2 * mib, 0.1)),
                  seen(report("b3", 20, 1 * mib, 0.3))});
  REQUIRE(rec.outcome == verdict::recommended);
  CHECK(order(rec) == std::vector<std::string>{"b2", "b3", "b1"});
  // Normalized by the highest value among the ranked brokers (30 sessions, 2 MiB/s).
  CHECK(rec.session_scale == 30);
  CHECK(rec.byte_rate_scale == 2 * mib);
  const auto& b2 = find(rec, "b2");
  CHECK(b2.terms.sessions == Approx(5.0 / 30));
  CHECK(b2.terms.byte_rate == Approx(0.1));
  CHECK(b2.terms.cpu == Approx(0.1));
  CHECK(b2.score == Approx(5.0 / 30 + 0.1 + 0.1));
  CHECK(find(rec, "b1").score == Approx(1.0 + 1.0 + 0.5));
  CHECK_FALSE(b2.reasons.empty());
}

TEST_CASE("placement scorer: weights decide which load matters", "[placement][scorer]") {
  // b1: many sessions, little traffic; b2: few sessions, heavy traffic.
  std::vector<broker_load> brokers{seen(report("b1", 40, 0.1 * mib, 0.2)), seen(report("b2", 4, 4 * mib, 0.2))};
  scorer_config sessions_only;
  sessions_only.byte_rate_weight = 0;
  CHECK(run(brokers, {"c1", std::nullopt}, sessions_only).best()->broker == broker_id{"b2"});
  scorer_config bytes_only;
  bytes_only.session_weight = 0;
  CHECK(run(brokers, {"c1", std::nullopt}, bytes_only).best()->broker == broker_id{"b1"});
}

TEST_CASE("placement scorer: an overloaded broker yields even with few sessions", "[placement][scorer]") {
  SECTION("cpu above the threshold") {
    auto rec = run({seen(report("b1", 1, 0, 0.9)), seen(report("b2", 50, 3 * mib, 0.6)), seen(report("b3", 60, 3 * mib, 0.7))});
    CHECK(order(rec) == std::vector<std::string>{"b2", "b3", "b1"});
    CHECK(find(rec, "b1").overloaded);
    CHECK_THAT(find(rec, "b1").reasons.back(), Catch::Contains("overloaded: cpu 0.90 > 0.80"));
  }
  SECTION("inflow above the configured rate") {
    auto hot = report("b1", 1, 0, 0.05);
    hot.bytes_in_per_sec = 6 * mib;
    auto rec = run({seen(hot), seen(report("b2", 50, 4 * mib, 0.5))});
    CHECK(order(rec) == std::vector<std::string>{"b2", "b1"});
    CHECK(find(rec, "b1").overloaded);
  }
  SECTION("machine cpu counts by default; process-only when configured") {
    auto neighbour = report("b1", 1, 0, 0.1);
    neighbour.machine_cpu = 0.95;
    std::vector<broker_load> brokers{seen(neighbour), seen(report("b2", 30, 1 * mib, 0.3))};
    CHECK(run(brokers).best()->broker == broker_id{"b2"});
    scorer_config process;
    process.cpu = cpu_source::process;
    CHECK(run(brokers, {"c1", std::nullopt}, process).best()->broker == broker_id{"b1"});
  }
  SECTION("when every broker is overloaded the least loaded is still recommended") {
    auto rec = run({seen(report("b1", 40, 0, 0.95)), seen(report("b2", 10, 0, 0.9))});
    CHECK(rec.outcome == verdict::recommended);
    CHECK(order(rec) == std::vector<std::string>{"b2", "b1"});
  }
}

TEST_CASE("placement scorer: a client's second session goes to a broker it does not use yet", "[placement][scorer]") {
  auto b1 = report("b1", 2, 0, 0.1);  // the least loaded, but c1 is already here
  b1.clients["c1"] = client_load{1, 0, 0};
  std::vector<broker_load> brokers{seen(b1), seen(report("b2", 20, 1 * mib, 0.3)), seen(report("b3", 30, 1 * mib, 0.4))};

  auto rec = run(brokers, {"c1", std::nullopt});
  CHECK(order(rec) == std::vector<std::string>{"b2", "b3", "b1"});
  CHECK(find(rec, "b1").client_sessions == 1);
  // Another client is not affected: b1 is least loaded for it.
  CHECK(run(brokers, {"c2", std::nullopt}).best()->broker == broker_id{"b1"});

  SECTION("a client on every broker goes where it has the fewest sessions") {
    brokers[1].report.clients["c1"] = client_load{3, 0, 0};
    brokers[2].report.clients["c1"] = client_load{2, 0, 0};
    CHECK(order(run(brokers, {"c1", std::nullopt})) == std::vector<std::string>{"b1", "b3", "b2"});
  }
  SECTION("spreading can be turned off") {
    scorer_config cfg;
    cfg.spread_clients = false;
    CHECK(run(brokers, {"c1", std::nullopt}, cfg).best()->broker == broker_id{"b1"});
  }
  SECTION("overload still comes before spreading") {
    brokers[1].report.process_cpu = brokers[1].report.machine_cpu = 0.85;
    brokers[2].report.process_cpu = brokers[2].report.machine_cpu = 0.9;
    CHECK(run(brokers, {"c1", std::nullopt}).best()->broker == broker_id{"b1"});
  }
}

TEST_CASE("placement scorer: a stale broker is never recommended", "[placement][scorer]") {
  // Default: 3 heartbeats of 5000 ms.
  std::vector<broker_load> brokers{seen(report("b1", 0, 0, 0), now - 15'001), seen(report("b2", 90, 4 * mib, 0.7), now)};
  auto rec = run(brokers);
  CHECK(order(rec) == std::vector<std::string>{"b2"});
  REQUIRE(rec.excluded.size() == 1);
  CHECK(rec.excluded[0].reason == exclusion_reason::stale);
  CHECK_THAT(rec.excluded[0].detail, Catch::Contains("15001 ms"));

  brokers[0].seen_ms = now - 15'000;  // exactly three heartbeats: still fresh
  CHECK(run(brokers).best()->broker == broker_id{"b1"});

  scorer_config fast;
  fast.heartbeat_interval_ms = 1000;
  CHECK(run(brokers, {"c1", std::nullopt}, fast).best()->broker == broker_id{"b2"});
}

TEST_CASE("placement scorer: a reset report is not ranked on its rates", "[placement][scorer]") {
  // b1 just restarted: its counters went backwards and its rate reads 0.
  auto restarted = seen(report("b1", 5, 0, 0.2));
  restarted.counters_reset = true;
  auto steady = seen(report("b2", 5, 0.5 * mib, 0.2));
  auto rec = run({restarted, steady});
  CHECK(order(rec) == std::vector<std::string>{"b2", "b1"});
  const auto& b1 = find(rec, "b1");
  CHECK_FALSE(b1.rates_trusted);
  CHECK(b1.terms.byte_rate == 1.0);  // counted as the busiest, not as idle
  CHECK_THAT(b1.reasons[1], Catch::Contains("counters went backwards"));

  // The same report with sound counters would have won on its zero rate.
  restarted.counters_reset = false;
  CHECK(run({restarted, steady}).best()->broker == broker_id{"b1"});

  SECTION("a reset report's rates neither set the scale nor trigger overload") {
    auto bogus = seen(report("b1", 5, 100 * mib, 0.2));
    bogus.report.bytes_in_per_sec = 90 * mib;
    bogus.counters_reset = true;
    auto r2 = run({bogus, seen(report("b2", 5, 2 * mib, 0.2)), seen(report("b3", 5, 1 * mib, 0.2))});
    CHECK(r2.byte_rate_scale == 2 * mib);
    CHECK_FALSE(find(r2, "b1").overloaded);
    CHECK(find(r2, "b3").terms.byte_rate == Approx(0.5));
  }
}

TEST_CASE("placement scorer: a restart seen through the tracker is flagged for the scorer", "[placement][scorer]") {
  load_tracker t;
  auto before = report("b1", 10, 1 * mib, 0.2);
  before.report_time_ms = now - 6000;
  before.bytes_in_total = 900'000'000;
  (void)t.observe(before, now - 6000);
  auto after = report("b1", 0, 0, 0.05);
  after.report_time_ms = now - 1000;
  after.bytes_in_total = 10;
  REQUIRE(t.observe(after, now - 1000) == observe_outcome::reset);
  (void)t.observe(report("b2", 3, 0.3 * mib, 0.2), now);
  auto rec = run(t.snapshot());
  CHECK_FALSE(find(rec, "b1").rates_trusted);
  CHECK(find(rec, "b2").rates_trusted);
}

TEST_CASE("placement scorer: all-zero loads give finite scores and a recommendation", "[placement][scorer]") {
  std::vector<broker_load> idle{seen(report("b1")), seen(report("b2")), seen(report("b3"))};
  auto rec = run(idle);
  REQUIRE(rec.outcome == verdict::recommended);
  REQUIRE(rec.ranked.size() == 3);
  for (const auto& k : rec.ranked) {
    CHECK(std::isfinite(k.score));
    CHECK(k.score == 0);
    CHECK(k.near_tie);
  }
  CHECK(all_finite(to_json(rec)));

  SECTION("also with every weight at zero and a topic nobody owns yet") {
    scorer_config zero;
    zero.session_weight = zero.byte_rate_weight = zero.cpu_weight = zero.partition_weight = 0;
    auto r2 = run(idle, {"c1", std::string("orders")}, zero, {broker_id{"b9"}});
    for (const auto& k : r2.ranked)
      CHECK(std::isfinite(k.score));
    CHECK(all_finite(to_json(r2)));
  }
}

TEST_CASE("placement scorer: near-ties are spread across clients, deterministically per client", "[placement][scorer]") {
  std::vector<broker_load> idle{seen(report("b1")), seen(report("b2")), seen(report("b3"))};
  std::set<std::string> chosen;
  for (int i = 0; i < 30; ++i) {
    placement_request req{"client-" + std::to_string(i), std::nullopt};
    auto first = run(idle, req).best()->broker;
    CHECK(run(idle, req).best()->broker == first);
    chosen.insert(first.str());
  }
  CHECK(chosen.size() == 3);

  // Outside the band the score decides for everyone.
  std::vector<broker_load> apart{seen(report("b1", 0, 0, 0.2)), seen(report("b2", 0, 0, 0.1)), seen(report("b3", 0, 0, 0.3))};
  for (int i = 0; i < 10; ++i)
    CHECK(run(apart, {"client-" + std::to_string(i), std::nullopt}).best()->broker == broker_id{"b2"});
}

TEST_CASE("placement scorer: dead, draining and stale brokers are never recommended, and none left is no_eligible_broker",
          "[placement][scorer]") {
  auto dead = seen(report("b1"));
  dead.alive = false;
  auto draining = seen(report("b2"));
  draining.report.draining = true;
  auto stale = seen(report("b3"), now - 60'000);
  auto invalid = seen(report("b4"));
  invalid.report.process_cpu = 7;

  auto rec = run({dead, draining, stale, invalid});
  CHECK(rec.outcome == verdict::no_eligible_broker);
  CHECK(rec.best() == nullptr);
  REQUIRE(rec.excluded.size() == 4);
  CHECK(rec.excluded[0].reason == exclusion_reason::dead);
  CHECK(rec.excluded[1].reason == exclusion_reason::draining);
  CHECK(rec.excluded[2].reason == exclusion_reason::stale);
  CHECK(rec.excluded[3].reason == exclusion_reason::invalid_report);
  CHECK_THAT(rec.excluded[3].detail, Catch::Contains("process_cpu"));
  auto j = to_json(rec);
  CHECK(j["outcome"] == "no_eligible_broker");
  CHECK(j["excluded"][2]["reason"] == "stale");

  CHECK(run({}).outcome == verdict::no_eligible_broker);

  // One eligible broker among them is recommended, however loaded.
  auto rec2 = run({dead, draining, stale, seen(report("b5", 500, 50 * mib, 0.99))});
  CHECK(order(rec2) == std::vector<std::string>{"b5"});
}

TEST_CASE("placement scorer: with a topic, brokers owning more of its partitions are preferred", "[placement][scorer]") {
  std::vector<broker_load> equal{seen(report("b1", 10, 1 * mib, 0.3)), seen(report("b2", 10, 1 * mib, 0.3)),
                                 seen(report("b3", 10, 1 * mib, 0.3))};
  std::vector<broker_id> owners{broker_id{"b2"}, broker_id{"b1"}, broker_id{"b2"}, broker_id{"b2"}};
  auto rec = run(equal, {"c1", std::string("orders")}, {}, owners);
  CHECK(order(rec) == std::vector<std::string>{"b2", "b1", "b3"});
  CHECK(rec.topic_partitions == 4);
  CHECK(find(rec, "b2").owned_partitions == 3);
  CHECK(find(rec, "b2").terms.partitions == Approx(0.25));
  CHECK(find(rec, "b3").terms.partitions == 1.0);

  // It is a weight, not a veto: a much less loaded broker still wins.
  equal[2].report = report("b3", 0, 0, 0.05);
  CHECK(run(equal, {"c1", std::string("orders")}, {}, owners).best()->broker == broker_id{"b3"});

  // Without owners (unknown topic) or without a topic there is no ownership term.
  auto none = run(equal, {"c1", std::string("orders")});
  CHECK(find(none, "b1").terms.partitions == 0);
  CHECK(none.topic_partitions == 0);
}

TEST_CASE("placement scorer: a broker listed twice is ranked once, from its freshest entry", "[placement][scorer]") {
  auto rec = run({seen(report("b1", 90), now - 4000), seen(report("b1", 1), now), seen(report("b2", 50))});
  CHECK(order(rec) == std::vector<std::string>{"b1", "b2"});
  REQUIRE(rec.excluded.size() == 1);
  CHECK(rec.excluded[0].reason == exclusion_reason::duplicate_broker);
  CHECK(find(rec, "b1").terms.sessions == Approx(1.0 / 50));
}

TEST_CASE("placement scorer: an invalid request or config is refused with the field named", "[placement][scorer]") {
  std::vector<broker_load> one{seen(report("b1"))};
  auto no_client = recommend(one, now, {"", std::nullopt}, {});
  REQUIRE_FALSE(no_client.ok());
  CHECK(no_client.err().field == "clientId");
  auto bad_topic = recommend(one, now, {"c1", std::string("a/b")}, {});
  REQUIRE_FALSE(bad_topic.ok());
  CHECK(bad_topic.err().field == "topic");

  scorer_config cfg;
  cfg.byte_rate_floor = 0;
  CHECK(validate(cfg).err().field == "byte_rate_floor");
  cfg = {};
  cfg.session_weight = std::nan("");
  CHECK(validate(cfg).err().field == "session_weight");
  cfg = {};
  cfg.overload_cpu = 1.5;
  CHECK(validate(cfg).err().field == "overload_cpu");
  cfg = {};
  cfg.stale_after_heartbeats = 0;
  auto refused = recommend(one, now, {"c1", std::nullopt}, cfg);
  REQUIRE_FALSE(refused.ok());
  CHECK(to_string(refused.err()) == "stale_after_heartbeats: expected an integer in [1, 1000]");
  CHECK(validate(scorer_config{}).ok());
  CHECK(parse_cpu_source("machine") == cpu_source::machine);
  CHECK_FALSE(parse_cpu_source("gpu"));
}

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "placement/load_report.hpp"
#include "report_builder.hpp"

using namespace moonmq::placement;
using nlohmann::json;

namespace {

load_report sample() {
  auto r = test::report("b2", 5, 3000, 0.25);
  r.process_cpu = 0.1;
  r.draining = true;
  r.clients["c1"] = client_load{2, 100, 200.5};
  r.clients["c2"] = client_load{3, 0, 0};
  return r;
}

/// The error of parsing `j`; fails the test when it parses.
field_error parse_error(const json& j) {
  auto r = report_from_json(j);
  REQUIRE_FALSE(r.ok());
  return r.err();
}

}  // namespace

TEST_CASE("placement report: a report round-trips through JSON", "[placement][load_report]") {
  auto j = to_json(sample());
  auto back = report_from_json(json::parse(j.dump()));
  REQUIRE(back.ok());
  CHECK(back->broker == broker_id{"b2"});
  CHECK(back->active_sessions == 5);
  CHECK(back->bytes_in_per_sec == 1500);
  CHECK(back->bytes_in_total == 1'000'000);
  CHECK(back->process_cpu == 0.1);
  CHECK(back->machine_cpu == 0.25);
  CHECK(back->draining);
  REQUIRE(back->clients.size() == 2);
  CHECK(back->clients.at("c1").sessions == 2);
  CHECK(back->clients.at("c1").bytes_out_per_sec == 200.5);
  CHECK(to_json(*back) == j);
}

TEST_CASE("placement report: a missing or mistyped field is named in the error", "[placement][load_report]") {
  auto j = to_json(sample());
  j.erase("bytes_out_total");
  CHECK(parse_error(j).field == "bytes_out_total");
  CHECK(parse_error(j).message == "missing");

  j = to_json(sample());
  j["draining"] = "yes";
  CHECK(parse_error(j).field == "draining");

  j = to_json(sample());
  j["active_sessions"] = -1;
  CHECK(parse_error(j).field == "active_sessions");

  j = to_json(sample());
  j["report_time_ms"] = 1.5;
  CHECK(parse_error(j).field == "report_time_ms");

  j = to_json(sample());
  j["clients"] = json::object();
  CHECK(parse_error(j).field == "clients");

  CHECK(to_string(parse_error(json::array())) == "expected a JSON object (a session-load report)");
}

TEST_CASE("placement report: cpu must lie in [0, 1] and rates must be finite and non-negative", "[placement][load_report]") {
  auto j = to_json(sample());
  j["machine_cpu"] = 1.2;
  auto e = parse_error(j);
  CHECK(to_string(e) == "machine_cpu: expected a number in [0, 1]");

  j = to_json(sample());
  j["process_cpu"] = -0.1;
  CHECK(parse_error(j).field == "process_cpu");

  j = to_json(sample());
  j["bytes_in_per_sec"] = -1;
  CHECK(parse_error(j).field == "bytes_in_per_sec");

  j = to_json(sample());
  j["bytes_out_per_sec"] = 1e300;
  CHECK(parse_error(j).field == "bytes_out_per_sec");

  auto r = sample();
  r.bytes_in_per_sec = std::numeric_limits<double>::quiet_NaN();
  auto v = validate(r);
  REQUIRE_FALSE(v.ok());
  CHECK(v.err().field == "bytes_in_per_sec");
}

TEST_CASE("placement report: client rows are checked one by one and named by their index", "[placement][load_report]") {
  auto j = to_json(sample());
  j["clients"][1]["sessions"] = "3";
  CHECK(parse_error(j).field == "clients[1].sessions");

  j = to_json(sample());
  j["clients"][0]["client_id"] = "";
  CHECK(parse_error(j).field == "clients[0].client_id");

  j = to_json(sample());
  j["clients"][1]["client_id"] = "c1";
  auto dup = parse_error(j);
  CHECK(dup.field == "clients[1].client_id");
  CHECK(dup.message == "duplicate \"c1\"");

  j = to_json(sample());
  j["clients"][0] = 7;
  CHECK(parse_error(j).field == "clients[0]");
}

TEST_CASE("placement report: client sessions cannot add up to more than the active sessions", "[placement][load_report]") {
  auto j = to_json(sample());
  j["active_sessions"] = 4;  // c1 2 + c2 3 = 5
  auto e = parse_error(j);
  CHECK(e.field == "clients");
  CHECK_THAT(e.message, Catch::Contains("active_sessions (4)"));
}

TEST_CASE("placement report: the broker id follows the cluster's id rules", "[placement][load_report]") {
  auto j = to_json(sample());
  j["broker_id"] = "b 1";
  CHECK(parse_error(j).field == "broker_id");
  j["broker_id"] = 3;
  CHECK(parse_error(j).field == "broker_id");
}

TEST_CASE("placement report: unknown keys are ignored for newer senders", "[placement][load_report]") {
  auto j = to_json(sample());
  j["queue_depth"] = 12;
  CHECK(report_from_json(j).ok());
}

TEST_CASE("placement report: client ids are 1..256 bytes without control characters", "[placement][load_report]") {
  CHECK(valid_client_id("svc-billing/7"));
  CHECK(valid_client_id(std::string(256, 'c')));
  CHECK_FALSE(valid_client_id(std::string(257, 'c')));
  CHECK_FALSE(valid_client_id(""));
  CHECK_FALSE(valid_client_id("a\nb"));
}

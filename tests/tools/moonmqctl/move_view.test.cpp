// What `moonmqctl reassign verify` makes of the journal rows: only each
// partition's newest move counts (an old failure retried since is not a
// failure now), and a copy's rate and time left between two polls.

#include <catch2/catch.hpp>

#include "tools/common/move_view.hpp"

using namespace moonmq::tools;
using nlohmann::json;

TEST_CASE("only each partition's newest move is current", "[ctl][reassign]") {
  auto rows = json::parse(R"([
    {"move_id":"m1","topic":"orders","partition":0,"state":"failed","started_ms":100},
    {"move_id":"m2","topic":"orders","partition":1,"state":"done","started_ms":150},
    {"move_id":"m3","topic":"orders","partition":0,"state":"done","started_ms":200},
    {"move_id":"m4","topic":"audit","partition":0,"state":"copying","started_ms":50}])");
  auto current = current_moves(rows);
  REQUIRE(current.size() == 3);
  CHECK(current[0]["move_id"] == "m2");
  CHECK(current[1]["move_id"] == "m3");  // m1's failure was retried by m3
  CHECK(current[2]["move_id"] == "m4");
  // A row from the metadata log alone (no started_ms: its source did not
  // answer) is the current move, wherever the server lists it.
  rows.insert(rows.begin(), json::parse(R"({"move_id":"m5","topic":"orders","partition":1,"state":"copying"})"));
  current = current_moves(rows);
  REQUIRE(current.size() == 3);
  CHECK(current[0]["move_id"] == "m5");
  CHECK(current_moves(json::object()).empty());
}

TEST_CASE("a copy's rate comes from two polls, and its time left from the rate", "[ctl][reassign]") {
  move_rates rates;
  CHECK_FALSE(rates.sample("m1", 0, 1000));
  auto rate = rates.sample("m1", 10 * 1024 * 1024, 3000);
  REQUIRE(rate);
  CHECK(*rate == Approx(5.0 * 1024 * 1024));
  CHECK_FALSE(rates.sample("m1", 11 * 1024 * 1024, 3000));  // no time passed
  CHECK(eta_text(50 * 1024 * 1024, *rate) == "ETA 10s");
  CHECK(eta_text(400 * 1024 * 1024, *rate) == "ETA 1m20s");
  CHECK(eta_text(0, *rate).empty());
  CHECK(eta_text(100, 0).empty());
}

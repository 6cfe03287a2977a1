// An actor's error as the JSON error answer of CONTRACT §3
// (api/actor_answers.hpp): the status of its kind, its code and message,
// and the offsets a client or a move's source resumes from.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "api/actor_answers.hpp"

using namespace moonmq;
using nlohmann::json;

TEST_CASE("an error answer carries the offsets to resume from", "[transport]") {
  auto mismatch = transport::error_response(make_offset_mismatch(12, "log end is 12, not 14"));
  CHECK(mismatch.status == 409);
  CHECK(json::parse(mismatch.body)
        == json{{"error", "offset_mismatch"}, {"message", "log end is 12, not 14"}, {"log_end_offset", 12}});
  auto outside = json::parse(transport::error_response(make_out_of_range(9, 2, 5)).body);
  CHECK(outside["error"] == "offset_out_of_range");
  CHECK(outside["log_start_offset"] == 2);
  CHECK(outside["log_end_offset"] == 5);
  auto coded = transport::error_response(make_coded_error(fault::conflict, "owner_changed", "t/0 is owned by b3"));
  CHECK(coded.status == 409);
  CHECK(json::parse(coded.body) == json{{"error", "owner_changed"}, {"message", "t/0 is owned by b3"}});
}

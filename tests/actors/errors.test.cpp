// Errors name a kind, never a status (actors/errors.hpp): the one table
// from kinds to HTTP statuses, relayed peer statuses, and CAF's own errors.

#include <catch2/catch.hpp>

#include <caf/sec.hpp>

#include "actors/errors.hpp"

using namespace moonmq;

TEST_CASE("a coded error keeps its kind, code and message, and its kind alone gives the status", "[errors]") {
  const std::pair<fault, int> table[] = {{fault::invalid, 400},     {fault::not_found, 404},
                                         {fault::conflict, 409},    {fault::misdirected, 421},
                                         {fault::unavailable, 503}, {fault::timeout, 504},
                                         {fault::internal, 500}};
  for (const auto& [kind, status] : table) {
    auto e = make_coded_error(kind, "move_state_changed", "the move moved on");
    CHECK(fault_of(e) == kind);
    CHECK(http_status_of(e) == status);
    CHECK(error_code_of(e) == "move_state_changed");
    CHECK(message_of(e) == "the move moved on");
    // A peer's answer relayed as an error keeps its kind.
    CHECK(fault_of_status(status) == kind);
  }
  CHECK(fault_of_status(0) == fault::unavailable);  // no answer
  CHECK(fault_of_status(418) == fault::internal);
}

TEST_CASE("a peer's answer relayed as an error keeps its status, code and message", "[errors]") {
  for (int status : {401, 405, 409, 413, 503}) {
    auto e = make_relayed_error(status, "unauthorized", "proposal via the leader: no token");
    CHECK(http_status_of(e) == status);
    CHECK(error_code_of(e) == "unauthorized");
    CHECK(message_of(e) == "proposal via the leader: no token");
    CHECK(fault_of(e) == fault_of_status(status));
  }
  CHECK(http_status_of(make_relayed_error(0, "peer_unreachable", "no answer")) == 503);
  CHECK(http_status_of(make_relayed_error(200, "forward_failed", "no index in the answer")) == 500);
}

TEST_CASE("moonmq codes and CAF's errors have kinds too", "[errors]") {
  CHECK(fault_of(make_error(errc::unknown_topic, "t")) == fault::not_found);
  CHECK(fault_of(make_error(errc::partition_moved, "sealed")) == fault::unavailable);
  CHECK(fault_of(make_out_of_range(9, 0, 5)) == fault::invalid);
  CHECK(fault_of(make_error(errc::invalid_producer_epoch, "old")) == fault::conflict);
  CHECK(http_status_of(make_error(errc::storage_error, "disk")) == 500);
  CHECK(fault_of(caf::make_error(caf::sec::request_timeout)) == fault::timeout);
  CHECK(http_status_of(caf::make_error(caf::sec::request_timeout)) == 504);
  CHECK(fault_of(caf::make_error(caf::sec::request_receiver_down)) == fault::unavailable);
}

TEST_CASE("an offset mismatch is a conflict that carries the destination's log end", "[errors]") {
  auto e = make_offset_mismatch(12, "log end is 12, the source's is 14");
  CHECK(fault_of(e) == fault::conflict);
  CHECK(http_status_of(e) == 409);
  CHECK(error_code_of(e) == "offset_mismatch");
  CHECK(message_of(e) == "log end is 12, the source's is 14");
  int64_t end = 0;
  REQUIRE(mismatch_log_end(e, end));
  CHECK(end == 12);
  CHECK_FALSE(mismatch_log_end(make_out_of_range(9, 0, 5), end));
}

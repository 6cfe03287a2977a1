#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include "actors/errors.hpp"
#include "kafka/errors.hpp"
#include "api/kafka_handlers.hpp"

using namespace moonmq;
namespace ec = moonmq::kafka::error_code;

TEST_CASE("actor errors map to the Kafka codes clients retry or report", "[transport][kafka]") {
  using transport::kafka_code_of;
  CHECK(kafka_code_of(caf::make_error(caf::sec::request_timeout)) == ec::request_timed_out);
  // A partition gone from this broker before it answered: nothing was
  // acknowledged, and the client retries at the leader it looks up again.
  CHECK(kafka_code_of(caf::make_error(caf::sec::request_receiver_down)) == ec::not_leader_or_follower);
  CHECK(kafka_code_of(make_error(errc::partition_moved, "moving")) == ec::not_leader_or_follower);
  CHECK(kafka_code_of(make_error(errc::unknown_topic, "t")) == ec::unknown_topic_or_partition);
  CHECK(kafka_code_of(make_error(errc::unknown_partition, "t/9")) == ec::unknown_topic_or_partition);
  CHECK(kafka_code_of(make_error(errc::partition_offline, "offline")) == 56);
  CHECK(kafka_code_of(make_error(errc::storage_error, "eio")) == 56);
  CHECK(kafka_code_of(make_error(errc::not_ready, "opening")) == ec::leader_not_available);
  CHECK(kafka_code_of(make_error(errc::offset_out_of_range, "past")) == ec::offset_out_of_range);
  CHECK(kafka_code_of(caf::make_error(caf::sec::unexpected_message)) == ec::unknown_server_error);
}

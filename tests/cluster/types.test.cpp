#include <catch2/catch.hpp>

#include <string>

#include "cluster/types.hpp"

using namespace moonmq::cluster;

TEST_CASE("topic names follow [A-Za-z0-9._-]{1,249} without ..", "[cluster]") {
  CHECK(valid_topic("orders"));
  CHECK(valid_topic("a.b_c-D9"));
  CHECK(valid_topic(std::string(249, 'x')));
  CHECK_FALSE(valid_topic(std::string(250, 'x')));
  CHECK_FALSE(valid_topic(""));
  CHECK_FALSE(valid_topic("a..b"));
  CHECK_FALSE(valid_topic("a/b"));
  CHECK_FALSE(valid_topic("with space"));
}

TEST_CASE("internal topics start with two underscores", "[cluster]") {
  CHECK(is_internal_topic("__consumer_offsets"));
  CHECK_FALSE(is_internal_topic("_single"));
  CHECK_FALSE(is_internal_topic("orders__"));
}

TEST_CASE("broker ids are 1..64 characters of [A-Za-z0-9._-]", "[cluster]") {
  CHECK(valid_broker_id("b1"));
  CHECK(valid_broker_id(std::string(64, 'b')));
  CHECK_FALSE(valid_broker_id(std::string(65, 'b')));
  CHECK_FALSE(valid_broker_id(""));
  CHECK_FALSE(valid_broker_id("b 1"));
}

TEST_CASE("error codes have stable names", "[cluster]") {
  CHECK(std::string{to_string(errc::stale_epoch)} == "stale_epoch");
  CHECK(std::string{to_string(errc::corrupt_state)} == "corrupt_state");
}

TEST_CASE("topic partitions order by topic then partition", "[cluster]") {
  CHECK(topic_partition{"a", 9} < topic_partition{"b", 0});
  CHECK(topic_partition{"a", 1} < topic_partition{"a", 2});
  CHECK(to_string(topic_partition{"orders", 3}) == "orders/3");
}

#include <catch2/catch.hpp>

#include "dataplane/partitioner.hpp"
#include "dataplane/topic_name.hpp"

using namespace moonmq::dataplane;

TEST_CASE("murmur2 matches Kafka's Utils.murmur2 test vectors", "[partitioner]") {
  CHECK(murmur2("21") == -973932308);
  CHECK(murmur2("foobar") == -790332482);
  CHECK(murmur2("a-little-bit-long-string") == -985981536);
  CHECK(murmur2("a-little-bit-longer-string") == -1486304829);
  CHECK(murmur2("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971);
  CHECK(murmur2("abc") == 479470107);
}

TEST_CASE("keys map to a stable partition inside the range", "[partitioner]") {
  for (int n : {1, 3, 7, 100})
    for (const char* key : {"", "a", "order-17", "\xff\xfe"}) {
      auto p = partition_for_key(key, n);
      CHECK(p >= 0);
      CHECK(p < n);
      CHECK(p == partition_for_key(key, n));
    }
}

TEST_CASE("topic names follow the documented rules", "[topic]") {
  CHECK(check_topic_name("orders").empty());
  CHECK(check_topic_name("a.b_c-D9").empty());
  CHECK(check_topic_name(std::string(249, 'x')).empty());
  CHECK_FALSE(check_topic_name("").empty());
  CHECK_FALSE(check_topic_name(std::string(250, 'x')).empty());
  CHECK_FALSE(check_topic_name("../x").empty());
  CHECK_FALSE(check_topic_name("..").empty());
  CHECK_FALSE(check_topic_name(".").empty());
  CHECK_FALSE(check_topic_name("a/b").empty());
  CHECK_FALSE(check_topic_name("a b").empty());
  CHECK(is_internal_topic("__consumer_offsets"));
  CHECK_FALSE(is_internal_topic("_x"));
}

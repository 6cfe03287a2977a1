#include "storage/segment.hpp"

#include <catch2/catch.hpp>

using namespace moonmq::storage;

TEST_CASE("segment file names are 20-digit base offsets", "[storage][segment]") {
  CHECK(segment_log_name(offset{42}) == "00000000000000000042.log");
  CHECK(segment_index_name(offset{0}) == "00000000000000000000.index");
  CHECK(parse_segment_log_name("00000000000000000042.log") == offset{42});
  CHECK(parse_segment_log_name("09223372036854775807.log") == offset{INT64_MAX});
  CHECK_FALSE(parse_segment_log_name("99999999999999999999.log").has_value());
  CHECK_FALSE(parse_segment_log_name("0000000000000000042.log").has_value());
  CHECK_FALSE(parse_segment_log_name("00000000000000000042.index").has_value());
  CHECK_FALSE(parse_segment_log_name("0000000000000000004x.log").has_value());
}

TEST_CASE("index entries round trip and torn indexes are detected", "[storage][segment]") {
  std::vector<index_entry> entries = {{0, 0}, {10, 4100}, {25, 8300}, {70000, 123456}};
  auto bytes = encode_index(entries);
  REQUIRE(bytes.size() == 32);
  auto back = decode_index(bytes, 200000);
  REQUIRE(back.has_value());
  REQUIRE(back->size() == 4);
  CHECK((*back)[3].relative_offset == 70000);
  CHECK((*back)[3].position == 123456);

  CHECK_FALSE(decode_index(bytes.substr(0, 31), 200000).has_value());  // torn entry
  CHECK_FALSE(decode_index(bytes, 123456).has_value());                // position past log
  auto swapped = encode_index({{10, 4100}, {0, 0}});
  CHECK_FALSE(decode_index(swapped, 200000).has_value());              // not increasing
  auto dup = encode_index({{5, 100}, {5, 200}});
  CHECK_FALSE(decode_index(dup, 200000).has_value());
  CHECK(decode_index("", 0).has_value());
}

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "groups/types.hpp"

using namespace moonmq::groups;

TEST_CASE("group ids of letters, digits, dot, underscore and dash are valid", "[groups]") {
  CHECK(is_valid_group_id("g"));
  CHECK(is_valid_group_id("orders-consumers_v2.eu"));
  CHECK(is_valid_group_id("..."));
  CHECK(is_valid_group_id(std::string(249, 'a')));
}

TEST_CASE("invalid group ids are refused with invalid_group_id", "[groups]") {
  for (const std::string& bad :
       std::vector<std::string>{"", ".", "..", "a/b", "a b", "ü", "g\n", "../etc", std::string(250, 'a')}) {
    INFO("id: " << bad);
    auto r = validate_group_id(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::invalid_group_id);
    CHECK_FALSE(is_valid_group_id(bad));
  }
  auto r = validate_group_id(std::string(250, 'a'));
  CHECK(r.err().message.find("at most 249") != std::string::npos);
}

TEST_CASE("error codes map to stable names and Kafka codes", "[groups]") {
  CHECK(std::string(to_string(errc::unknown_member)) == "unknown_member");
  CHECK(std::string(to_string(errc::illegal_generation)) == "illegal_generation");
  CHECK(kafka_error_code(errc::unknown_member) == 25);
  CHECK(kafka_error_code(errc::illegal_generation) == 22);
}

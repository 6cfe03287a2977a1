// util/names.hpp: the one character set of names that travel in paths,
// file names and metadata-log entries, and the rack rule the config loader
// and the planner's model files share.

#include <catch2/catch.hpp>

#include <string>

#include "util/names.hpp"

using moonmq::util::is_name;
using moonmq::util::name_chars_only;
using moonmq::util::valid_rack_name;

TEST_CASE("names take letters, digits, '.', '_' and '-' only", "[util][names]") {
  CHECK(name_chars_only(""));
  CHECK(name_chars_only("b1"));
  CHECK(name_chars_only("Rack_a.1-Z"));
  for (const char* bad : {"a b", "a/b", "a:b", "é", "a\n", "a\\b", "a+b", "%41"})
    CHECK_FALSE(name_chars_only(bad));
  // A NUL inside the view is not a name character either.
  CHECK_FALSE(name_chars_only(std::string_view("a\0b", 3)));
}

TEST_CASE("a name's length is checked against its kind's bounds", "[util][names]") {
  CHECK_FALSE(is_name("", 1, 64));
  CHECK(is_name("x", 1, 64));
  CHECK(is_name(std::string(64, 'x'), 1, 64));
  CHECK_FALSE(is_name(std::string(65, 'x'), 1, 64));
  CHECK_FALSE(is_name("a b", 1, 64));
}

TEST_CASE("a rack is none or at most 64 name characters", "[util][names]") {
  CHECK(valid_rack_name(""));
  CHECK(valid_rack_name("eu-west-1a"));
  CHECK(valid_rack_name(std::string(64, 'r')));
  CHECK_FALSE(valid_rack_name(std::string(65, 'r')));
  CHECK_FALSE(valid_rack_name("rack 1"));
  CHECK_FALSE(valid_rack_name("rack/1"));
}

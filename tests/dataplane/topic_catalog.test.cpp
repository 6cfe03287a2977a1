#include <catch2/catch.hpp>

#include <fstream>

#include "dataplane/topic_catalog.hpp"
#include "tests/support/process.hpp"

using namespace moonmq::dataplane;

TEST_CASE("a missing catalogue is empty, saved entries load back", "[catalog]") {
  moonmq::test::temp_dir dir;
  std::string err;
  auto cat = topic_catalog::load(dir.path(), err);
  REQUIRE(cat);
  CHECK(cat->topics().empty());
  topic_entry e{"orders", 3, {}};
  e.config.retention_bytes = 1000;
  cat->put(e);
  REQUIRE(cat->save().empty());
  auto again = topic_catalog::load(dir.path(), err);
  REQUIRE(again);
  REQUIRE(again->find("orders"));
  CHECK(again->find("orders")->partitions == 3);
  CHECK(again->find("orders")->config.retention_bytes == 1000);
  CHECK(again->find("orders")->config.retention_ms == -1);
}

TEST_CASE("a malformed catalogue is refused with the file named", "[catalog]") {
  moonmq::test::temp_dir dir;
  std::ofstream{dir.path() + "/topics.json"} << "{\"topics\": [ {\"name\": \"x\", \"partit";
  std::string err;
  CHECK_FALSE(topic_catalog::load(dir.path(), err));
  CHECK(err.find(dir.path() + "/topics.json") == 0);
  std::ofstream{dir.path() + "/topics.json", std::ios::trunc} << R"({"topics":[{"name":"../x","partitions":1}]})";
  CHECK_FALSE(topic_catalog::load(dir.path(), err));
}

TEST_CASE("topic config accepts Kafka names as numbers or numeric strings", "[catalog]") {
  topic_config c;
  CHECK(parse_topic_config(R"({"segment.bytes": 1048576, "retention.ms": "60000"})", c).empty());
  CHECK(c.segment_bytes == 1048576);
  CHECK(c.retention_ms == 60000);
  CHECK(c.retention_bytes == -1);
  CHECK(parse_topic_config(R"({"segment.bytes": 10})", c).find("config.segment.bytes") == 0);
  CHECK(parse_topic_config(R"({"retention.ms": "soon"})", c).find("config.retention.ms") == 0);
  CHECK(parse_topic_config(R"({"cleanup.policy": "compact"})", c).find("config.cleanup.policy") == 0);
}

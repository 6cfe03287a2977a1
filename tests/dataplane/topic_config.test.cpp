// Topic config changes and descriptions with Kafka's names
// (dataplane/topic_config.hpp): what AlterConfigs, DescribeConfigs,
// CreateTopics' configs and PATCH /v1/topics/{t}/config rest on.

#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "dataplane/topic_config.hpp"

using namespace moonmq::dataplane;
using nlohmann::json;

namespace {

const topic_config_entry& row(const std::vector<topic_config_entry>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name)
      return r;
  FAIL("no row " << name);
  return rows.front();
}

}  // namespace

TEST_CASE("a merge keeps other keys, null returns a key to its default, values are stored as integers",
          "[dataplane][topic_config]") {
  std::string out;
  REQUIRE(change_topic_config(R"({"retention.ms":1000})", {{"retention.bytes", std::string("4096")}}, false, out)
            .empty());
  CHECK(json::parse(out) == json::parse(R"({"retention.ms":1000,"retention.bytes":4096})"));
  REQUIRE(change_topic_config(out, {{"retention.ms", std::nullopt}}, false, out).empty());
  CHECK(json::parse(out) == json::parse(R"({"retention.bytes":4096})"));
  REQUIRE(change_topic_config(out, {{"retention.bytes", std::nullopt}}, false, out).empty());
  CHECK(out.empty());
}

TEST_CASE("a replace (Kafka AlterConfigs) returns every key it leaves out to its default",
          "[dataplane][topic_config]") {
  std::string out;
  REQUIRE(change_topic_config(R"({"retention.ms":1000,"segment.bytes":1048576})",
                              {{"retention.bytes", std::string("-1")}}, true, out)
            .empty());
  CHECK(json::parse(out) == json::parse(R"({"retention.bytes":-1})"));
  // cleanup.policy=delete is what every topic has: accepted, nothing stored.
  REQUIRE(change_topic_config(out, {{"cleanup.policy", std::string("delete")}}, true, out).empty());
  CHECK(out.empty());
}

TEST_CASE("a bad change names its key and changes nothing", "[dataplane][topic_config]") {
  std::string out = "untouched";
  auto why = change_topic_config("", {{"retention.ms", std::string("soon")}}, false, out);
  CHECK(why == "config.retention.ms: expected an integer, got 'soon'");
  why = change_topic_config("", {{"min.insync.replicas", std::string("2")}}, false, out);
  CHECK(why.find("config.min.insync.replicas: unknown topic config") == 0);
  why = change_topic_config("", {{"cleanup.policy", std::string("compact")}}, false, out);
  CHECK(why.find("config.cleanup.policy: only \"delete\"") == 0);
  why = change_topic_config("", {{"segment.bytes", std::string("100")}}, false, out);
  CHECK(why == "config.segment.bytes: must be at least 1024");
  why = change_topic_config("", {{"retention.ms", std::string("1")}, {"retention.ms", std::string("2")}}, false, out);
  CHECK(why == "config.retention.ms: given twice");
  CHECK(out == "untouched");
}

TEST_CASE("a description lists every known key, telling set values from defaults", "[dataplane][topic_config]") {
  auto rows = describe_topic_config(R"({"retention.ms":"60000"})");
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].name == "cleanup.policy");
  CHECK(row(rows, "retention.ms").value == "60000");
  CHECK_FALSE(row(rows, "retention.ms").is_default);
  CHECK(row(rows, "retention.bytes").value == "-1");
  CHECK(row(rows, "retention.bytes").is_default);
  CHECK(row(rows, "segment.bytes").value == std::to_string(1LL << 30));
  CHECK(row(rows, "cleanup.policy").read_only);
  CHECK_FALSE(row(rows, "retention.ms").read_only);
  // Unreadable text reads as the defaults.
  for (const auto& r : describe_topic_config("{not json"))
    CHECK(r.is_default);
}

TEST_CASE("a standalone broker's whole config reads back as the keys that differ from the defaults",
          "[dataplane][topic_config]") {
  topic_config c;
  CHECK(topic_config_overrides(c).empty());
  c.retention_ms = 5000;
  CHECK(json::parse(topic_config_overrides(c)) == json::parse(R"({"retention.ms":5000})"));
}

TEST_CASE("a merge patch for the metadata log holds integers and nulls, checked key by key",
          "[dataplane][topic_config]") {
  std::string patch;
  REQUIRE(topic_config_patch({{"retention.ms", std::string("60000")}, {"retention.bytes", std::nullopt},
                              {"cleanup.policy", std::string("delete")}},
                             patch)
            .empty());
  CHECK(json::parse(patch) == json::parse(R"({"retention.ms":60000,"retention.bytes":null})"));
  CHECK(topic_config_patch({{"segment.bytes", std::string("1")}}, patch) == "config.segment.bytes: must be at least 1024");
  CHECK(is_topic_config_key("retention.ms"));
  CHECK(is_topic_config_key("cleanup.policy"));
  CHECK_FALSE(is_topic_config_key("min.insync.replicas"));
}

TEST_CASE("a config read leniently keeps every valid known key and names the rest", "[dataplane][topic_config]") {
  topic_config c;
  auto skipped = read_topic_config_lenient(R"({"retention.ms":"5000","future.key":1,"segment.bytes":"big"})", c);
  CHECK(skipped == "future.key, segment.bytes");
  CHECK(c.retention_ms == 5000);
  CHECK(c.segment_bytes == topic_config{}.segment_bytes);
  CHECK(read_topic_config_lenient("", c).empty());
  CHECK(c.retention_ms == -1);
  CHECK_FALSE(read_topic_config_lenient("[1]", c).empty());
}

TEST_CASE("the cluster's topic defaults: read from the dynamic settings, checked by range, and described as the "
          "cluster's",
          "[dataplane][topic_config]") {
  auto d = topic_defaults_of(std::string(R"({"LogRetentionMs":60000,"LogSegmentBytes":2048,"NumPartitions":3})"));
  CHECK(d.values.retention_ms == 60000);
  CHECK(d.values.segment_bytes == 2048);
  CHECK(d.values.retention_bytes == -1);  // built in
  CHECK(d.cluster == std::set<std::string>{"retention.ms", "segment.bytes"});
  // Unreadable or out of range: skipped (built in), the rest read.
  auto bad = topic_defaults_of(std::string(R"({"LogRetentionMs":"soon","LogSegmentBytes":12,"LogRetentionBytes":5})"));
  CHECK(bad.values.retention_ms == -1);
  CHECK(bad.values.segment_bytes == topic_config{}.segment_bytes);
  CHECK(bad.values.retention_bytes == 5);
  CHECK(bad.cluster == std::set<std::string>{"retention.bytes"});
  CHECK(topic_defaults_of(std::string("[1]")).cluster.empty());
  CHECK(topic_defaults_of(std::string("")).cluster.empty());

  const auto& keys = topic_default_keys();
  REQUIRE(keys.size() == 3);
  CHECK(std::string(keys[0].broker) == "log.segment.bytes");
  CHECK(check_topic_default(keys[0], json(1024), "LogSegmentBytes").empty());
  CHECK(check_topic_default(keys[0], json(1023), "LogSegmentBytes") == "LogSegmentBytes: must be at least 1024");
  CHECK(check_topic_default(keys[0], json(int64_t{1} << 31), "x") == "x: must be below 2 GiB");
  CHECK(check_topic_default(keys[2], json("60000"), "LogRetentionMs") == "LogRetentionMs: expected an integer");
  CHECK(check_topic_default(keys[1], json(-2), "config.log.retention.bytes")
        == "config.log.retention.bytes: must be at least -1");

  // A description: the topic's key, then the cluster's default, then built in.
  auto rows = describe_topic_config(R"({"retention.ms":5})", d);
  CHECK(row(rows, "retention.ms").value == "5");
  CHECK_FALSE(row(rows, "retention.ms").is_default);
  CHECK_FALSE(row(rows, "retention.ms").cluster_default);  // set on the topic
  CHECK(row(rows, "segment.bytes").value == "2048");
  CHECK(row(rows, "segment.bytes").is_default);
  CHECK(row(rows, "segment.bytes").cluster_default);
  CHECK(row(rows, "retention.bytes").value == "-1");
  CHECK_FALSE(row(rows, "retention.bytes").cluster_default);

  // A config read over the defaults keeps the keys it does not set.
  topic_config c;
  CHECK(read_topic_config_lenient(R"({"retention.ms":7})", c, d.values).empty());
  CHECK(c.retention_ms == 7);
  CHECK(c.segment_bytes == 2048);
  CHECK(read_topic_config_lenient("", c, d.values).empty());
  CHECK(c.retention_ms == 60000);
}

// Golden bytes hand-computed from the Kafka protocol guide and message
// schemas (ApiVersionsRequest/Response.json, MetadataRequest/Response.json):
// ApiVersions v0 and v3 (flexible body, header v2 request, header v0
// response per KIP-511) and Metadata v1.
#include <catch2/catch.hpp>

#include "kafka/codec.hpp"
#include "samples.hpp"

using namespace moonmq::kafka;
using moonmq::kafka::test::hex;
using moonmq::kafka::test::unhex;

namespace {
api_versions_response two_entries() {
  api_versions_response r;
  r.api_keys = {{18, 0, 3}, {3, 0, 4}};
  return r;
}
}  // namespace

TEST_CASE("kafka golden: ApiVersions v0 request and response", "[kafka][golden]") {
  // size 14 | api_key 18 | version 0 | correlation 1 | client_id "kcat" | empty body
  const auto wire = unhex("0000000e 0012 0000 00000001 0004 6b636174");
  request_header h;
  h.api_version = 0;
  h.correlation_id = 1;
  h.client_id = "kcat";
  CHECK(hex(encode_request(h, api_versions_request{}).value()) == hex(wire));
  auto req = decode_request(wire.substr(4));
  REQUIRE(req.ok());
  CHECK(std::holds_alternative<api_versions_request>(req->body));

  // size 22 | correlation 7 | error 0 | [2] (18,0,3) (3,0,4); no throttle in v0
  const auto resp = unhex("00000016 00000007 0000 00000002 0012 0000 0003 0003 0000 0004");
  CHECK(hex(encode_response(7, 0, two_entries()).value()) == hex(resp));
  auto back = decode_body<api_versions_response>(resp.substr(8), 0).value();
  REQUIRE(back.api_keys.size() == 2);
  CHECK(back.api_keys[1].api == 3);
  CHECK(back.api_keys[1].max_version == 4);
}

TEST_CASE("kafka golden: ApiVersions v1 adds throttle_time_ms", "[kafka][golden]") {
  const auto resp =
      unhex("0000001a 00000007 0000 00000002 0012 0000 0003 0003 0000 0004 00000000");
  CHECK(hex(encode_response(7, 1, two_entries()).value()) == hex(resp));
}

TEST_CASE("kafka golden: ApiVersions v3 (flexible) request and response", "[kafka][golden]") {
  // What librdkafka 2.0.2 sends first: header v2 (client_id is still a
  // classic nullable string, then an empty tag section), compact strings.
  // size 36 | 18 | 3 | corr 1 | "rdkafka" | tags 0 | "librdkafka" | "2.0.2" | tags 0
  const auto wire = unhex(
      "00000024 0012 0003 00000001 0007 72646b61666b61 00"
      " 0b 6c 69 62 72 64 6b 61 66 6b 61 06 322e302e32 00");
  CHECK(wire.size() == 4 + 36);
  request_header h;
  h.api_version = 3;
  h.correlation_id = 1;
  h.client_id = "rdkafka";
  api_versions_request body;
  body.client_software_name = "librdkafka";
  body.client_software_version = "2.0.2";
  CHECK(hex(encode_request(h, body).value()) == hex(wire));
  auto req = decode_request(wire.substr(4));
  REQUIRE(req.ok());
  const auto& got = std::get<api_versions_request>(req->body);
  CHECK(got.client_software_name == "librdkafka");
  CHECK(got.client_software_version == "2.0.2");

  // Response header v0 (no tag byte, KIP-511) | error 0 | compact array N+1=3
  // of (key, min, max, tags 0) | throttle 0 | tags 0
  const auto resp = unhex(
      "0000001a 00000001 0000 03 0012 0000 0003 00 0003 0000 0004 00 00000000 00");
  CHECK(hex(encode_response(1, 3, two_entries()).value()) == hex(resp));
  auto back = decode_body<api_versions_response>(resp.substr(8), 3).value();
  REQUIRE(back.api_keys.size() == 2);
  CHECK(back.api_keys[0].api == 18);
}

TEST_CASE("kafka golden: ApiVersions v3 request with unknown tagged fields still decodes",
          "[kafka][golden]") {
  const auto body = unhex("02 61 02 62 01 05 02 abcd");
  auto got = decode_body<api_versions_request>(body, 3);
  REQUIRE(got.ok());
  CHECK(got->client_software_name == "a");
}

TEST_CASE("kafka golden: Metadata v1 request and response", "[kafka][golden]") {
  // size 26 | api 3 | v1 | corr 2 | "kcat" | topics [1] "orders"
  const auto wire = unhex("0000001a 0003 0001 00000002 0004 6b636174 00000001 0006 6f7264657273");
  request_header h;
  h.api_version = 1;
  h.correlation_id = 2;
  h.client_id = "kcat";
  metadata_request mreq;
  mreq.topics = std::vector<std::string>{"orders"};
  CHECK(hex(encode_request(h, mreq).value()) == hex(wire));
  auto req = decode_request(wire.substr(4));
  REQUIRE(req.ok());
  const auto& topics = std::get<metadata_request>(req->body).topics;
  REQUIRE(topics);
  CHECK(*topics == std::vector<std::string>{"orders"});

  // All topics in v1 is a null array.
  const auto all = unhex("00000012 0003 0001 00000002 0004 6b636174 ffffffff");
  CHECK(hex(encode_request(h, metadata_request{}).value()) == hex(all));

  metadata_response m;
  m.brokers = {{1, "localhost", 9092, std::nullopt}};
  m.controller_id = 1;
  m.topics = {{0, "orders", false, {{0, 0, 1, {1}, {1}}}}};
  const auto resp = unhex(
      "0000004e 00000002"                               // size 78, correlation 2
      " 00000001 00000001 0009 6c6f63616c686f7374"      // brokers [1]: node 1 "localhost"
      " 00002384 ffff"                                  // port 9092, rack null
      " 00000001"                                       // controller_id 1
      " 00000001 0000 0006 6f7264657273 00"             // topics [1]: error 0 "orders" internal false
      " 00000001 0000 00000000 00000001"                // partitions [1]: error 0, index 0, leader 1
      " 00000001 00000001 00000001 00000001");          // replicas [1], isr [1]
  CHECK(hex(encode_response(2, 1, m).value()) == hex(resp));
  auto back = decode_body<metadata_response>(resp.substr(8), 1).value();
  REQUIRE(back.brokers.size() == 1);
  CHECK(back.brokers[0].host == "localhost");
  CHECK(back.brokers[0].port == 9092);
  CHECK_FALSE(back.brokers[0].rack);
  CHECK(back.topics[0].partitions[0].leader_id == 1);
}

TEST_CASE("kafka golden: DeleteTopics v1 request and response", "[kafka][golden]") {
  // size 30 | api 20 | v1 | corr 7 | "kcat" | topic_names [1] "orders" | timeout 5000
  const auto wire = unhex("0000001e 0014 0001 00000007 0004 6b636174 00000001 0006 6f7264657273 00001388");
  request_header h;
  h.api_key = 20;
  h.api_version = 1;
  h.correlation_id = 7;
  h.client_id = "kcat";
  delete_topics_request dreq;
  dreq.topic_names = {"orders"};
  dreq.timeout_ms = 5000;
  CHECK(hex(encode_request(h, dreq).value()) == hex(wire));
  auto req = decode_request(wire.substr(4));
  REQUIRE(req.ok());
  CHECK(std::get<delete_topics_request>(req->body).topic_names == std::vector<std::string>{"orders"});
  CHECK(std::get<delete_topics_request>(req->body).timeout_ms == 5000);

  // v0 has no throttle_time_ms; v1 puts it first.
  delete_topics_response d;
  d.responses = {{"orders", error_code::unknown_topic_or_partition}};
  const auto v1 = unhex("00000016 00000007 00000000 00000001 0006 6f7264657273 0003");
  CHECK(hex(encode_response(7, 1, d).value()) == hex(v1));
  const auto v0 = unhex("00000012 00000007 00000001 0006 6f7264657273 0003");
  CHECK(hex(encode_response(7, 0, d).value()) == hex(v0));
  auto back = decode_body<delete_topics_response>(v1.substr(8), 1).value();
  REQUIRE(back.responses.size() == 1);
  CHECK(back.responses[0].error_code == error_code::unknown_topic_or_partition);
}

TEST_CASE("kafka golden: DescribeGroups v3 request and v4 response", "[kafka][golden]") {
  // size 22 | api 15 | v3 | corr 9 | "kcat" | groups [1] "g" | include_authorized_operations 1
  const auto wire = unhex("00000016 000f 0003 00000009 0004 6b636174 00000001 0001 67 01");
  request_header h;
  h.api_key = 15;
  h.api_version = 3;
  h.correlation_id = 9;
  h.client_id = "kcat";
  describe_groups_request q;
  q.groups = {"g"};
  q.include_authorized_operations = true;
  CHECK(hex(encode_request(h, q).value()) == hex(wire));
  auto req = decode_request(wire.substr(4));
  REQUIRE(req.ok());
  CHECK(std::get<describe_groups_request>(req->body).groups == std::vector<std::string>{"g"});

  // throttle 0 | groups [1]: error 0, "g", "Stable", "consumer", "range",
  // members [1]: "m", instance null, "c", "/127.0.0.1", metadata 01,
  // assignment 02 | authorized_operations INT32_MIN (not asked for)
  describe_groups_response r;
  described_group g;
  g.group_id = "g";
  g.group_state = "Stable";
  g.protocol_type = "consumer";
  g.protocol_data = "range";
  g.members = {{"m", std::nullopt, "c", "/127.0.0.1", std::string("\x01"), std::string("\x02")}};
  r.groups = {g};
  const auto v4 = unhex(
    "00000050 00000007 00000000 00000001 0000 0001 67 0006 537461626c65 0008 636f6e73756d6572 0005 72616e6765 "
    "00000001 0001 6d ffff 0001 63 000a 2f3132372e302e302e31 00000001 01 00000001 02 80000000");
  CHECK(hex(encode_response(7, 4, r).value()) == hex(v4));
  auto back = decode_body<describe_groups_response>(v4.substr(8), 4).value();
  REQUIRE(back.groups.size() == 1);
  CHECK(back.groups[0].members[0].client_host == "/127.0.0.1");
  CHECK(back.groups[0].members[0].member_assignment == std::string("\x02"));
}

TEST_CASE("kafka golden: ListGroups v2 request and v0, v1 responses", "[kafka][golden]") {
  const auto wire = unhex("0000000e 0010 0002 00000003 0004 6b636174");
  request_header h;
  h.api_key = 16;
  h.api_version = 2;
  h.correlation_id = 3;
  h.client_id = "kcat";
  CHECK(hex(encode_request(h, list_groups_request{}).value()) == hex(wire));
  auto req = decode_request(wire.substr(4));
  REQUIRE(req.ok());
  CHECK(std::holds_alternative<list_groups_request>(req->body));

  list_groups_response r;
  r.groups = {{"g", "consumer"}};
  const auto v1 = unhex("0000001b 00000005 00000000 0000 00000001 0001 67 0008 636f6e73756d6572");
  CHECK(hex(encode_response(5, 1, r).value()) == hex(v1));
  const auto v0 = unhex("00000017 00000005 0000 00000001 0001 67 0008 636f6e73756d6572");
  CHECK(hex(encode_response(5, 0, r).value()) == hex(v0));
}

TEST_CASE("kafka golden: CreatePartitions v1 request as kafkajs sends it, and its v0 response",
          "[kafka][golden]") {
  // kafkajs 2.2.4 createPartitions({topicPartitions:[{topic:"orders",count:6}]}):
  // assignments default to an empty (not null) array, timeout 5000.
  const auto wire = unhex("00000028 0025 0001 00000007 0007 6b61666b616a73"
                          "00000001 0006 6f7264657273 00000006 00000000"
                          "00001388 00");
  auto req = decode_request(wire.substr(4));
  REQUIRE(req.ok());
  const auto& body = std::get<create_partitions_request>(req->body);
  REQUIRE(body.topics.size() == 1);
  CHECK(body.topics[0].name == "orders");
  CHECK(body.topics[0].count == 6);
  REQUIRE(body.topics[0].assignments);
  CHECK(body.topics[0].assignments->empty());
  CHECK(body.timeout_ms == 5000);
  CHECK_FALSE(body.validate_only);

  create_partitions_response r;
  r.results = {{"orders", error_code::invalid_partitions, std::string("x")}};
  const auto v0 = unhex("00000019 00000005 00000000 00000001 0006 6f7264657273 0025 0001 78");
  CHECK(hex(encode_response(5, 0, r).value()) == hex(v0));
}

TEST_CASE("kafka golden: DescribeConfigs v0 and v1 responses (is_default, then config source and synonyms)",
          "[kafka][golden]") {
  describe_configs_response r;
  describe_configs_result t;
  t.resource_type = config_resource::topic;
  t.resource_name = "orders";
  describe_configs_entry e;
  e.name = "retention.ms";
  e.value = "60000";
  e.config_source = config_source::dynamic_topic;
  t.configs = {e};
  r.results = {t};
  // throttle, 1 result: error 0, message null, type 2, "orders", 1 config:
  // "retention.ms", "60000", read_only 0, then v0 is_default 0 / v1 source 1,
  // is_sensitive 0, v1 synonyms [].
  const auto head = "00000000 00000001 0000 ffff 02 0006 6f7264657273 00000001"
                    "000c 726574656e74696f6e2e6d73 0005 3630303030 00";
  const auto v0 = unhex(std::string("00000035 00000009 ") + head + "00 00");
  CHECK(hex(encode_response(9, 0, r).value()) == hex(v0));
  const auto v1 = unhex(std::string("00000039 00000009 ") + head + "01 00 00000000");
  CHECK(hex(encode_response(9, 1, r).value()) == hex(v1));
  // A v1 request: resources (type, name, keys: null = all), include_synonyms.
  auto req = decode_request(unhex("0020 0001 00000002 0000 00000001 02 0006 6f7264657273 ffffffff 01"));
  REQUIRE(req.ok());
  const auto& body = std::get<describe_configs_request>(req->body);
  CHECK_FALSE(body.resources.at(0).configuration_keys);
  CHECK(body.include_synonyms);
}

TEST_CASE("kafka golden: OffsetDelete v0 request and response (KIP-496)", "[kafka][golden]") {
  // group "g", topics [("t", [0, 1])].
  auto req = decode_request(unhex("002f 0000 00000004 0000 0001 67 00000001 0001 74 00000002 00000000 00000001"));
  REQUIRE(req.ok());
  const auto& body = std::get<offset_delete_request>(req->body);
  CHECK(body.group_id == "g");
  REQUIRE(body.topics.size() == 1);
  CHECK(body.topics[0].partitions == std::vector<int32_t>{0, 1});
  // error_code, throttle_time_ms, topics [name, partitions [index, error]].
  offset_delete_response r;
  r.topics = {{"t", {{0, 0}, {1, 86}}}};
  const auto v0 = unhex("00000021 00000004 0000 00000000 00000001 0001 74 00000002 00000000 0000 00000001 0056");
  CHECK(hex(encode_response(4, 0, r).value()) == hex(v0));
}

TEST_CASE("kafka golden: DescribeCluster v0 (flexible) request and response (KIP-700)", "[kafka][golden]") {
  // Header v2: api 60, v0, corr 5, client "k", tags 0 | include ops 1, tags 0.
  auto req = decode_request(unhex("003c 0000 00000005 0001 6b 00 01 00"));
  REQUIRE(req.ok());
  CHECK(std::get<describe_cluster_request>(req->body).include_cluster_authorized_operations);
  describe_cluster_response r;
  r.cluster_id = "moonmq";
  r.controller_id = 1;
  r.brokers = {{1, "h", 9092, std::nullopt}};
  // size 41 | corr 5, tags 0 (header v1) | throttle 0 | error 0 | message null | "moonmq" | controller 1 |
  // brokers [1]: (1, "h", 9092, rack null, tags 0) | operations INT32_MIN | tags 0.
  const auto v0 = unhex(
    "00000029 00000005 00 00000000 0000 00 07 6d6f6f6e6d71 00000001"
    " 02 00000001 02 68 00002384 00 00 80000000 00");
  CHECK(hex(encode_response(5, 0, r).value()) == hex(v0));
}

TEST_CASE("kafka golden: DeleteRecords v1 and v2 (flexible) requests and responses (KIP-107)", "[kafka][golden]") {
  // v1, header v1: api 21, corr 8, client "k" | topics [1]: "t", partitions
  // [1]: (2, offset 5) | timeout 1000.
  auto v1 = decode_request(unhex("0015 0001 00000008 0001 6b"
                                 " 00000001 0001 74 00000001 00000002 0000000000000005 000003e8"));
  REQUIRE(v1.ok());
  const auto& b1 = std::get<delete_records_request>(v1->body);
  REQUIRE(b1.topics.size() == 1);
  CHECK(b1.topics[0].name == "t");
  REQUIRE(b1.topics[0].partitions.size() == 1);
  CHECK(b1.topics[0].partitions[0].partition_index == 2);
  CHECK(b1.topics[0].partitions[0].offset == 5);
  CHECK(b1.timeout_ms == 1000);
  // v2, header v2 (tags 0): compact arrays and strings, offset -1, tags.
  auto v2 = decode_request(unhex("0015 0002 00000009 0001 6b 00"
                                 " 02 02 74 02 00000000 ffffffffffffffff 00 00 000003e8 00"));
  REQUIRE(v2.ok());
  const auto& b2 = std::get<delete_records_request>(v2->body);
  CHECK(b2.topics[0].partitions[0].offset == -1);
  delete_records_response r;
  r.topics = {{"t", {{2, 5, 0}}}};
  // Response v1 (header v0): size 33 | corr 8 | throttle 0 | topics [1]: "t",
  // partitions [1]: (2, low watermark 5, error 0).
  CHECK(hex(encode_response(8, 1, r).value())
        == hex(unhex("00000021 00000008 00000000 00000001 0001 74 00000001 00000002 0000000000000005 0000")));
  // Response v2 (header v1: tags 0): compact forms and tag sections.
  CHECK(hex(encode_response(9, 2, r).value())
        == hex(unhex("0000001e 00000009 00 00000000 02 02 74 02 00000002 0000000000000005 0000 00 00 00")));
}

TEST_CASE("kafka golden: IncrementalAlterConfigs v0 and v1 (flexible) requests", "[kafka][golden]") {
  // v1, header v2: topic "t": SET retention.ms=1000; validate_only 0.
  auto v1 = decode_request(unhex("002c 0001 00000006 0001 6b 00"
                                 " 02 02 02 74 02 0d 726574656e74696f6e2e6d73 00 05 31303030 00 00 00 00"));
  REQUIRE(v1.ok());
  const auto& body = std::get<incremental_alter_configs_request>(v1->body);
  REQUIRE(body.resources.size() == 1);
  CHECK(body.resources[0].resource_type == config_resource::topic);
  CHECK(body.resources[0].resource_name == "t");
  REQUIRE(body.resources[0].configs.size() == 1);
  CHECK(body.resources[0].configs[0].name == "retention.ms");
  CHECK(body.resources[0].configs[0].config_operation == config_op::set);
  CHECK(body.resources[0].configs[0].value == std::string("1000"));
  // v0, header v1: the same with DELETE and classic strings, validate_only 1.
  auto v0 = decode_request(unhex("002c 0000 00000007 0001 6b"
                                 " 00000001 02 0001 74 00000001 000c 726574656e74696f6e2e6d73 01 ffff 01"));
  REQUIRE(v0.ok());
  const auto& b0 = std::get<incremental_alter_configs_request>(v0->body);
  CHECK(b0.resources[0].configs[0].config_operation == config_op::remove);
  CHECK_FALSE(b0.resources[0].configs[0].value);
  CHECK(b0.validate_only);
  // Response v1: header v1 (tag byte), one resource answered 0.
  incremental_alter_configs_response r;
  r.responses = {{0, std::nullopt, config_resource::topic, "t"}};
  const auto resp = unhex("00000012 00000006 00 00000000 02 0000 00 02 02 74 00 00");
  CHECK(hex(encode_response(6, 1, r).value()) == hex(resp));
}

// Requests and responses of every supported API at every advertised version:
// encode -> decode -> encode gives the same bytes, selected fields survive,
// strict prefixes fail, unsupported keys/versions take Kafka's path.
#include <catch2/catch.hpp>

#include <limits>

#include "kafka/codec.hpp"
#include "samples.hpp"

using namespace moonmq::kafka;
using moonmq::kafka::test::hex;
using moonmq::kafka::test::sample_requests;
using moonmq::kafka::test::sample_responses;
using moonmq::kafka::test::unhex;

namespace {
version_range range_of(api_key key) { return *supported_range(static_cast<int16_t>(key)); }
}  // namespace

TEST_CASE("kafka codec: the advertised table matches KAFKA.md", "[kafka][codec]") {
  REQUIRE(supported_apis().size() == 29);
  auto check = [](api_key k, int16_t lo, int16_t hi) {
    auto r = range_of(k);
    CHECK(r.min_version == lo);
    CHECK(r.max_version == hi);
  };
  check(api_key::produce, 3, 7);
  check(api_key::fetch, 4, 11);
  check(api_key::list_offsets, 1, 2);
  check(api_key::metadata, 0, 4);
  check(api_key::offset_commit, 2, 7);
  check(api_key::offset_fetch, 1, 4);
  check(api_key::find_coordinator, 0, 2);
  check(api_key::join_group, 0, 5);
  check(api_key::heartbeat, 0, 3);
  check(api_key::leave_group, 0, 3);
  check(api_key::sync_group, 0, 3);
  check(api_key::describe_groups, 0, 4);
  check(api_key::list_groups, 0, 2);
  check(api_key::api_versions, 0, 3);
  check(api_key::create_topics, 0, 4);
  check(api_key::delete_topics, 0, 3);
  check(api_key::init_producer_id, 0, 1);
  check(api_key::add_partitions_to_txn, 0, 1);
  check(api_key::add_offsets_to_txn, 0, 1);
  check(api_key::end_txn, 0, 1);
  check(api_key::txn_offset_commit, 0, 2);
  check(api_key::describe_configs, 0, 2);
  check(api_key::alter_configs, 0, 1);
  check(api_key::create_partitions, 0, 1);
  check(api_key::delete_groups, 0, 1);
  check(api_key::offset_delete, 0, 0);
  check(api_key::incremental_alter_configs, 0, 1);
  check(api_key::describe_cluster, 0, 0);
  check(api_key::delete_records, 0, 2);
  for (const auto& r : supported_apis())
    for (int16_t v = r.min_version; v <= r.max_version; ++v)
      CHECK(is_flexible(r.key, v) == ((r.key == api_key::api_versions && v == 3)
                                      || (r.key == api_key::incremental_alter_configs && v == 1)
                                      || r.key == api_key::describe_cluster
                                      || (r.key == api_key::delete_records && v == 2)));
  CHECK(request_header_version(api_key::describe_cluster, 0) == 2);
  CHECK(response_header_version(api_key::describe_cluster, 0) == 1);
  CHECK(response_header_version(api_key::incremental_alter_configs, 0) == 0);
  CHECK(request_header_version(api_key::api_versions, 3) == 2);
  CHECK(response_header_version(api_key::api_versions, 3) == 0);
  CHECK(request_header_version(api_key::metadata, 4) == 1);
}

TEST_CASE("kafka codec: every request round-trips at every advertised version", "[kafka][codec]") {
  for (const auto& body : sample_requests()) {
    const auto r = range_of(key_of(body));
    for (int16_t v = r.min_version; v <= r.max_version; ++v) {
      INFO(api_name(static_cast<int16_t>(r.key)) << " v" << v);
      request_header h;
      h.api_version = v;
      h.correlation_id = 1000 + v;
      h.client_id = "rdkafka";
      auto frame = encode_request(h, body);
      REQUIRE(frame.ok());
      frame_decoder d;
      d.feed(*frame);
      auto f = d.next();
      REQUIRE(f.ok());
      REQUIRE(*f);
      auto req = decode_request(**f);
      INFO(hex(**f));
      REQUIRE(req.ok());
      CHECK(req->header.api_key == static_cast<int16_t>(r.key));
      CHECK(req->header.correlation_id == 1000 + v);
      CHECK(key_of(req->body) == r.key);
      auto again = encode_request(req->header, req->body);
      REQUIRE(again.ok());
      CHECK(hex(*again) == hex(*frame));
      // Every strict prefix of the body fails: decoding never runs past the
      // end and never accepts a cut request.
      const auto header_size = parse_request_header(**f)->body_offset;
      for (size_t cut = header_size; cut < (*f)->size(); ++cut)
        CHECK_FALSE(decode_request(std::string_view(**f).substr(0, cut)).ok());
      // One extra byte is refused as trailing.
      auto extra = decode_request(**f + "x");
      REQUIRE_FALSE(extra.ok());
      CHECK(extra.err().code == errc::trailing_bytes);
    }
  }
}

TEST_CASE("kafka codec: every response round-trips at every advertised version", "[kafka][codec]") {
  for (const auto& body : sample_responses()) {
    const auto r = range_of(key_of(body));
    for (int16_t v = r.min_version; v <= r.max_version; ++v) {
      INFO(api_name(static_cast<int16_t>(r.key)) << " v" << v);
      auto frame = encode_response(77, v, body);
      REQUIRE(frame.ok());
      const size_t header = response_header_version(r.key, v) == 1 ? 5 : 4;
      REQUIRE(frame->size() >= 4 + header);
      CHECK(frame->substr(4, 4) == unhex("0000004d"));
      auto decoded = decode_response(r.key, v, std::string_view(*frame).substr(4 + header));
      REQUIRE(decoded.ok());
      auto again = encode_response(77, v, *decoded);
      REQUIRE(again.ok());
      CHECK(hex(*again) == hex(*frame));
    }
  }
}

TEST_CASE("kafka codec: version-gated fields survive only where the version has them",
          "[kafka][codec]") {
  SECTION("Produce log_start_offset from v5") {
    produce_response p;
    p.topics = {{"t", {{0, 0, 10, -1, 4}}}};
    auto v4 = decode_body<produce_response>(encode_body(p, 4).value(), 4).value();
    auto v5 = decode_body<produce_response>(encode_body(p, 5).value(), 5).value();
    CHECK(v4.topics[0].partitions[0].log_start_offset == -1);
    CHECK(v5.topics[0].partitions[0].log_start_offset == 4);
    CHECK(v4.topics[0].partitions[0].base_offset == 10);
  }
  SECTION("Fetch request fields from v7, v9, v11") {
    fetch_request f;
    f.session_id = 5;
    f.rack_id = "r";
    f.topics = {{"t", {{0, 8, 1, -1, 100}}}};
    auto v4 = decode_body<fetch_request>(encode_body(f, 4).value(), 4).value();
    auto v11 = decode_body<fetch_request>(encode_body(f, 11).value(), 11).value();
    CHECK(v4.session_id == 0);
    CHECK(v4.rack_id.empty());
    CHECK(v4.topics[0].partitions[0].current_leader_epoch == -1);
    CHECK(v11.session_id == 5);
    CHECK(v11.rack_id == "r");
    CHECK(v11.topics[0].partitions[0].current_leader_epoch == 8);
    CHECK(v11.topics[0].partitions[0].partition_max_bytes == 100);
  }
  SECTION("Metadata v0 empty topics means all, v1 empty means none") {
    metadata_request all;
    auto v0 = decode_body<metadata_request>(encode_body(all, 0).value(), 0).value();
    CHECK_FALSE(v0.topics);
    auto v1 = decode_body<metadata_request>(unhex("00000000"), 1).value();
    REQUIRE(v1.topics);
    CHECK(v1.topics->empty());
    auto v1_null = decode_body<metadata_request>(unhex("ffffffff"), 1).value();
    CHECK_FALSE(v1_null.topics);
    auto v4 = decode_body<metadata_request>(unhex("ffffffff 00"), 4).value();
    CHECK_FALSE(v4.allow_auto_topic_creation);
  }
  SECTION("OffsetCommit retention only in v2-4") {
    offset_commit_request c;
    c.retention_time_ms = 99;
    CHECK(decode_body<offset_commit_request>(encode_body(c, 4).value(), 4)->retention_time_ms == 99);
    CHECK(decode_body<offset_commit_request>(encode_body(c, 5).value(), 5)->retention_time_ms == -1);
  }
  SECTION("OffsetCommit leader epoch from v6, group instance id from v7") {
    offset_commit_request c;
    c.group_instance_id = "i";
    c.topics = {{"t", {{0, 5, std::string("m"), 9}}}};
    auto v5 = decode_body<offset_commit_request>(encode_body(c, 5).value(), 5).value();
    auto v6 = decode_body<offset_commit_request>(encode_body(c, 6).value(), 6).value();
    auto v7 = decode_body<offset_commit_request>(encode_body(c, 7).value(), 7).value();
    CHECK(v5.topics[0].partitions[0].committed_leader_epoch == -1);
    CHECK(v6.topics[0].partitions[0].committed_leader_epoch == 9);
    CHECK(v6.topics[0].partitions[0].committed_metadata == "m");
    CHECK_FALSE(v6.group_instance_id);
    CHECK(v7.group_instance_id == "i");
  }
  SECTION("LeaveGroup: one member id before v3, a batch of members from v3") {
    leave_group_request q;
    q.member_id = "m";
    q.members = {{"", std::string("i")}};
    auto v1 = decode_body<leave_group_request>(encode_body(q, 1).value(), 1).value();
    auto v3 = decode_body<leave_group_request>(encode_body(q, 3).value(), 3).value();
    CHECK(v1.member_id == "m");
    CHECK(v1.members.empty());
    CHECK(v3.member_id.empty());
    REQUIRE(v3.members.size() == 1);
    CHECK(v3.members[0].group_instance_id == "i");
    leave_group_response r;
    r.members = {{"", std::string("i"), error_code::unknown_member_id}};
    CHECK(decode_body<leave_group_response>(encode_body(r, 2).value(), 2)->members.empty());
    auto r3 = decode_body<leave_group_response>(encode_body(r, 3).value(), 3).value();
    REQUIRE(r3.members.size() == 1);
    CHECK(r3.members[0].error_code == error_code::unknown_member_id);
  }
  SECTION("DescribeGroups: authorized operations from v3, group instance ids from v4") {
    describe_groups_request q;
    q.groups = {"g"};
    q.include_authorized_operations = true;
    CHECK_FALSE(decode_body<describe_groups_request>(encode_body(q, 2).value(), 2)->include_authorized_operations);
    CHECK(decode_body<describe_groups_request>(encode_body(q, 3).value(), 3)->include_authorized_operations);
    describe_groups_response r;
    r.groups.resize(1);
    r.groups[0].authorized_operations = 8;
    r.groups[0].members = {{"m", std::string("i"), "c", "/h", "", ""}};
    auto v2 = decode_body<describe_groups_response>(encode_body(r, 2).value(), 2).value();
    auto v3 = decode_body<describe_groups_response>(encode_body(r, 3).value(), 3).value();
    auto v4 = decode_body<describe_groups_response>(encode_body(r, 4).value(), 4).value();
    CHECK(v2.groups[0].authorized_operations == std::numeric_limits<int32_t>::min());
    CHECK(v3.groups[0].authorized_operations == 8);
    CHECK_FALSE(v3.groups[0].members[0].group_instance_id);
    CHECK(v4.groups[0].members[0].group_instance_id == "i");
    CHECK(v4.groups[0].members[0].client_host == "/h");
  }
  SECTION("OffsetFetch null topics from v2") {
    offset_fetch_request o;
    o.group_id = "g";
    CHECK_FALSE(decode_body<offset_fetch_request>(encode_body(o, 2).value(), 2)->topics);
    auto v1 = decode_body<offset_fetch_request>(encode_body(o, 1).value(), 1).value();
    REQUIRE(v1.topics);
    CHECK(v1.topics->empty());
  }
}

TEST_CASE("kafka codec: an unknown api key closes the connection", "[kafka][codec]") {
  auto req = decode_request(unhex("0063 0000 00000009 ffff"));
  REQUIRE_FALSE(req.ok());
  CHECK(req.err().code == errc::unsupported_api_key);
  CHECK(req.err().correlation_id == 9);
  CHECK_FALSE(error_response_frame(req.err()));
}

TEST_CASE("kafka codec: an unsupported version of another API closes the connection",
          "[kafka][codec]") {
  // Produce v2 (below the advertised 3-7) and Metadata v9 (flexible).
  for (const char* frame : {"0000 0002 00000004 ffff 0000", "0003 0009 00000004 ffff 00 00"}) {
    auto req = decode_request(unhex(frame));
    REQUIRE_FALSE(req.ok());
    CHECK(req.err().code == errc::unsupported_version);
    CHECK(req.err().kafka_code == error_code::unsupported_version);
    CHECK_FALSE(error_response_frame(req.err()));
  }
}

TEST_CASE("kafka codec: an unsupported ApiVersions version gets error 35 in v0 layout",
          "[kafka][codec]") {
  // ApiVersions v4 (flexible header v2) from a newer client, correlation id 3.
  auto req = decode_request(unhex("0012 0004 00000003 0001 61 00 02 61 00 02 62 00 00"));
  REQUIRE_FALSE(req.ok());
  CHECK(req.err().code == errc::unsupported_version);
  CHECK(req.err().correlation_id == 3);
  auto frame = error_response_frame(req.err());
  REQUIRE(frame);
  CHECK(*frame == unsupported_api_versions_frame(3));
  // size, correlation id (header v0), error 35, 29 entries of 6 bytes.
  CHECK(frame->substr(0, 14) == unhex("000000b8 00000003 0023 0000001d"));
  CHECK(frame->size() == 4 + 4 + 2 + 4 + 29 * 6);
  auto body = decode_body<api_versions_response>(frame->substr(8), 0).value();
  CHECK(body.error_code == error_code::unsupported_version);
  REQUIRE(body.api_keys.size() == 29);
  CHECK(body.api_keys[13].api == 18);
  CHECK(body.api_keys[13].max_version == 3);
}

TEST_CASE("kafka codec: encoding refuses unsupported versions", "[kafka][codec]") {
  CHECK(encode_response(1, 8, produce_response{}).err().code == errc::unsupported_version);
  CHECK(encode_body(metadata_request{}, 5).err().code == errc::unsupported_version);
  CHECK(decode_body<fetch_request>("", 3).err().code == errc::unsupported_version);
}

TEST_CASE("kafka codec: error codes have Kafka's numbers and names", "[kafka][codec]") {
  CHECK(error_code::offset_out_of_range == 1);
  CHECK(error_code::corrupt_message == 2);
  CHECK(error_code::unknown_topic_or_partition == 3);
  CHECK(error_code::not_leader_or_follower == 6);
  CHECK(error_code::message_too_large == 10);
  CHECK(error_code::coordinator_not_available == 15);
  CHECK(error_code::not_coordinator == 16);
  CHECK(error_code::illegal_generation == 22);
  CHECK(error_code::inconsistent_group_protocol == 23);
  CHECK(error_code::unknown_member_id == 25);
  CHECK(error_code::invalid_session_timeout == 26);
  CHECK(error_code::rebalance_in_progress == 27);
  CHECK(error_code::unsupported_version == 35);
  CHECK(error_code::topic_already_exists == 36);
  CHECK(error_code::invalid_partitions == 37);
  CHECK(error_code::out_of_order_sequence_number == 45);
  CHECK(error_code::duplicate_sequence_number == 46);
  CHECK(error_code::invalid_producer_epoch == 47);
  CHECK(error_code::invalid_txn_state == 48);
  CHECK(error_code::invalid_producer_id_mapping == 49);
  CHECK(error_code::invalid_transaction_timeout == 50);
  CHECK(error_code::concurrent_transactions == 51);
  CHECK(error_code::transaction_coordinator_fenced == 52);
  CHECK(error_code::transactional_id_authorization_failed == 53);
  CHECK(error_code::coordinator_load_in_progress == 14);
  CHECK(error_code::unknown_producer_id == 59);
  CHECK(error_code::unsupported_compression_type == 76);
  CHECK(error_code::invalid_record == 87);
  CHECK(error_code::producer_fenced == 90);
  CHECK(std::string(error_code_name(35)) == "UNSUPPORTED_VERSION");
  CHECK(std::string(error_code_name(87)) == "INVALID_RECORD");
  CHECK(std::string(error_code_name(48)) == "INVALID_TXN_STATE");
  CHECK(std::string(error_code_name(53)) == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED");
  CHECK(std::string(error_code_name(90)) == "PRODUCER_FENCED");
  CHECK(std::string(error_code_name(12345)) == "UNKNOWN");
  CHECK(std::string(to_string(errc::frame_too_large)) == "frame_too_large");
}

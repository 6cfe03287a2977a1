// The transaction APIs (KIP-98): golden bytes hand-computed from the Kafka
// message schemas (AddPartitionsToTxnRequest/Response.json,
// AddOffsetsToTxn*, EndTxn*, TxnOffsetCommit*, InitProducerId*,
// FindCoordinatorRequest.json; fields in schema order, request header v1,
// response header v0), version-gated fields, cut and malformed input, the
// advertised table and the fenced-producer error code per version. Round
// trips of every struct at every advertised version are in codec.test.cpp
// (samples.cpp has one of each).
#include <catch2/catch.hpp>

#include "kafka/codec.hpp"
#include "samples.hpp"

using namespace moonmq::kafka;
using moonmq::kafka::test::hex;
using moonmq::kafka::test::unhex;

namespace {

request_header header(int16_t version, int32_t correlation_id) {
  request_header h;
  h.api_version = version;
  h.correlation_id = correlation_id;
  h.client_id = "kcat";
  return h;
}

// Encodes `body` with `h`, checks the frame against `wire`, decodes the
// frame back and returns the body of type T.
template <class T>
T golden_request(const request_header& h, const T& body, const std::string& wire) {
  CHECK(hex(encode_request(h, body).value()) == hex(wire));
  auto req = decode_request(wire.substr(4));
  REQUIRE(req.ok());
  CHECK(req->header.correlation_id == h.correlation_id);
  REQUIRE(std::holds_alternative<T>(req->body));
  return std::get<T>(req->body);
}

}  // namespace

TEST_CASE("kafka txn: AddPartitionsToTxn v0 request and v1 response", "[kafka][txn]") {
  add_partitions_to_txn_request q;
  q.transactional_id = "tx";
  q.producer_id = 1234;
  q.producer_epoch = 3;
  q.topics = {{"orders", {0, 2}}};
  // size 52 | api 24 | v0 | corr 5 | "kcat"
  const auto wire = unhex(
      "00000034 0018 0000 00000005 0004 6b636174"
      " 0002 7478 00000000000004d2 0003"             // transactional_id "tx", producer 1234, epoch 3
      " 00000001 0006 6f7264657273"                  // topics [1] "orders"
      " 00000002 00000000 00000002");                // partitions [0, 2]
  auto got = golden_request(header(0, 5), q, wire);
  CHECK(got.transactional_id == "tx");
  CHECK(got.producer_id == 1234);
  CHECK(got.producer_epoch == 3);
  REQUIRE(got.topics.size() == 1);
  CHECK(got.topics[0].name == "orders");
  CHECK(got.topics[0].partitions == std::vector<int32_t>{0, 2});
  // v1 is v0 on the wire.
  CHECK(encode_body(q, 1).value() == encode_body(q, 0).value());

  add_partitions_to_txn_response r;
  r.results = {{"orders", {{0, error_code::concurrent_transactions}}}};
  // size 30 | corr 5 | throttle 0 | results [1] "orders" [1] (0, 51)
  const auto resp = unhex(
      "0000001e 00000005 00000000 00000001 0006 6f7264657273 00000001 00000000 0033");
  CHECK(hex(encode_response(5, 1, r).value()) == hex(resp));
  auto back = decode_body<add_partitions_to_txn_response>(resp.substr(8), 1).value();
  REQUIRE(back.results.size() == 1);
  REQUIRE(back.results[0].results.size() == 1);
  CHECK(back.results[0].results[0].error_code == error_code::concurrent_transactions);
}

TEST_CASE("kafka txn: AddOffsetsToTxn v1 request and v0 response", "[kafka][txn]") {
  add_offsets_to_txn_request q;
  q.transactional_id = "tx";
  q.producer_id = 1234;
  q.producer_epoch = 3;
  q.group_id = "g";
  // size 31 | api 25 | v1 | corr 6 | "kcat" | "tx" | 1234 | 3 | group "g"
  const auto wire = unhex(
      "0000001f 0019 0001 00000006 0004 6b636174 0002 7478 00000000000004d2 0003 0001 67");
  auto got = golden_request(header(1, 6), q, wire);
  CHECK(got.group_id == "g");
  CHECK(got.producer_epoch == 3);

  add_offsets_to_txn_response r;
  r.error_code = error_code::not_coordinator;
  const auto resp = unhex("0000000a 00000006 00000000 0010");  // throttle 0, error 16
  CHECK(hex(encode_response(6, 0, r).value()) == hex(resp));
  CHECK(decode_body<add_offsets_to_txn_response>(resp.substr(8), 0)->error_code == 16);
}

TEST_CASE("kafka txn: EndTxn v1 commit and abort requests and response", "[kafka][txn]") {
  end_txn_request q;
  q.transactional_id = "tx";
  q.producer_id = 1234;
  q.producer_epoch = 3;
  q.committed = true;
  // size 29 | api 26 | v1 | corr 7 | "kcat" | "tx" | 1234 | 3 | committed true
  const auto commit = unhex("0000001d 001a 0001 00000007 0004 6b636174 0002 7478 00000000000004d2 0003 01");
  CHECK(golden_request(header(1, 7), q, commit).committed);
  q.committed = false;
  const auto abort = unhex("0000001d 001a 0001 00000007 0004 6b636174 0002 7478 00000000000004d2 0003 00");
  CHECK_FALSE(golden_request(header(1, 7), q, abort).committed);

  end_txn_response r;
  r.throttle_time_ms = 2;
  r.error_code = error_code::invalid_txn_state;
  const auto resp = unhex("0000000a 00000007 00000002 0030");  // throttle 2, error 48
  CHECK(hex(encode_response(7, 1, r).value()) == hex(resp));
  auto back = decode_body<end_txn_response>(resp.substr(8), 1).value();
  CHECK(back.throttle_time_ms == 2);
  CHECK(back.error_code == error_code::invalid_txn_state);
}

TEST_CASE("kafka txn: TxnOffsetCommit v0 with null metadata, v2 with committed_leader_epoch",
          "[kafka][txn]") {
  txn_offset_commit_request q;
  q.transactional_id = "tx";
  q.group_id = "g";
  q.producer_id = 1234;
  q.producer_epoch = 3;
  q.topics = {{"orders", {{0, 100, -1, std::string("m")}, {1, 7, -1, std::nullopt}}}};
  // size 76 | api 28 | v0 | corr 8 | "kcat"
  const auto v0 = unhex(
      "0000004c 001c 0000 00000008 0004 6b636174"
      " 0002 7478 0001 67 00000000000004d2 0003"     // "tx", group "g", producer 1234, epoch 3
      " 00000001 0006 6f7264657273 00000002"         // topics [1] "orders", partitions [2]
      " 00000000 0000000000000064 0001 6d"           // 0: offset 100, metadata "m"
      " 00000001 0000000000000007 ffff");            // 1: offset 7, metadata null
  auto got0 = golden_request(header(0, 8), q, v0);
  REQUIRE(got0.topics.size() == 1);
  REQUIRE(got0.topics[0].partitions.size() == 2);
  CHECK(got0.topics[0].partitions[0].committed_metadata == "m");
  CHECK(got0.topics[0].partitions[0].committed_leader_epoch == -1);
  CHECK_FALSE(got0.topics[0].partitions[1].committed_metadata);
  CHECK(got0.topics[0].partitions[1].committed_offset == 7);
  // v1 is v0 on the wire.
  CHECK(encode_body(q, 1).value() == encode_body(q, 0).value());

  q.topics[0].partitions[0].committed_leader_epoch = 5;
  // v2: the leader epoch sits between the offset and the metadata.
  const auto v2 = unhex(
      "00000054 001c 0002 00000008 0004 6b636174"
      " 0002 7478 0001 67 00000000000004d2 0003"
      " 00000001 0006 6f7264657273 00000002"
      " 00000000 0000000000000064 00000005 0001 6d"  // 0: offset 100, epoch 5, "m"
      " 00000001 0000000000000007 ffffffff ffff");   // 1: offset 7, epoch -1, null
  auto got2 = golden_request(header(2, 8), q, v2);
  CHECK(got2.topics[0].partitions[0].committed_leader_epoch == 5);
  CHECK(got2.topics[0].partitions[1].committed_leader_epoch == -1);
  CHECK_FALSE(got2.topics[0].partitions[1].committed_metadata);
  // Encoded at v1, the epoch is dropped and decodes as -1.
  auto v1 = decode_body<txn_offset_commit_request>(encode_body(q, 1).value(), 1).value();
  CHECK(v1.topics[0].partitions[0].committed_leader_epoch == -1);

  txn_offset_commit_response r;
  r.topics = {{"orders", {{0, error_code::none}}}};
  const auto resp = unhex("0000001e 00000008 00000000 00000001 0006 6f7264657273 00000001 00000000 0000");
  CHECK(hex(encode_response(8, 2, r).value()) == hex(resp));
  CHECK(decode_body<txn_offset_commit_response>(resp.substr(8), 2)->topics[0].name == "orders");
}

TEST_CASE("kafka txn: InitProducerId v0-1 with and without a transactional id", "[kafka][txn]") {
  init_producer_id_request q;
  q.transactional_id = "tx";
  q.transaction_timeout_ms = 60000;
  // size 22 | api 22 | v1 | corr 9 | "kcat" | transactional_id "tx" | timeout 60000
  const auto tx = unhex("00000016 0016 0001 00000009 0004 6b636174 0002 7478 0000ea60");
  auto got = golden_request(header(1, 9), q, tx);
  CHECK(got.transactional_id == "tx");
  CHECK(got.transaction_timeout_ms == 60000);
  q.transactional_id.reset();
  const auto idempotent = unhex("00000014 0016 0000 00000009 0004 6b636174 ffff 0000ea60");
  CHECK_FALSE(golden_request(header(0, 9), q, idempotent).transactional_id);

  init_producer_id_response r;
  r.producer_id = 1234;
  r.producer_epoch = 0;
  const auto resp = unhex("00000014 00000009 00000000 0000 00000000000004d2 0000");
  CHECK(hex(encode_response(9, 1, r).value()) == hex(resp));
  // Advertised 0-1: v2 is flexible, v3 adds producer_id/epoch to the request.
  CHECK(supported_range(22)->max_version == 1);
}

TEST_CASE("kafka txn: FindCoordinator v1+ decodes key_type 1 (transaction)", "[kafka][txn]") {
  find_coordinator_request q;
  q.key_value = "tx";
  q.key_type = 1;
  // size 19 | api 10 | v2 | corr 10 | "kcat" | key "tx" | key_type 1
  const auto wire = unhex("00000013 000a 0002 0000000a 0004 6b636174 0002 7478 01");
  auto got = golden_request(header(2, 10), q, wire);
  CHECK(got.key_value == "tx");
  CHECK(got.key_type == 1);
  // v0 has no key type: a group.
  CHECK(decode_body<find_coordinator_request>(unhex("0002 7478"), 0)->key_type == 0);
}

TEST_CASE("kafka txn: cut or malformed transaction requests fail with a clear error",
          "[kafka][txn]") {
  // AddPartitionsToTxn v0 cut inside the partitions array (one of two read).
  const auto cut = unhex(
      "0018 0000 00000005 0004 6b636174 0002 7478 00000000000004d2 0003"
      " 00000001 0006 6f7264657273 00000002 00000000 0000");
  auto e = decode_request(cut);
  REQUIRE_FALSE(e.ok());
  CHECK(e.err().code == errc::truncated);
  CHECK(e.err().correlation_id == 5);
  CHECK(e.err().message == "AddPartitionsToTxn v0 request: need 4 bytes, have 2 at byte 34");
  CHECK_FALSE(error_response_frame(e.err()));  // closes the connection, as Kafka

  // EndTxn without its committed flag.
  auto no_flag = decode_body<end_txn_request>(unhex("0002 7478 00000000000004d2 0003"), 1);
  REQUIRE_FALSE(no_flag.ok());
  CHECK(no_flag.err().code == errc::truncated);
  CHECK(no_flag.err().message == "need 1 bytes, have 0 at byte 14");

  // A null transactional id where the schema has no null.
  auto null_id = decode_body<add_offsets_to_txn_request>(unhex("ffff 00000000000004d2 0003 0001 67"), 0);
  REQUIRE_FALSE(null_id.ok());
  CHECK(null_id.err().code == errc::bad_length);
  CHECK(null_id.err().message == "null where a value is required at byte 2");

  // TxnOffsetCommit v2 bytes read as v1: the epoch's high half is taken
  // for an empty metadata string and the rest is left over.
  txn_offset_commit_request q;
  q.transactional_id = "tx";
  q.group_id = "g";
  q.topics = {{"t", {{0, 1, 5, std::string("m")}}}};
  auto as_v1 = decode_body<txn_offset_commit_request>(encode_body(q, 2).value(), 1);
  REQUIRE_FALSE(as_v1.ok());
  CHECK(as_v1.err().code == errc::trailing_bytes);
}

TEST_CASE("kafka txn: ApiVersions advertises the transaction APIs, flexible versions are refused",
          "[kafka][txn]") {
  auto resp = make_api_versions_response();
  auto find = [&](int16_t key) -> const api_version_entry* {
    for (const auto& e : resp.api_keys)
      if (e.api == key)
        return &e;
    return nullptr;
  };
  struct expected {
    int16_t key;
    int16_t max;
    const char* name;
  };
  for (auto x : {expected{24, 1, "AddPartitionsToTxn"}, expected{25, 1, "AddOffsetsToTxn"},
                 expected{26, 1, "EndTxn"}, expected{28, 2, "TxnOffsetCommit"}}) {
    INFO(x.name);
    const auto* e = find(x.key);
    REQUIRE(e);
    CHECK(e->min_version == 0);
    CHECK(e->max_version == x.max);
    CHECK(std::string(api_name(x.key)) == x.name);
    // The schemas' flexibleVersions is 3+ for all four: never spoken here.
    CHECK(supported_range(x.key)->flexible_from == 3);
    for (int16_t v = 0; v <= x.max; ++v) {
      CHECK_FALSE(is_flexible(static_cast<api_key>(x.key), v));
      CHECK(request_header_version(static_cast<api_key>(x.key), v) == 1);
      CHECK(response_header_version(static_cast<api_key>(x.key), v) == 0);
    }
    // The first version past the range is refused, closing the connection.
    writer w;
    request_header h = header(static_cast<int16_t>(x.max + 1), 11);
    h.api_key = x.key;
    REQUIRE(encode_request_header(w, h));
    auto req = decode_request(w.bytes());
    REQUIRE_FALSE(req.ok());
    CHECK(req.err().code == errc::unsupported_version);
    CHECK_FALSE(error_response_frame(req.err()));
  }
  CHECK_FALSE(find(27));  // WriteTxnMarkers: broker to broker, not spoken
}

TEST_CASE("kafka txn: a fenced producer gets PRODUCER_FENCED only where its version knows it",
          "[kafka][txn]") {
  CHECK(producer_fenced_code(api_key::init_producer_id, 1) == error_code::invalid_producer_epoch);
  CHECK(producer_fenced_code(api_key::init_producer_id, 4) == error_code::producer_fenced);
  for (auto k : {api_key::add_partitions_to_txn, api_key::add_offsets_to_txn, api_key::end_txn}) {
    CHECK(producer_fenced_code(k, 0) == error_code::invalid_producer_epoch);
    CHECK(producer_fenced_code(k, 1) == error_code::invalid_producer_epoch);
    CHECK(producer_fenced_code(k, 2) == error_code::producer_fenced);
  }
  CHECK(producer_fenced_code(api_key::txn_offset_commit, 2) == error_code::invalid_producer_epoch);
  CHECK(producer_fenced_code(api_key::produce, 7) == error_code::invalid_producer_epoch);
}

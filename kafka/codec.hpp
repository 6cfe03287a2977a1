#pragma once
// Whole requests and responses: header + body, for the APIs and versions of
// supported_apis(). The listener's loop is
//
//   decoder.feed(bytes);
//   while (auto f = decoder.next(); f && *f) {
//     auto req = decode_request(**f);
//     if (!req) {                                    // unknown key/version, malformed body
//       if (auto frame = error_response_frame(req.err())) send(*frame);  // ApiVersions only
//       else close();                                // what Kafka does
//       break;
//     }
//     ... handle req->body (a std::variant), then
//     send(encode_response(req->header.correlation_id, req->header.api_version, resp).value());
//   }
//   // next() error: close the connection.
//
// Produce with acks = 0 gets no response at all.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "kafka/api.hpp"
#include "kafka/data_types.hpp"
#include "kafka/errors.hpp"
#include "kafka/frame.hpp"
#include "kafka/admin_types.hpp"
#include "kafka/group_types.hpp"
#include "kafka/meta_types.hpp"
#include "kafka/txn_types.hpp"
#include "kafka/wire.hpp"

namespace moonmq::kafka {

/// Every supported request body.
using request_body =
    std::variant<produce_request, fetch_request, list_offsets_request, metadata_request,
                 offset_commit_request, offset_fetch_request, find_coordinator_request,
                 join_group_request, heartbeat_request, leave_group_request, sync_group_request,
                 describe_groups_request, list_groups_request, api_versions_request, create_topics_request, delete_topics_request,
                 init_producer_id_request, add_partitions_to_txn_request,
                 add_offsets_to_txn_request, end_txn_request, txn_offset_commit_request,
                 describe_configs_request, alter_configs_request,
                 create_partitions_request, delete_groups_request, offset_delete_request,
                 incremental_alter_configs_request, describe_cluster_request, delete_records_request>;

/// Every supported response body (same order as request_body).
using response_body =
    std::variant<produce_response, fetch_response, list_offsets_response, metadata_response,
                 offset_commit_response, offset_fetch_response, find_coordinator_response,
                 join_group_response, heartbeat_response, leave_group_response,
                 sync_group_response, describe_groups_response, list_groups_response, api_versions_response, create_topics_response,
                 delete_topics_response, init_producer_id_response, add_partitions_to_txn_response,
                 add_offsets_to_txn_response, end_txn_response, txn_offset_commit_response,
                 describe_configs_response,
                 alter_configs_response, create_partitions_response, delete_groups_response,
                 offset_delete_response, incremental_alter_configs_response, describe_cluster_response,
                 delete_records_response>;

/// A decoded request.
struct request {
  request_header header;
  request_body body;
  /// Not on the wire: "/<address>" of the client's connection, as Kafka
  /// shows it in DescribeGroups; set by the listener ("" when unknown).
  std::string client_host;
};

/// Decodes one frame (frame_decoder::next): header, then the body for
/// (api_key, api_version). The body must be consumed exactly. Errors (with
/// the header fields filled in when read): truncated / bad_length (malformed),
/// trailing_bytes, unsupported_api_key, unsupported_version (kafka_code 35).
/// Every error closes the connection except an unsupported ApiVersions
/// version: see error_response_frame.
result<request> decode_request(std::string_view frame);

/// Kafka's answer to a decode_request error, if it has one: for ApiVersions
/// with an unsupported version, ApiVersions v0 with UNSUPPORTED_VERSION (35)
/// and the supported table (KIP-511; clients retry with a version from it).
/// nullopt for every other error: close the connection (Kafka closes it on
/// unknown keys/versions and malformed requests).
std::optional<std::string> error_response_frame(const error& e);

/// The whole ApiVersions v0 error-35 response frame for `correlation_id`.
std::string unsupported_api_versions_frame(int32_t correlation_id);

/// Encodes a complete response frame (size, header v0 — v1 for flexible
/// versions except ApiVersions — and body) at `api_version`, which must be
/// in the advertised range of the body's API. Errors: unsupported_version,
/// value_too_large (a string/array or the frame beyond its length prefix).
result<std::string> encode_response(int32_t correlation_id, int16_t api_version,
                                    const response_body& body);

/// Encodes a complete request frame (client side: tests, benchmarks). The
/// header's api_key is set from the body. Errors as encode_response.
result<std::string> encode_request(request_header header, const request_body& body);

/// The API key of a body.
api_key key_of(const request_body& body);
api_key key_of(const response_body& body);

/// Decodes a response body (without size and header) of `key` at `version`
/// (client side: tests). Errors as decode_request.
result<response_body> decode_response(api_key key, int16_t version, std::string_view body);

/// Decodes one body of type T at `version`; the bytes must be consumed
/// exactly. Errors: unsupported_version, truncated, bad_length, trailing_bytes.
template <class T>
result<T> decode_body(std::string_view bytes, int16_t version) {
  if (!is_supported(static_cast<int16_t>(T::key), version))
    return make_error(errc::unsupported_version,
                      std::string(api_name(static_cast<int16_t>(T::key))) + " v" +
                          std::to_string(version) + " is not supported",
                      error_code::unsupported_version);
  reader r(bytes);
  T out;
  if (!decode(r, version, out))
    return r.err();
  if (r.remaining() != 0)
    return make_error(errc::trailing_bytes, std::to_string(r.remaining()) +
                                                " bytes after the last field of " +
                                                api_name(static_cast<int16_t>(T::key)));
  return out;
}

/// Encodes one body of type T at `version` (no size, no header).
template <class T>
result<std::string> encode_body(const T& body, int16_t version) {
  if (!is_supported(static_cast<int16_t>(T::key), version))
    return make_error(errc::unsupported_version,
                      std::string(api_name(static_cast<int16_t>(T::key))) + " v" +
                          std::to_string(version) + " is not supported",
                      error_code::unsupported_version);
  writer w;
  if (!encode(w, version, body))
    return w.err();
  return w.take();
}

}  // namespace moonmq::kafka

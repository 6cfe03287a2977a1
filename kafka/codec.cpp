#include "kafka/codec.hpp"

#include <limits>

namespace moonmq::kafka {
namespace {

// Decodes the alternative of Variant whose T::key is `key`.
template <class Variant, size_t I = 0>
result<Variant> decode_alternative(api_key key, int16_t version, std::string_view bytes) {
  if constexpr (I == std::variant_size_v<Variant>) {
    return make_error(errc::unsupported_api_key,
                      "api key " + std::to_string(static_cast<int16_t>(key)) + " is not supported");
  } else {
    using T = std::variant_alternative_t<I, Variant>;
    if (T::key != key)
      return decode_alternative<Variant, I + 1>(key, version, bytes);
    auto r = decode_body<T>(bytes, version);
    if (!r)
      return r.err();
    return Variant(std::move(*r));
  }
}

template <class Variant>
result<std::string> encode_framed(const request_header* req, int32_t correlation_id,
                                  int16_t version, const Variant& body) {
  auto bytes = std::visit([&](const auto& b) { return encode_body(b, version); }, body);
  if (!bytes)
    return bytes.err();
  const api_key key = std::visit([](const auto& b) { return b.key; }, body);
  if (req) {
    writer w;
    (void)w.i32(0);  // size, patched below
    if (!encode_request_header(w, *req))
      return w.err();
    (void)w.raw(*bytes);
    if (w.size() - 4 > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      return make_error(errc::value_too_large, "request frame exceeds 2 GiB");
    w.patch_i32(0, static_cast<int32_t>(w.size() - 4));
    return w.take();
  }
  if (bytes->size() + 5 > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return make_error(errc::value_too_large, "response frame exceeds 2 GiB");
  return frame_response(correlation_id, response_header_version(key, version), *bytes);
}

}  // namespace

result<request> decode_request(std::string_view frame) {
  auto parsed = parse_request_header(frame);
  if (!parsed)
    return parsed.err();
  const auto& h = parsed->header;
  auto with_header = [&](error e) {
    e.api_key = h.api_key;
    e.api_version = h.api_version;
    e.correlation_id = h.correlation_id;
    return e;
  };
  if (!supported_range(h.api_key))
    return with_header(make_error(errc::unsupported_api_key,
                                  "api key " + std::to_string(h.api_key) + " is not supported"));
  auto body = decode_alternative<request_body>(static_cast<api_key>(h.api_key), h.api_version,
                                               frame.substr(parsed->body_offset));
  if (!body) {
    auto e = with_header(body.err());
    e.message = std::string(api_name(h.api_key)) + " v" + std::to_string(h.api_version) +
                " request: " + e.message;
    return e;
  }
  return request{h, std::move(*body), {}};
}

std::string unsupported_api_versions_frame(int32_t correlation_id) {
  writer w;
  // v0 body with the supported table; cannot fail (a few dozen bytes).
  (void)encode(w, 0, make_api_versions_response(error_code::unsupported_version));
  return frame_response(correlation_id, 0, w.bytes());
}

std::optional<std::string> error_response_frame(const error& e) {
  if (e.code == errc::unsupported_version &&
      e.api_key == static_cast<int16_t>(api_key::api_versions))
    return unsupported_api_versions_frame(e.correlation_id);
  return std::nullopt;
}

result<std::string> encode_response(int32_t correlation_id, int16_t api_version,
                                    const response_body& body) {
  return encode_framed(nullptr, correlation_id, api_version, body);
}

result<std::string> encode_request(request_header header, const request_body& body) {
  header.api_key = static_cast<int16_t>(key_of(body));
  return encode_framed(&header, header.correlation_id, header.api_version, body);
}

api_key key_of(const request_body& body) {
  return std::visit([](const auto& b) { return b.key; }, body);
}

api_key key_of(const response_body& body) {
  return std::visit([](const auto& b) { return b.key; }, body);
}

result<response_body> decode_response(api_key key, int16_t version, std::string_view body) {
  return decode_alternative<response_body>(key, version, body);
}

}  // namespace moonmq::kafka

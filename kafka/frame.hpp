#pragma once
// Kafka request framing: the size-prefixed byte stream of one connection
// and the request header. Source: Kafka protocol guide, "Common Request and
// Response Structure" (RequestOrResponse => Size INT32 then the message;
// request header v1 = api_key INT16, api_version INT16, correlation_id INT32,
// client_id NULLABLE_STRING; v2 adds a tagged-field section; response header
// v0 = correlation_id INT32, v1 adds a tagged-field section).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "kafka/errors.hpp"
#include "kafka/wire.hpp"

namespace moonmq::kafka {

/// Kafka's default socket.request.max.bytes (104857600 bytes = 100 MiB).
inline constexpr size_t default_max_request_bytes = 100 * 1024 * 1024;

/// Smallest request after the size prefix: header v1 with a null client id
/// (2 + 2 + 4 + 2 bytes).
inline constexpr size_t min_request_bytes = 10;

/// Splits a connection's byte stream into request frames. Bytes may arrive
/// in chunks of any size. Errors are sticky: after one, the stream is out of
/// step and the caller must close the connection (Kafka closes it too:
/// InvalidReceiveException). Not thread-safe; one per connection.
class frame_decoder {
 public:
  /// `max_request_bytes` bounds the size prefix (excluding its own 4 bytes).
  explicit frame_decoder(size_t max_request_bytes = default_max_request_bytes);

  frame_decoder(const frame_decoder&) = delete;
  frame_decoder& operator=(const frame_decoder&) = delete;

  /// Appends received bytes (a copy; see prepare). Ignored after an error.
  void feed(std::string_view bytes);

  /// Room for a read to write received bytes into directly, without the
  /// copy of feed: at least `n` bytes, more when the frame being received
  /// needs them (its size prefix is known), and whatever the buffer has
  /// free. Call commit with the bytes written. Only prepare and feed move
  /// or reallocate the buffer, so a read may be in progress into this room
  /// while next or next_view run; the room is valid until the next
  /// prepare or feed.
  std::pair<char*, size_t> prepare(size_t n);
  /// Takes `n` bytes written at the start of the room of the last prepare
  /// as received. Ignored after an error.
  void commit(size_t n);

  /// The next complete frame (the bytes after the size prefix: header and
  /// body), nullopt when more bytes are needed. Errors: negative_size,
  /// frame_too_small (< min_request_bytes), frame_too_large; each is returned
  /// as soon as the 4-byte prefix is in, before the body arrives.
  /// The view points into the buffer and is valid until the next prepare or
  /// feed.
  result<std::optional<std::string_view>> next_view();
  /// next_view, copied.
  result<std::optional<std::string>> next();

  /// Bytes fed but not yet returned as frames.
  size_t buffered() const { return end_ - pos_; }
  /// Bytes the buffer holds room for (tests: how it grows and shrinks).
  size_t capacity() const { return cap_; }
  /// True after next() returned an error.
  bool failed() const { return failure_.has_value(); }

 private:
  /// Makes room for `n` bytes after end_: moves the unread bytes to the
  /// front, or into a larger buffer.
  void reserve_tail(size_t n);

  size_t max_;
  std::unique_ptr<char[]> buf_;  ///< not zeroed: only [pos_, end_) is ever read
  size_t cap_ = 0;
  size_t pos_ = 0;   ///< first byte not returned as a frame
  size_t end_ = 0;   ///< end of the bytes received
  size_t want_ = 0;  ///< bytes of the frame at pos_ (prefix included) once its prefix is in, else 0
  std::optional<error> failure_;
};

/// A request header (v1 or v2; the tagged fields of v2 are skipped).
struct request_header {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::optional<std::string> client_id;
};

/// A header and where the body starts inside the frame.
struct parsed_header {
  request_header header;
  size_t body_offset = 0;
};

/// Parses the header at the start of `frame` (as returned by
/// frame_decoder::next). The header version follows request_header_version
/// for known keys and is v1 for unknown keys. Errors: truncated, bad_length
/// (api_key/api_version/correlation_id are filled in the error when read).
result<parsed_header> parse_request_header(std::string_view frame);

/// Writes `h` as header v1, or v2 when (api_key, api_version) is flexible.
bool encode_request_header(writer& w, const request_header& h);

/// A complete response: size prefix, response header (v0 = correlation id;
/// v1 adds an empty tagged-field section) and `body`.
std::string frame_response(int32_t correlation_id, int header_version, std::string_view body);

}  // namespace moonmq::kafka

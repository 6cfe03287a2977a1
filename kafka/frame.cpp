#include "kafka/frame.hpp"

#include <algorithm>
#include <limits>

#include "kafka/api.hpp"

namespace moonmq::kafka {

frame_decoder::frame_decoder(size_t max_request_bytes) : max_(max_request_bytes) {}

void frame_decoder::feed(std::string_view bytes) {
  if (failure_)
    return;
  // Drop consumed bytes once they are the larger part of the buffer.
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

result<std::optional<std::string>> frame_decoder::next() {
  if (failure_)
    return *failure_;
  if (buffered() < 4)
    return std::optional<std::string>{};
  reader r(std::string_view(buf_).substr(pos_, 4));
  int32_t size = 0;
  (void)r.i32(size);  // 4 bytes are present
  if (size < 0)
    failure_ = make_error(errc::negative_size, "frame size " + std::to_string(size) + " is negative");
  else if (static_cast<size_t>(size) < min_request_bytes)
    failure_ = make_error(errc::frame_too_small, "frame size " + std::to_string(size) +
                                                     " is below the " +
                                                     std::to_string(min_request_bytes) +
                                                     "-byte request header");
  else if (static_cast<size_t>(size) > max_)
    failure_ = make_error(errc::frame_too_large, "frame size " + std::to_string(size) +
                                                     " exceeds the limit of " +
                                                     std::to_string(max_) + " bytes");
  if (failure_)
    return *failure_;
  const auto need = static_cast<size_t>(size);
  if (buffered() - 4 < need) {
    buf_.reserve(pos_ + 4 + need);
    return std::optional<std::string>{};
  }
  std::string frame = buf_.substr(pos_ + 4, need);
  pos_ += 4 + need;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  return std::optional<std::string>(std::move(frame));
}

result<parsed_header> parse_request_header(std::string_view frame) {
  reader r(frame);
  parsed_header p;
  auto& h = p.header;
  auto failed = [&](const reader& rd) {
    error e = rd.err();
    e.message = "request header: " + e.message;
    e.api_key = h.api_key;
    e.api_version = h.api_version;
    e.correlation_id = h.correlation_id;
    return e;
  };
  h.api_key = -1;
  h.api_version = -1;
  h.correlation_id = -1;
  int16_t key = 0;
  int16_t version = 0;
  int32_t correlation = 0;
  if (!r.i16(key) || !r.i16(version) || !r.i32(correlation))
    return failed(r);
  h.api_key = key;
  h.api_version = version;
  h.correlation_id = correlation;
  if (!r.nullable_string(h.client_id))
    return failed(r);
  if (supported_range(key) &&
      request_header_version(static_cast<api_key>(key), version) >= 2 && !r.tagged_fields())
    return failed(r);
  p.body_offset = r.position();
  return p;
}

bool encode_request_header(writer& w, const request_header& h) {
  bool ok = w.i16(h.api_key) && w.i16(h.api_version) && w.i32(h.correlation_id) &&
            w.nullable_string(h.client_id);
  if (ok && supported_range(h.api_key) &&
      request_header_version(static_cast<api_key>(h.api_key), h.api_version) >= 2)
    ok = w.tagged_fields();
  return ok;
}

std::string frame_response(int32_t correlation_id, int header_version, std::string_view body) {
  writer w;
  const size_t header = header_version >= 1 ? 5 : 4;
  // A body above 2 GiB cannot be framed; encoders never build one (Kafka
  // bytes/arrays are int32-sized and the listener bounds Fetch sizes).
  const auto size = static_cast<int32_t>(
      std::min<size_t>(header + body.size(), static_cast<size_t>(std::numeric_limits<int32_t>::max())));
  (void)w.i32(size);
  (void)w.i32(correlation_id);
  if (header_version >= 1)
    (void)w.tagged_fields();
  (void)w.raw(body);
  return w.take();
}

}  // namespace moonmq::kafka

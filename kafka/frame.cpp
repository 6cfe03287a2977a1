#include "kafka/frame.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "kafka/api.hpp"

namespace moonmq::kafka {

namespace {

/// A buffer larger than this is released once it holds nothing (a
/// connection that sent one large request does not keep its memory).
constexpr size_t keep_idle_bytes = 4 * 1024 * 1024;

}  // namespace

frame_decoder::frame_decoder(size_t max_request_bytes) : max_(max_request_bytes) {}

void frame_decoder::reserve_tail(size_t n) {
  if (pos_ == end_) {
    pos_ = end_ = 0;  // nothing unread: start over at the front
    if (cap_ > keep_idle_bytes && n <= keep_idle_bytes) {
      buf_.reset();
      cap_ = 0;
    }
  }
  if (cap_ - end_ >= n)
    return;
  const size_t live = end_ - pos_;
  if (live + n <= cap_) {
    // The unread bytes (the start of a frame) go to the front: they are
    // never more than one frame.
    std::memmove(buf_.get(), buf_.get() + pos_, live);
  } else {
    const size_t cap = std::max(live + n, 2 * cap_);
    std::unique_ptr<char[]> bigger(new char[cap]);
    if (live > 0)
      std::memcpy(bigger.get(), buf_.get() + pos_, live);
    buf_ = std::move(bigger);
    cap_ = cap;
  }
  pos_ = 0;
  end_ = live;
}

std::pair<char*, size_t> frame_decoder::prepare(size_t n) {
  // The whole frame being received fits without moving it again.
  const size_t frame_rest = want_ > end_ - pos_ ? want_ - (end_ - pos_) : 0;
  reserve_tail(std::max(n, frame_rest));
  return {buf_.get() + end_, cap_ - end_};
}

void frame_decoder::commit(size_t n) {
  if (failure_)
    return;
  end_ += std::min(n, cap_ - end_);
}

void frame_decoder::feed(std::string_view bytes) {
  if (failure_ || bytes.empty())
    return;
  auto room = prepare(bytes.size());
  std::memcpy(room.first, bytes.data(), bytes.size());
  commit(bytes.size());
}

result<std::optional<std::string>> frame_decoder::next() {
  auto f = next_view();
  if (!f)
    return f.err();
  if (!*f)
    return std::optional<std::string>{};
  return std::optional<std::string>(std::string(**f));
}

result<std::optional<std::string_view>> frame_decoder::next_view() {
  if (failure_)
    return *failure_;
  want_ = 0;
  if (buffered() < 4)
    return std::optional<std::string_view>{};
  const std::string_view unread(buf_.get() + pos_, end_ - pos_);
  reader r(unread.substr(0, 4));
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
    want_ = 4 + need;
    return std::optional<std::string_view>{};
  }
  pos_ += 4 + need;
  return std::optional<std::string_view>(unread.substr(4, need));
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

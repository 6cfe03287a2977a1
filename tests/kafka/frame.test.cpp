// Framing: incremental feeding, size-prefix limits (negative, short,
// oversized), sticky errors, request header v1/v2 parsing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "kafka/codec.hpp"
#include "kafka/frame.hpp"
#include "samples.hpp"

using namespace moonmq::kafka;
using moonmq::kafka::test::unhex;

namespace {
std::string api_versions_v0_frame(int32_t correlation_id) {
  request_header h;
  h.api_version = 0;
  h.correlation_id = correlation_id;
  h.client_id = "c";
  return encode_request(h, api_versions_request{}).value();
}

/// Appends every complete frame `d` holds to `out`.
void drain(frame_decoder& d, std::vector<std::string>& out) {
  for (;;) {
    auto f = d.next_view();
    REQUIRE(f.ok());
    if (!*f)
      return;
    out.emplace_back(**f);
  }
}
}  // namespace

TEST_CASE("kafka frame: frames arrive whole from chunks of any size", "[kafka][frame]") {
  std::string stream;
  for (int32_t i = 0; i < 5; ++i)
    stream += api_versions_v0_frame(i);
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, size_t{13}, stream.size()}) {
    frame_decoder d;
    std::vector<std::string> frames;
    for (size_t pos = 0; pos < stream.size(); pos += chunk) {
      d.feed(std::string_view(stream).substr(pos, chunk));
      drain(d, frames);
    }
    REQUIRE(frames.size() == 5);
    CHECK(d.buffered() == 0);
    for (int32_t i = 0; i < 5; ++i) {
      auto req = decode_request(frames[static_cast<size_t>(i)]);
      REQUIRE(req.ok());
      CHECK(req->header.correlation_id == i);
      CHECK(req->header.client_id == std::string("c"));
    }
  }
}

TEST_CASE("kafka frame: bytes read straight into prepare's room arrive as the same frames, viewed in place",
          "[kafka][frame]") {
  // Frames of 30 bytes to 300 KB, as a socket would deliver them.
  std::string stream;
  std::vector<std::string> sent;
  for (size_t body : {size_t{20}, size_t{300000}, size_t{70000}, size_t{10}, size_t{150000}}) {
    std::string f(body, '\0');
    for (size_t i = 0; i < body; ++i)
      f[i] = static_cast<char>('a' + (i * 7 + body) % 26);
    sent.push_back(f);
    stream += std::string{static_cast<char>(body >> 24), static_cast<char>(body >> 16), static_cast<char>(body >> 8),
                          static_cast<char>(body)}
              + f;
  }
  for (size_t chunk : {size_t{1000}, size_t{65536}, size_t{1} << 20}) {
    frame_decoder d;
    std::vector<std::string> got;
    size_t pos = 0;
    while (pos < stream.size()) {
      auto room = d.prepare(4096);
      REQUIRE(room.second >= 4096);
      const size_t n = std::min({chunk, room.second, stream.size() - pos});
      std::memcpy(room.first, stream.data() + pos, n);
      d.commit(n);
      pos += n;
      drain(d, got);
    }
    CHECK(got == sent);
    CHECK(d.buffered() == 0);
  }
}

TEST_CASE("kafka frame: a view stays valid while more bytes are read into the room prepared before it",
          "[kafka][frame]") {
  frame_decoder d;
  d.feed(api_versions_v0_frame(1) + api_versions_v0_frame(2).substr(0, 6));
  auto room = d.prepare(100);  // a read in progress, as the listener's
  auto first = d.next_view();
  REQUIRE(first.ok());
  REQUIRE(*first);
  auto copy = std::string(**first);
  auto rest = api_versions_v0_frame(2).substr(6);
  std::memcpy(room.first, rest.data(), rest.size());
  d.commit(rest.size());
  CHECK(std::string(**first) == copy);  // next_view moved nothing
  auto second = d.next_view();
  REQUIRE(second.ok());
  REQUIRE(*second);
  CHECK(decode_request(**first)->header.correlation_id == 1);
  CHECK(decode_request(**second)->header.correlation_id == 2);
}

TEST_CASE("kafka frame: a large buffer is released once it holds nothing", "[kafka][frame]") {
  frame_decoder d(16 * 1024 * 1024);
  std::string big(8 * 1024 * 1024, 'x');
  d.feed(std::string("\x00\x80\x00\x00", 4) + big);
  CHECK(d.capacity() >= big.size());
  auto f = d.next_view();
  REQUIRE(f.ok());
  REQUIRE(*f);
  CHECK((*f)->size() == big.size());
  d.prepare(4096);
  CHECK(d.capacity() < big.size());
}

TEST_CASE("kafka frame: a partial size prefix or body waits for more bytes", "[kafka][frame]") {
  frame_decoder d;
  d.feed(unhex("00 00"));
  auto f = d.next();
  REQUIRE(f.ok());
  CHECK_FALSE(*f);
  d.feed(unhex("00 0a 00 12 00 00"));
  f = d.next();
  REQUIRE(f.ok());
  CHECK_FALSE(*f);
  CHECK(d.buffered() == 8);
  d.feed(unhex("00 00 00 01 ff ff"));
  f = d.next();
  REQUIRE(f.ok());
  REQUIRE(*f);
  CHECK((*f)->size() == 10);
}

TEST_CASE("kafka frame: negative, too small and oversized sizes are sticky errors",
          "[kafka][frame]") {
  SECTION("negative") {
    frame_decoder d;
    d.feed(unhex("ff ff ff fe"));
    auto f = d.next();
    REQUIRE_FALSE(f.ok());
    CHECK(f.err().code == errc::negative_size);
    d.feed(api_versions_v0_frame(1));  // ignored: the stream is out of step
    CHECK_FALSE(d.next().ok());
    CHECK(d.failed());
  }
  SECTION("too small for a request header") {
    frame_decoder d;
    d.feed(unhex("00 00 00 09"));
    auto f = d.next();
    REQUIRE_FALSE(f.ok());
    CHECK(f.err().code == errc::frame_too_small);
  }
  SECTION("zero") {
    frame_decoder d;
    d.feed(unhex("00 00 00 00"));
    CHECK(d.next().err().code == errc::frame_too_small);
  }
  SECTION("oversized is refused from the prefix alone") {
    frame_decoder d(1024);
    d.feed(unhex("00 00 04 01"));
    auto f = d.next();
    REQUIRE_FALSE(f.ok());
    CHECK(f.err().code == errc::frame_too_large);
    CHECK(f.err().message.find("1025") != std::string::npos);
  }
  SECTION("exactly the limit is accepted") {
    frame_decoder d(16);
    std::string frame = unhex("00 00 00 10") + std::string(16, '\0');
    d.feed(frame);
    auto f = d.next();
    REQUIRE(f.ok());
    REQUIRE(*f);
  }
}

TEST_CASE("kafka frame: request header v1 and v2", "[kafka][frame]") {
  SECTION("v1 with a null client id") {
    auto p = parse_request_header(unhex("0003 0001 00000007 ffff"));
    REQUIRE(p.ok());
    CHECK(p->header.api_key == 3);
    CHECK(p->header.api_version == 1);
    CHECK(p->header.correlation_id == 7);
    CHECK_FALSE(p->header.client_id);
    CHECK(p->body_offset == 10);
  }
  SECTION("v2 (ApiVersions v3) skips its tagged fields") {
    auto p = parse_request_header(unhex("0012 0003 00000001 0002 6b63 01 00 01 ff 0b"));
    REQUIRE(p.ok());
    CHECK(p->header.client_id == std::string("kc"));
    CHECK(p->body_offset == 16);
  }
  SECTION("unknown keys parse as v1") {
    auto p = parse_request_header(unhex("0063 0000 00000002 0000"));
    REQUIRE(p.ok());
    CHECK(p->header.api_key == 99);
  }
  SECTION("a cut client id names the correlation id") {
    auto p = parse_request_header(unhex("0003 0001 00000007 0005 61"));
    REQUIRE_FALSE(p.ok());
    CHECK(p.err().code == errc::truncated);
    CHECK(p.err().correlation_id == 7);
    CHECK(p.err().api_key == 3);
  }
  SECTION("shorter than the fixed fields") {
    auto p = parse_request_header(unhex("0003 0001 0000"));
    REQUIRE_FALSE(p.ok());
    CHECK(p.err().code == errc::truncated);
    CHECK(p.err().correlation_id == -1);
  }
}

TEST_CASE("kafka frame: response frames carry size and correlation id", "[kafka][frame]") {
  CHECK(frame_response(5, 0, unhex("abcd")) == unhex("00000006 00000005 abcd"));
  CHECK(frame_response(5, 1, unhex("abcd")) == unhex("00000007 00000005 00 abcd"));
}

// Primitive readers/writers: round trips, edge values, and every read past
// the end or malformed length gives an error value.
#include <catch2/catch.hpp>

#include <limits>

#include "kafka/wire.hpp"
#include "samples.hpp"

using namespace moonmq::kafka;
using moonmq::kafka::test::unhex;

TEST_CASE("kafka wire: fixed-width integers are big-endian and round-trip", "[kafka][wire]") {
  writer w;
  REQUIRE(w.i8(-2));
  REQUIRE(w.i16(0x1234));
  REQUIRE(w.i32(-1));
  REQUIRE(w.i64(std::numeric_limits<int64_t>::min()));
  REQUIRE(w.boolean(true));
  CHECK(w.bytes() == unhex("fe 1234 ffffffff 8000000000000000 01"));
  reader r(w.bytes());
  int8_t a = 0;
  int16_t b = 0;
  int32_t c = 0;
  int64_t d = 0;
  bool e = false;
  REQUIRE((r.i8(a) && r.i16(b) && r.i32(c) && r.i64(d) && r.boolean(e)));
  CHECK(a == -2);
  CHECK(b == 0x1234);
  CHECK(c == -1);
  CHECK(d == std::numeric_limits<int64_t>::min());
  CHECK(e);
  CHECK(r.remaining() == 0);
}

TEST_CASE("kafka wire: varints are zigzag LEB128 and round-trip at the edges", "[kafka][wire]") {
  // Kafka protocol guide examples: zigzag 0 -> 00, -1 -> 01, 1 -> 02, 64 -> 80 01.
  writer w;
  REQUIRE((w.varint(0) && w.varint(-1) && w.varint(1) && w.varint(64)));
  CHECK(w.bytes() == unhex("00 01 02 8001"));
  for (int32_t v : {0, 1, -1, 63, -64, 300, std::numeric_limits<int32_t>::max(),
                    std::numeric_limits<int32_t>::min()}) {
    writer w2;
    REQUIRE(w2.varint(v));
    reader r(w2.bytes());
    int32_t back = 0;
    REQUIRE(r.varint(back));
    CHECK(back == v);
    CHECK(r.remaining() == 0);
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1} << 40, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()}) {
    writer w2;
    REQUIRE(w2.varlong(v));
    reader r(w2.bytes());
    int64_t back = 0;
    REQUIRE(r.varlong(back));
    CHECK(back == v);
  }
  for (uint32_t v : {0u, 127u, 128u, 16384u, std::numeric_limits<uint32_t>::max()}) {
    writer w2;
    REQUIRE(w2.uvarint(v));
    reader r(w2.bytes());
    uint32_t back = 1;
    REQUIRE(r.uvarint(back));
    CHECK(back == v);
  }
}

TEST_CASE("kafka wire: over-long and cut varints are errors", "[kafka][wire]") {
  uint32_t u = 0;
  int64_t l = 0;
  const std::string six_bytes = unhex("ff ff ff ff ff 01");
  reader six(six_bytes);
  CHECK_FALSE(six.uvarint(u));
  CHECK(six.err().code == errc::bad_length);
  const std::string big_bytes = unhex("ff ff ff ff 1f");
  reader big(big_bytes);  // 35 bits
  CHECK_FALSE(big.uvarint(u));
  CHECK(big.err().code == errc::bad_length);
  const std::string cut_bytes = unhex("80 80");
  reader cut(cut_bytes);
  CHECK_FALSE(cut.uvarint(u));
  CHECK(cut.err().code == errc::truncated);
  const std::string eleven_bytes = unhex("ff ff ff ff ff ff ff ff ff ff 01");
  reader eleven(eleven_bytes);
  CHECK_FALSE(eleven.varlong(l));
  CHECK(eleven.err().code == errc::bad_length);
  const std::string over64_bytes = unhex("ff ff ff ff ff ff ff ff ff 02");
  reader over64(over64_bytes);
  CHECK_FALSE(over64.varlong(l));
  CHECK(over64.err().code == errc::bad_length);
}

TEST_CASE("kafka wire: strings, bytes and their nullable and compact forms", "[kafka][wire]") {
  writer w;
  REQUIRE(w.string("ab"));
  REQUIRE(w.nullable_string(std::nullopt));
  REQUIRE(w.compact_string("ab"));
  REQUIRE(w.compact_nullable_string(std::nullopt));
  REQUIRE(w.bytes(std::string("\x00", 1)));
  REQUIRE(w.nullable_bytes(std::nullopt));
  REQUIRE(w.compact_bytes(""));
  REQUIRE(w.compact_nullable_bytes(std::string("z")));
  CHECK(w.bytes() == unhex("0002 6162 ffff 03 6162 00 00000001 00 ffffffff 01 02 7a"));
  reader r(w.bytes());
  std::string s;
  std::optional<std::string> o = std::string("x");
  REQUIRE(r.string(s));
  CHECK(s == "ab");
  REQUIRE(r.nullable_string(o));
  CHECK_FALSE(o);
  REQUIRE(r.compact_string(s));
  CHECK(s == "ab");
  REQUIRE(r.compact_nullable_string(o));
  CHECK_FALSE(o);
  REQUIRE(r.bytes(s));
  CHECK(s == std::string("\x00", 1));
  REQUIRE(r.nullable_bytes(o));
  CHECK_FALSE(o);
  REQUIRE(r.compact_bytes(s));
  CHECK(s.empty());
  REQUIRE(r.compact_nullable_bytes(o));
  CHECK(o == std::string("z"));
  CHECK(r.remaining() == 0);
}

TEST_CASE("kafka wire: bad string and bytes lengths are errors, never reads past the end",
          "[kafka][wire]") {
  std::string s;
  std::optional<std::string> o;
  const std::string null_required_bytes = unhex("ffff");
  reader null_required(null_required_bytes);
  CHECK_FALSE(null_required.string(s));
  CHECK(null_required.err().code == errc::bad_length);
  const std::string below_null_bytes = unhex("fffe");
  reader below_null(below_null_bytes);
  CHECK_FALSE(below_null.nullable_string(o));
  CHECK(below_null.err().code == errc::bad_length);
  const std::string too_long_bytes = unhex("0005 6162");
  reader too_long(too_long_bytes);
  CHECK_FALSE(too_long.string(s));
  CHECK(too_long.err().code == errc::truncated);
  const std::string huge_bytes_bytes = unhex("7fffffff 00");
  reader huge_bytes(huge_bytes_bytes);
  CHECK_FALSE(huge_bytes.bytes(s));
  CHECK(huge_bytes.err().code == errc::truncated);
  const std::string compact_null_bytes = unhex("00");
  reader compact_null(compact_null_bytes);
  CHECK_FALSE(compact_null.compact_string(s));
  CHECK(compact_null.err().code == errc::bad_length);
  reader empty("");
  int8_t b = 0;
  CHECK_FALSE(empty.i8(b));
  CHECK(empty.err().code == errc::truncated);
  // Errors are sticky: after a failure nothing more is read.
  const std::string sticky_bytes = unhex("0005 61 00 01");
  reader sticky(sticky_bytes);
  CHECK_FALSE(sticky.string(s));
  CHECK_FALSE(sticky.i8(b));
  CHECK(sticky.position() == 2);
}

TEST_CASE("kafka wire: arrays check their count against the remaining bytes", "[kafka][wire]") {
  writer w;
  std::vector<int32_t> v{1, 2, 3};
  REQUIRE(w.array(v, [&](int32_t x) { return w.i32(x); }));
  REQUIRE(w.nullable_array(std::optional<std::vector<int32_t>>{}, [&](int32_t x) { return w.i32(x); }));
  REQUIRE(w.compact_array(v, [&](int32_t x) { return w.i32(x); }));
  reader r(w.bytes());
  std::vector<int32_t> back;
  std::optional<std::vector<int32_t>> maybe = std::vector<int32_t>{9};
  REQUIRE(r.array(back, [&](int32_t& x) { return r.i32(x); }));
  CHECK(back == v);
  REQUIRE(r.nullable_array(maybe, [&](int32_t& x) { return r.i32(x); }));
  CHECK_FALSE(maybe);
  REQUIRE(r.compact_array(back, [&](int32_t& x) { return r.i32(x); }));
  CHECK(back == v);
  CHECK(r.remaining() == 0);

  // A hostile count fails before allocating.
  const std::string hostile_bytes = unhex("7fffffff 00000001");
  reader hostile(hostile_bytes);
  CHECK_FALSE(hostile.array(back, [&](int32_t& x) { return hostile.i32(x); }));
  CHECK(hostile.err().code == errc::truncated);
  const std::string negative_bytes = unhex("fffffffe");
  reader negative(negative_bytes);
  CHECK_FALSE(negative.array(back, [&](int32_t& x) { return negative.i32(x); }));
  CHECK(negative.err().code == errc::bad_length);
  const std::string null_array_bytes = unhex("ffffffff");
  reader null_array(null_array_bytes);
  CHECK_FALSE(null_array.array(back, [&](int32_t& x) { return null_array.i32(x); }));
  const std::string short_elements_bytes = unhex("00000002 00000001 0000");
  reader short_elements(short_elements_bytes);
  CHECK_FALSE(short_elements.array(back, [&](int32_t& x) { return short_elements.i32(x); }));
  CHECK(short_elements.err().code == errc::truncated);
}

TEST_CASE("kafka wire: tagged fields are skipped, malformed sections refused", "[kafka][wire]") {
  const std::string ok_bytes = unhex("02 00 02 abcd 05 00 ff");
  reader ok(ok_bytes);
  REQUIRE(ok.tagged_fields());
  CHECK(ok.remaining() == 1);
  const std::string unordered_bytes = unhex("02 05 00 01 00");
  reader unordered(unordered_bytes);
  CHECK_FALSE(unordered.tagged_fields());
  CHECK(unordered.err().code == errc::bad_length);
  const std::string cut_bytes = unhex("01 00 05 ab");
  reader cut(cut_bytes);
  CHECK_FALSE(cut.tagged_fields());
  CHECK(cut.err().code == errc::truncated);
  const std::string many_bytes = unhex("7f");
  reader many(many_bytes);
  CHECK_FALSE(many.tagged_fields());
  writer w;
  REQUIRE(w.tagged_fields());
  CHECK(w.bytes() == unhex("00"));
}

TEST_CASE("kafka wire: the writer refuses values beyond their length prefix", "[kafka][wire]") {
  writer w;
  CHECK_FALSE(w.string(std::string(40000, 'a')));
  CHECK(w.err().code == errc::value_too_large);
  CHECK_FALSE(w.ok());
}

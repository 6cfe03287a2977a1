#include "kafka/wire.hpp"

#include <type_traits>

namespace moonmq::kafka {

bool reader::fail(errc code, std::string what) {
  if (!failed_) {
    failed_ = true;
    err_ = make_error(code, std::move(what) + " at byte " + std::to_string(pos_));
  }
  return false;
}

bool reader::raw(size_t n, std::string_view& out) {
  if (failed_)
    return false;
  if (n > remaining())
    return fail(errc::truncated, "need " + std::to_string(n) + " bytes, have " +
                                     std::to_string(remaining()));
  out = b_.substr(pos_, n);
  pos_ += n;
  return true;
}

template <class T>
bool reader::fixed(T& out) {
  std::string_view s;
  if (!raw(sizeof(T), s))
    return false;
  uint64_t v = 0;
  for (char c : s)
    v = (v << 8) | static_cast<uint8_t>(c);
  out = static_cast<T>(v);
  return true;
}

bool reader::i8(int8_t& out) { return fixed(out); }
bool reader::i16(int16_t& out) { return fixed(out); }
bool reader::i32(int32_t& out) { return fixed(out); }
bool reader::i64(int64_t& out) { return fixed(out); }

bool reader::boolean(bool& out) {
  int8_t v = 0;
  if (!i8(v))
    return false;
  out = v != 0;
  return true;
}

namespace {
// LEB128 of at most `max_bytes` bytes; false on truncation or overflow.
enum class leb { ok, truncated, too_long };
leb read_leb(std::string_view b, size_t& pos, int max_bytes, uint64_t& out) {
  uint64_t v = 0;
  for (int i = 0; i < max_bytes; ++i) {
    if (pos >= b.size())
      return leb::truncated;
    auto byte = static_cast<uint8_t>(b[pos++]);
    v |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      out = v;
      return leb::ok;
    }
  }
  return leb::too_long;
}
}  // namespace

bool reader::uvarint(uint32_t& out) {
  if (failed_)
    return false;
  uint64_t v = 0;
  switch (read_leb(b_, pos_, 5, v)) {
    case leb::truncated: return fail(errc::truncated, "unsigned varint cut short");
    case leb::too_long: return fail(errc::bad_length, "unsigned varint longer than 5 bytes");
    case leb::ok: break;
  }
  if (v > std::numeric_limits<uint32_t>::max())
    return fail(errc::bad_length, "unsigned varint above 2^32-1");
  out = static_cast<uint32_t>(v);
  return true;
}

bool reader::varint(int32_t& out) {
  uint32_t raw_v = 0;
  if (!uvarint(raw_v))
    return false;
  out = static_cast<int32_t>(raw_v >> 1) ^ -static_cast<int32_t>(raw_v & 1);
  return true;
}

bool reader::varlong(int64_t& out) {
  if (failed_)
    return false;
  uint64_t v = 0;
  const size_t start = pos_;
  switch (read_leb(b_, pos_, 10, v)) {
    case leb::truncated: return fail(errc::truncated, "varlong cut short");
    case leb::too_long: return fail(errc::bad_length, "varlong longer than 10 bytes");
    case leb::ok: break;
  }
  // A 10th byte may only carry the 64th bit.
  if (pos_ - start == 10 && static_cast<uint8_t>(b_[pos_ - 1]) > 1)
    return fail(errc::bad_length, "varlong above 64 bits");
  out = static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  return true;
}

bool reader::take_string(int64_t len, bool nullable, std::optional<std::string>& out) {
  if (len == -1 && nullable) {
    out.reset();
    return true;
  }
  if (len < 0)
    return fail(errc::bad_length, nullable ? "length below -1" : "null where a value is required");
  std::string_view s;
  if (!raw(static_cast<size_t>(len), s))
    return false;
  out.emplace(s);
  return true;
}

bool reader::string(std::string& out) {
  int16_t len = 0;
  std::optional<std::string> s;
  if (!i16(len) || !take_string(len, false, s))
    return false;
  out = std::move(*s);
  return true;
}

bool reader::nullable_string(std::optional<std::string>& out) {
  int16_t len = 0;
  return i16(len) && take_string(len, true, out);
}

bool reader::compact_string(std::string& out) {
  uint32_t n = 0;
  std::optional<std::string> s;
  if (!uvarint(n) || !take_string(static_cast<int64_t>(n) - 1, false, s))
    return false;
  out = std::move(*s);
  return true;
}

bool reader::compact_nullable_string(std::optional<std::string>& out) {
  uint32_t n = 0;
  return uvarint(n) && take_string(static_cast<int64_t>(n) - 1, true, out);
}

bool reader::bytes(std::string& out) {
  int32_t len = 0;
  std::optional<std::string> s;
  if (!i32(len) || !take_string(len, false, s))
    return false;
  out = std::move(*s);
  return true;
}

bool reader::nullable_bytes(std::optional<std::string>& out) {
  int32_t len = 0;
  return i32(len) && take_string(len, true, out);
}

bool reader::compact_bytes(std::string& out) { return compact_string(out); }

bool reader::compact_nullable_bytes(std::optional<std::string>& out) {
  return compact_nullable_string(out);
}

bool reader::tagged_fields() {
  uint32_t n = 0;
  if (!uvarint(n))
    return false;
  if (n > remaining())
    return fail(errc::truncated, "tagged field count " + std::to_string(n) +
                                     " exceeds the remaining bytes");
  int64_t last_tag = -1;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t tag = 0;
    uint32_t size = 0;
    std::string_view skipped;
    if (!uvarint(tag) || !uvarint(size))
      return false;
    if (static_cast<int64_t>(tag) <= last_tag)
      return fail(errc::bad_length, "tagged fields out of order");
    last_tag = tag;
    if (!raw(size, skipped))
      return false;
  }
  return true;
}

// ---- writer ----

bool writer::fail(std::string what) {
  if (!failed_) {
    failed_ = true;
    err_ = make_error(errc::value_too_large, std::move(what));
  }
  return false;
}

template <class T>
bool writer::fixed(T v) {
  const auto u = static_cast<std::make_unsigned_t<T>>(v);
  for (size_t i = 0; i < sizeof(T); ++i)
    out_.push_back(static_cast<char>((static_cast<uint64_t>(u) >> (8 * (sizeof(T) - 1 - i))) & 0xff));
  return ok();
}

bool writer::i8(int8_t v) { return fixed(v); }
bool writer::i16(int16_t v) { return fixed(v); }
bool writer::i32(int32_t v) { return fixed(v); }
bool writer::i64(int64_t v) { return fixed(v); }
bool writer::boolean(bool v) { return i8(v ? 1 : 0); }

bool writer::uvarint(uint32_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
  return ok();
}

bool writer::varint(int32_t v) {
  return uvarint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}

bool writer::varlong(int64_t v) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out_.push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out_.push_back(static_cast<char>(z));
  return ok();
}

bool writer::raw(std::string_view v) {
  out_.append(v);
  return ok();
}

bool writer::string(std::string_view v) {
  if (v.size() > static_cast<size_t>(std::numeric_limits<int16_t>::max()))
    return fail("string of " + std::to_string(v.size()) + " bytes exceeds int16 length");
  return i16(static_cast<int16_t>(v.size())) && raw(v);
}

bool writer::nullable_string(const std::optional<std::string>& v) {
  return v ? string(*v) : i16(-1);
}

bool writer::compact_string(std::string_view v) {
  if (v.size() >= std::numeric_limits<uint32_t>::max())
    return fail("compact string too long");
  return uvarint(static_cast<uint32_t>(v.size() + 1)) && raw(v);
}

bool writer::compact_nullable_string(const std::optional<std::string>& v) {
  return v ? compact_string(*v) : uvarint(0);
}

bool writer::bytes(std::string_view v) {
  if (v.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return fail("bytes of " + std::to_string(v.size()) + " exceed int32 length");
  return i32(static_cast<int32_t>(v.size())) && raw(v);
}

bool writer::nullable_bytes(const std::optional<std::string>& v) {
  return v ? bytes(*v) : i32(-1);
}

bool writer::compact_bytes(std::string_view v) { return compact_string(v); }

bool writer::compact_nullable_bytes(const std::optional<std::string>& v) {
  return compact_nullable_string(v);
}

bool writer::count(size_t n) {
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return fail("array of " + std::to_string(n) + " elements exceeds int32 count");
  return i32(static_cast<int32_t>(n));
}

void writer::patch_i32(size_t pos, int32_t v) {
  // Callers patch a prefix they wrote themselves; out of range is a bug.
  auto u = static_cast<uint32_t>(v);
  for (size_t i = 0; i < 4; ++i)
    out_.at(pos + i) = static_cast<char>((u >> (8 * (3 - i))) & 0xff);
}

}  // namespace moonmq::kafka

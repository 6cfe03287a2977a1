#pragma once
// Kafka protocol primitive types: a bounds-checked reader over untrusted
// bytes and a writer that appends to a string. Source: Kafka protocol guide,
// "Protocol Primitive Types" (big-endian ints; varint/varlong are zigzag
// LEB128; unsigned varint is plain LEB128; string = int16 length + UTF-8,
// -1 = null; bytes = int32 length, -1 = null; array = int32 count, -1 =
// null; compact variants (KIP-482) use unsigned varint N+1, 0 = null;
// tagged fields = uvarint count, then (uvarint tag, uvarint size, bytes)).
//
// Reader and writer share method names, so one schema function template
// `template <class Io, class M> bool io(Io& f, int16_t v, M& m)` both decodes
// (Io = reader, M = T) and encodes (Io = writer, M = const T). Every method
// returns false on failure and the first failure is kept (err()); after a
// failure every later call fails too. Reading never goes past the end.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kafka/errors.hpp"

namespace moonmq::kafka {

/// Bounds-checked cursor over a request/response body. Does not own the bytes.
class reader {
 public:
  explicit reader(std::string_view bytes) : b_(bytes) {}

  bool ok() const { return !failed_; }
  /// The first failure (code truncated or bad_length, message names the
  /// primitive and byte position); only after !ok().
  const error& err() const { return err_; }
  size_t position() const { return pos_; }
  size_t remaining() const { return b_.size() - pos_; }

  bool i8(int8_t& out);
  bool i16(int16_t& out);
  bool i32(int32_t& out);
  bool i64(int64_t& out);
  bool boolean(bool& out);  ///< int8, non-zero = true
  bool uvarint(uint32_t& out);  ///< at most 5 bytes
  bool varint(int32_t& out);    ///< zigzag, at most 5 bytes
  bool varlong(int64_t& out);   ///< zigzag, at most 10 bytes
  /// `n` raw bytes as a view into the input.
  bool raw(size_t n, std::string_view& out);

  bool string(std::string& out);  ///< int16 length >= 0
  bool nullable_string(std::optional<std::string>& out);
  bool compact_string(std::string& out);
  bool compact_nullable_string(std::optional<std::string>& out);
  bool bytes(std::string& out);  ///< int32 length >= 0
  bool nullable_bytes(std::optional<std::string>& out);
  bool compact_bytes(std::string& out);
  bool compact_nullable_bytes(std::optional<std::string>& out);

  /// int32 count (>= 0) then `count` elements read by fn(T&) -> bool. Every
  /// element of the supported schemas takes at least one byte, so a count
  /// above remaining() is refused before any allocation.
  template <class T, class Fn>
  bool array(std::vector<T>& out, Fn fn) {
    int32_t n = 0;
    return i32(n) && elements(n, out, fn);
  }
  /// As array; count -1 gives nullopt.
  template <class T, class Fn>
  bool nullable_array(std::optional<std::vector<T>>& out, Fn fn) {
    int32_t n = 0;
    if (!i32(n))
      return false;
    if (n == -1) {
      out.reset();
      return true;
    }
    out.emplace();
    return elements(n, *out, fn);
  }
  /// Unsigned varint N+1 then N elements (KIP-482); 0 (null) is refused.
  template <class T, class Fn>
  bool compact_array(std::vector<T>& out, Fn fn) {
    uint32_t n = 0;
    if (!uvarint(n))
      return false;
    if (n == 0)
      return fail(errc::bad_length, "compact array is null");
    return elements(static_cast<int64_t>(n) - 1, out, fn);
  }

  /// Reads a tagged-field section and skips every field (none is known to
  /// the supported versions). Tags must be strictly increasing.
  bool tagged_fields();

 private:
  template <class T, class Fn>
  bool elements(int64_t n, std::vector<T>& out, Fn& fn) {
    if (n < 0)
      return fail(errc::bad_length, "negative array count");
    if (static_cast<uint64_t>(n) > remaining())
      return fail(errc::truncated, "array count " + std::to_string(n) +
                                       " exceeds the " + std::to_string(remaining()) +
                                       " remaining bytes");
    out.clear();
    out.resize(static_cast<size_t>(n));
    for (auto& e : out)
      if (!fn(e))
        return false;
    return ok();
  }
  template <class T>
  bool fixed(T& out);  // big-endian integer of sizeof(T) bytes
  bool fail(errc code, std::string what);
  bool take_string(int64_t len, bool nullable, std::optional<std::string>& out);

  std::string_view b_;
  size_t pos_ = 0;
  bool failed_ = false;
  error err_;
};

/// Appends Kafka primitives to a string it owns.
class writer {
 public:
  writer() = default;

  bool ok() const { return !failed_; }
  /// The first failure (value_too_large); only after !ok().
  const error& err() const { return err_; }
  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }
  size_t size() const { return out_.size(); }

  bool i8(int8_t v);
  bool i16(int16_t v);
  bool i32(int32_t v);
  bool i64(int64_t v);
  bool boolean(bool v);
  bool uvarint(uint32_t v);
  bool varint(int32_t v);
  bool varlong(int64_t v);
  bool raw(std::string_view v);

  bool string(std::string_view v);  ///< fails above 32767 bytes
  bool nullable_string(const std::optional<std::string>& v);
  bool compact_string(std::string_view v);
  bool compact_nullable_string(const std::optional<std::string>& v);
  bool bytes(std::string_view v);  ///< fails above 2^31-1 bytes
  bool nullable_bytes(const std::optional<std::string>& v);
  bool compact_bytes(std::string_view v);
  bool compact_nullable_bytes(const std::optional<std::string>& v);

  template <class T, class Fn>
  bool array(const std::vector<T>& v, Fn fn) {
    if (!count(v.size()))
      return false;
    for (const auto& e : v)
      if (!fn(e))
        return false;
    return ok();
  }
  template <class T, class Fn>
  bool nullable_array(const std::optional<std::vector<T>>& v, Fn fn) {
    if (!v)
      return i32(-1);
    return array(*v, fn);
  }
  template <class T, class Fn>
  bool compact_array(const std::vector<T>& v, Fn fn) {
    if (v.size() >= std::numeric_limits<uint32_t>::max())
      return fail("compact array too long");
    if (!uvarint(static_cast<uint32_t>(v.size() + 1)))
      return false;
    for (const auto& e : v)
      if (!fn(e))
        return false;
    return ok();
  }
  /// An empty tagged-field section (one 0 byte).
  bool tagged_fields() { return uvarint(0); }

  /// Overwrites 4 bytes at `pos` with big-endian `v` (frame size prefix).
  void patch_i32(size_t pos, int32_t v);

 private:
  template <class T>
  bool fixed(T v);  // big-endian integer of sizeof(T) bytes
  bool count(size_t n);
  bool fail(std::string what);

  std::string out_;
  bool failed_ = false;
  error err_;
};

}  // namespace moonmq::kafka

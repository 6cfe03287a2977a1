#pragma once
// Internal helpers for the schema functions in *_types.cpp (not installed
// API): each message has one `template <class Io, class M> bool io_<name>(Io&,
// int16_t version, M&)` that MOONMQ_KAFKA_CODEC turns into decode/encode.

#include <optional>
#include <vector>

#include "kafka/wire.hpp"

namespace moonmq::kafka::schema {

/// A non-nullable array mapped to std::optional: reading, an empty array
/// gives nullopt when `empty_is_null` (Metadata v0 "all topics"), else an
/// empty vector; writing, nullopt is written as an empty array.
template <class T, class Fn>
bool optional_as_array(reader& r, std::optional<std::vector<T>>& v, bool empty_is_null, Fn fn) {
  std::vector<T> items;
  if (!r.array(items, fn))
    return false;
  if (items.empty() && empty_is_null)
    v.reset();
  else
    v = std::move(items);
  return true;
}

template <class T, class Fn>
bool optional_as_array(writer& w, const std::optional<std::vector<T>>& v, bool, Fn fn) {
  return v ? w.array(*v, fn) : w.i32(0);
}

/// One schema function for a message with classic and flexible versions
/// (KIP-482): wraps the reader or writer and picks, per call, the compact
/// form of strings and arrays and writes/reads tagged-field sections only
/// when `flexible`. Fixed-width fields are the same in both.
template <class Io>
struct flex {
  Io& f;
  bool flexible;

  template <class T> bool i8(T& v) { return f.i8(v); }
  template <class T> bool i16(T& v) { return f.i16(v); }
  template <class T> bool i32(T& v) { return f.i32(v); }
  template <class T> bool i64(T& v) { return f.i64(v); }
  template <class T> bool boolean(T& v) { return f.boolean(v); }
  template <class S> bool string(S& s) { return flexible ? f.compact_string(s) : f.string(s); }
  template <class S> bool nullable_string(S& s) {
    return flexible ? f.compact_nullable_string(s) : f.nullable_string(s);
  }
  template <class V, class Fn> bool array(V& v, Fn fn) {
    return flexible ? f.compact_array(v, fn) : f.array(v, fn);
  }
  /// The tagged-field section that ends every flexible struct (none in
  /// classic versions; read ones are skipped).
  bool tags() { return !flexible || f.tagged_fields(); }
};

}  // namespace moonmq::kafka::schema

/// Defines decode(reader&, int16_t, T&) and encode(writer&, int16_t, const
/// T&) from io_T.
#define MOONMQ_KAFKA_CODEC(T)                                                       \
  bool decode(reader& r, int16_t version, T& out) { return io_##T(r, version, out); } \
  bool encode(writer& w, int16_t version, const T& in) { return io_##T(w, version, in); }

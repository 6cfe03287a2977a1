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

}  // namespace moonmq::kafka::schema

/// Defines decode(reader&, int16_t, T&) and encode(writer&, int16_t, const
/// T&) from io_T.
#define MOONMQ_KAFKA_CODEC(T)                                                       \
  bool decode(reader& r, int16_t version, T& out) { return io_##T(r, version, out); } \
  bool encode(writer& w, int16_t version, const T& in) { return io_##T(w, version, in); }

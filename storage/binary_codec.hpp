#pragma once
// Fixed-width little-endian fields for the storage layer's own small files
// (storage/chain_summary.hpp). Readers advance a string_view and report a
// short input as false, never reading past it.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace moonmq::storage::codec {

template <typename T>
void put(std::string& out, T v) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  auto u = static_cast<U>(v);
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

template <typename T>
bool get(std::string_view& in, T& v) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  if (in.size() < sizeof(T))
    return false;
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    u |= static_cast<U>(static_cast<U>(static_cast<unsigned char>(in[i])) << (8 * i));
  v = static_cast<T>(u);
  in.remove_prefix(sizeof(T));
  return true;
}

}  // namespace moonmq::storage::codec

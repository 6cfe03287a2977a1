#include "net/http_types.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace moonmq::transport {

namespace {
bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

int hex(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}
}  // namespace

const std::string* http_request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name))
      return &v;
  return nullptr;
}

http_response http_response::json(int status, std::string body) {
  http_response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

http_response http_response::error(int status, std::string_view code, std::string_view message) {
  nlohmann::json j{{"error", code}, {"message", message}};
  return json(status, j.dump());
}

std::optional<std::string> url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size())
      return std::nullopt;
    int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

bool constant_time_equals(std::string_view a, std::string_view b) {
  size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0U : 1U;
  for (size_t i = 0; i < n; ++i) {
    unsigned ca = i < a.size() ? static_cast<unsigned char>(a[i]) : 0U;
    unsigned cb = i < b.size() ? static_cast<unsigned char>(b[i]) : 0U;
    diff |= ca ^ cb;
  }
  return diff == 0;
}

}  // namespace moonmq::transport

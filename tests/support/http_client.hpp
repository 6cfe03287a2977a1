#pragma once
// Blocking HTTP helpers for tests (Beast on a private io_context).

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace moonmq::test {

struct http_result {
  int status = 0;  ///< 0 when the exchange failed (see error)
  std::string body;
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string error;
};

using header_list = std::vector<std::pair<std::string, std::string>>;

/// One request on a fresh connection to 127.0.0.1:`port`.
http_result http_call(uint16_t port, const std::string& method, const std::string& target,
                      const std::string& body = {}, const header_list& headers = {},
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// Writes `bytes` as they are and reads until the peer closes or `timeout`
/// passes; returns what was read. Sets `closed` when the peer closed.
std::string raw_exchange(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                         bool* closed = nullptr);

/// The status code of the first HTTP response in `raw` (0 if none).
int status_of(const std::string& raw);

}  // namespace moonmq::test

#pragma once
// A blocking HTTP/1.1 client (Beast on a private io_context) for programs
// and tests: moonmqctl, integration tests, benchmarks. Never used on an
// actor or Asio thread of the node.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace moonmq::transport {

struct http_result {
  int status = 0;  ///< 0 when the exchange failed (see error)
  std::string body;
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string error;
};

using header_list = std::vector<std::pair<std::string, std::string>>;

/// One request on a fresh connection to `host`:`port`.
http_result http_call(const std::string& host, uint16_t port, const std::string& method, const std::string& target,
                      const std::string& body = {}, const header_list& headers = {},
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// The same on 127.0.0.1.
inline http_result http_call(uint16_t port, const std::string& method, const std::string& target,
                             const std::string& body = {}, const header_list& headers = {},
                             std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  return http_call("127.0.0.1", port, method, target, body, headers, timeout);
}

/// Splits "host:port" (or "http://host:port[/]"); false when malformed.
bool split_host_port(const std::string& address, std::string& host, uint16_t& port);

/// A keep-alive connection for many requests to one server (reconnects
/// once when the server closed it).
class http_connection {
public:
  http_connection(std::string host, uint16_t port);
  ~http_connection();
  http_connection(const http_connection&) = delete;
  http_connection& operator=(const http_connection&) = delete;
  /// One request; `headers` are sent as given (a body without a
  /// Content-Type among them is sent as application/json).
  http_result call(const std::string& method, const std::string& target, const std::string& body = {},
                   std::chrono::milliseconds timeout = std::chrono::seconds(10), const header_list& headers = {});

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace moonmq::transport

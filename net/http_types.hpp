#pragma once
// Plain HTTP request/response values passed between the shared server
// (net/http_server.hpp) and route handlers. No Beast or Asio types here,
// so handlers and actors never depend on the networking library.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moonmq::transport {

struct http_request {
  std::string method;  ///< "GET", "POST", ...
  std::string target;  ///< as sent: path plus query
  std::string path;    ///< percent-decoded path without the query
  std::map<std::string, std::string> query;   ///< decoded query parameters
  std::map<std::string, std::string> params;  ///< route parameters ({id} in a pattern)
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lower-cased
  std::string body;
  std::string remote;  ///< peer address "ip:port"
  /// Set by the handler of a `pipelining::together` route before it
  /// returns when some of its order-sensitive work is not issued yet (a
  /// produce forwarded to another broker): the next request of the
  /// connection then waits for this one's answer (router.hpp).
  bool hold_pipeline = false;

  /// The first header named `name` (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

struct http_response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;

  /// A JSON answer with `status`.
  static http_response json(int status, std::string body);
  /// The error shape of CONTRACT §3: {"error":"<code>","message":"..."}.
  static http_response error(int status, std::string_view code, std::string_view message);
};

/// Completes a request. May be called from any thread, exactly once; the
/// server writes the answer on the connection's own strand.
using responder = std::function<void(http_response)>;

/// A route handler: answers now or later through `respond`.
using handler = std::function<void(http_request& req, responder respond)>;

/// Percent-decodes `s` ('+' stays '+'); nullopt on a malformed escape.
std::optional<std::string> url_decode(std::string_view s);

/// Compares two secrets in time independent of where they differ
/// (only the length leaks).
bool constant_time_equals(std::string_view a, std::string_view b);

}  // namespace moonmq::transport

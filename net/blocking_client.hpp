#pragma once
// A blocking HTTP/1.1 client (Beast on a private io_context) for programs
// and tests: moonmqctl, integration tests, benchmarks. Never used on an
// actor or Asio thread of the node.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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

/// HTTP/1.1 pipelining on one keep-alive connection (RFC 9112 §9.3.2), for
/// programs that send many requests whose order matters (moonmqctl
/// produce): each request is written without waiting for the answers of
/// the earlier ones, at most `depth` are unanswered, and the answers come
/// back in request order. Writing and reading run at the same time, so
/// large answers never block the requests behind them. Single-threaded:
/// the I/O runs inside send() and next().
class http_pipeline {
public:
  /// `depth` >= 1 (1: one request at a time); `timeout` bounds the connect
  /// and each write and each answer's read.
  http_pipeline(std::string host, uint16_t port, int depth, std::chrono::milliseconds timeout);
  ~http_pipeline();
  http_pipeline(const http_pipeline&) = delete;
  http_pipeline& operator=(const http_pipeline&) = delete;

  /// Queues one request (sent from `body` as given; a body without a
  /// Content-Type among `headers` is sent as application/json) and runs the
  /// connection until fewer than `depth` requests are unanswered. Connects
  /// first when there is no connection, or when the server closed an idle
  /// one.
  void send(const std::string& method, const std::string& target, std::string body, const header_list& headers);

  /// The answer of the oldest request whose answer was not taken yet:
  /// waits for it when `wait`, else returns what is already in (nullopt
  /// when none is, or nothing is outstanding). A failed connection answers
  /// each request it left unanswered with status 0 and the error; so does
  /// an answer with Connection: close for the requests behind it. After a
  /// failed write the answers already sent by the server are still read
  /// (a stopping node answers what it read, then closes); the rest fail
  /// once reading fails too.
  std::optional<http_result> next(bool wait);

  /// Requests sent whose answers next() has not returned yet.
  size_t outstanding() const;

  /// A body string of an answered request, emptied but with its capacity
  /// (a fresh one when none is spare): reusing it saves the page faults of
  /// a new buffer of the same size.
  std::string spare_body();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace moonmq::transport

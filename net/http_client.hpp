#pragma once
// Asynchronous HTTP/1.1 client for one peer (host:port), running on the
// node's io_pool: the broker-to-broker transport (DESIGN §3, "peer").
// Beast, Asio and OpenSSL stay inside http_client.cpp.
//
// Connections: at most max_connections keep-alive connections to the peer,
// opened on demand; a request takes an idle one or opens a new one, else it
// waits in a FIFO queue. A connection is reused only after a complete
// response that allows keep-alive; one that failed, timed out, was answered
// with "Connection: close" or was closed by the peer is dropped. An idle
// connection is checked before reuse (a peer that closed it or sent
// unsolicited bytes makes it dropped, not used).
//
// Timeouts: each request has one deadline, fixed when request() is called,
// that covers the wait in the queue, connect, TLS handshake, write and read.
//
// Retries: at most one, and only for a request marked idempotent whose
// attempt failed after a connection was established (writing the request or
// waiting for the answer) but before any byte of the response arrived —
// typically a kept-alive connection the peer had just closed. Connect and
// TLS failures, timeouts and partial responses are never retried. A retry
// runs on another connection within the same deadline.
//
// Threads: request() and close() are safe from any thread. Every callback is
// called exactly once, on an Asio thread of the pool (serialised per client);
// it must not block — post the result into an actor. All I/O of one client
// runs on one strand.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "peers/peer_link.hpp"

namespace moonmq::transport {

class io_pool;      // net/http_server.hpp
class tls_context;  // net/tls.hpp

/// Why a request failed (category "moonmq.http_client").
enum class client_error {
  timeout = 1,        ///< the deadline passed (queue, connect, TLS, write or read)
  closed,             ///< the client was closed before the answer arrived
  queue_full,         ///< max_queued requests were already waiting
  resolve_failed,     ///< the peer host name did not resolve
  connect_failed,     ///< TCP connect refused or unreachable
  tls_failed,         ///< TLS handshake failed (verification, protocol)
  connection_lost,    ///< the connection broke before the response was complete
  bad_response,       ///< the peer's answer is not valid HTTP or exceeds the limits
  bad_request,        ///< the request could not be formed (e.g. unknown method)
};

const std::error_category& client_error_category();
std::error_code make_error_code(client_error e);


struct http_client_options {
  std::string name = "peer";  ///< label in logs (e.g. the peer's broker id)
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int max_connections = 4;  ///< keep-alive connections to the peer, at least 1
  std::chrono::milliseconds timeout{5000};  ///< default per-request deadline (Cluster.PeerTimeout)
  std::size_t max_queued = 10000;           ///< waiting requests beyond this fail with queue_full
  std::uint64_t max_response_bytes = 64ull * 1024 * 1024;  ///< larger bodies fail with bad_response
  /// Client-role context (tls_context::make_client); null = plaintext.
  std::shared_ptr<const tls_context> tls;
};

class http_client final : public peer_link {
public:
  /// Opens nothing yet; connections are made by the first requests.
  /// Throws std::invalid_argument when options.tls is a server-role context
  /// (a wiring mistake, not a runtime condition).
  http_client(io_pool& pool, http_client_options options);
  /// Closes the client (see close()).
  ~http_client() override;
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// Sends one request; `done` is called exactly once with the answer (any
  /// HTTP status counts as an answer) or the error. After close(), fails at
  /// once with client_error::closed.
  void request(peer_request req, peer_callback done) override;

  /// The same with positional arguments; `timeout` 0 = the default.
  void request(std::string method, std::string target, std::string body, peer_headers headers,
               std::chrono::milliseconds timeout, peer_callback done, bool idempotent = false);

  /// Fails every queued and in-flight request with client_error::closed and
  /// closes every connection. Idempotent. Called from outside the client's
  /// callbacks it returns once those callbacks have run (it waits at most
  /// 2 s, and not at all when the io_pool is already stopped).
  void close() override;

  /// Connections currently open (idle, busy or connecting).
  int open_connections() const override;
  /// Connections opened since construction (a measure of reuse).
  int connections_opened() const override;

  struct impl;  ///< implementation detail (http_client.cpp)

private:
  std::shared_ptr<impl> impl_;
};

}  // namespace moonmq::transport

namespace std {
template <>
struct is_error_code_enum<moonmq::transport::client_error> : true_type {};
}  // namespace std

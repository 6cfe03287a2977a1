#pragma once
// The one HTTP/1.1 server component behind every listener (admin, client,
// cluster). Beast and Asio stay inside http_server.cpp.
//
// Behaviour: keep-alive and HTTP/1.1 pipelining (RFC 9112 §9.3.2): the
// next request of a connection is read while earlier ones are handled, and
// answers are written strictly in request order. At most max_pipelined
// requests of a connection are unanswered, and none is read while the
// unanswered ones' bodies total max_body_bytes or more, so one connection
// holds at most about twice max_body_bytes of request bodies. A request
// starts as its route's pipelining mode allows (router.hpp): a `together`
// route's request (produce) while earlier `together` ones still wait for
// their answers, any other once every earlier answer is written (so at most
// one such answer, e.g. a large fetch, waits to be written), the next
// waiting for its answer. A request with Connection: close (or HTTP/1.0
// without keep-alive) is the connection's last: later bytes are not read,
// and the connection closes after its answer; so does the last answer
// written while the server stops, and a request read after it is dropped
// without running (RFC 9112 §9.6). A client that ends its sending side
// still gets the answers to every request it sent. After the last answer
// the server ends its sending side, then reads and discards what the
// client still sends until it closes (at most 1 s and 1 MiB) before it
// closes the socket: closing with unread bytes would send a reset, which
// can destroy answers the client has not read yet (RFC 9112 §9.6).
//
// A request whose Content-Length exceeds max_body_bytes is answered 413
// before its body is read (chunked bodies are cut off at the same limit);
// malformed HTTP (in a header or a chunked body) gets 400; both come after
// the answers due before them and close the connection. A header not complete within header_timeout closes
// the connection (also the idle timeout between keep-alive requests; it
// runs only while no answer is due); connections beyond max_connections get
// 503 and are closed. Handlers answer through a thread-safe responder, so
// no Asio thread ever blocks on an actor's reply.
//
// TLS (optional, http_server_options::tls): every connection first completes
// a TLS handshake within header_timeout (a failed handshake, e.g. plaintext
// HTTP or a missing/untrusted client certificate under Verify=required,
// closes the connection without an HTTP answer); everything else above is
// unchanged and runs inside the TLS session.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include "net/router.hpp"

namespace moonmq::transport {

class tls_context;  // net/tls.hpp

/// Asio threads shared by every listener and HTTP client of a node.
class io_pool {
public:
  explicit io_pool(int threads);
  ~io_pool();
  io_pool(const io_pool&) = delete;
  io_pool& operator=(const io_pool&) = delete;

  /// Stops the event loop and joins the threads (idempotent).
  void stop();
  /// The io_context, type-erased (transport-internal users cast it back).
  void* native();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

struct http_server_options {
  std::string name = "http";  ///< listener name in logs and metrics labels
  std::string host = "127.0.0.1";
  uint16_t port = 0;  ///< 0 = ephemeral (see http_server::port)
  int64_t max_body_bytes = 16 * 1024 * 1024;
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{60000};
  int max_connections = 1024;
  /// Unanswered requests of one connection at most (HTTP/1.1 pipelining):
  /// the next request is read only while fewer are unanswered and their
  /// bodies total less than max_body_bytes.
  int max_pipelined = 16;
  /// Server-role context (tls_context::make_server); null = plaintext.
  std::shared_ptr<const tls_context> tls;
};

class http_server {
public:
  http_server(io_pool& pool, http_server_options options, std::shared_ptr<const router> routes);
  ~http_server();

  /// Binds and starts accepting. Errors: the bind/listen failure (address in
  /// use, permission, unresolvable host).
  std::error_code start();

  /// The bound port (after start).
  uint16_t port() const;

  /// Stops accepting, lets in-flight requests finish for up to `drain`,
  /// then closes every connection. Idempotent.
  void stop(std::chrono::milliseconds drain);

  /// Requests read and not answered yet (pipelined ones waiting to start
  /// included).
  int in_flight() const;

  struct impl;  ///< implementation detail (http_server.cpp)

private:
  std::shared_ptr<impl> impl_;
};

}  // namespace moonmq::transport

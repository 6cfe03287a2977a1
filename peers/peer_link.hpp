#pragma once
// How this broker reaches one peer broker, independent of the transport:
// a request (method, target, JSON body, headers, one deadline) answered
// once with a status and body, or an error. The actors reach peers only
// through this interface (peers/peer_survey.hpp, peers/peer_directory.hpp);
// net/http_client.hpp implements it over HTTP/1.1 (Beast), and the node
// (node/node_actors.cpp) hands each peer its client. No Asio, no CAF.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace moonmq::transport {

/// Request headers, in order (name, value).
using peer_headers = std::vector<std::pair<std::string, std::string>>;

/// One request to a peer's cluster listener.
struct peer_request {
  std::string method = "GET";
  std::string target = "/";  ///< path plus query, already encoded
  std::string body;          ///< sent with Content-Type application/json unless headers set one
  peer_headers headers;
  std::chrono::milliseconds timeout{0};  ///< 0 = the link's default deadline (Cluster.PeerTimeout)
  bool idempotent = false;               ///< the link may retry it once (net/http_client.hpp says when)
};

/// A peer's answer to one request, or why there is none.
struct peer_result {
  int status = 0;  ///< HTTP status; 0 when the exchange failed (see error)
  std::string body;
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::error_code error;                       ///< empty on success (a transport's own category otherwise)
  std::string error_message;  ///< detail for logs: what failed and why ("connect 10.0.0.2:9095: Connection refused")
  int attempts = 0;           ///< 1, or 2 when the request was retried
  /// On a failure: the link knows the request never left this broker (no
  /// connection, a full queue, a closed link, a deadline passed before it
  /// was written), so the peer cannot have acted on it. False when it may
  /// have (a write began; an answer lost or late).
  bool unsent = false;

  bool ok() const { return !error; }
};

using peer_callback = std::function<void(peer_result)>;

/// The link to one peer. Implementations are safe from any thread; every
/// callback runs exactly once, on a thread of the transport, and must not
/// block (post the result into an actor).
class peer_link {
public:
  virtual ~peer_link() = default;
  /// Sends one request; `done` gets the answer (any status counts) or the
  /// error. After close(), fails at once.
  virtual void request(peer_request req, peer_callback done) = 0;
  /// Fails whatever is pending and closes the link. Idempotent. May wait
  /// for the pending callbacks to run (http_client: up to 2 s), so it is
  /// never called from one of the link's own callbacks.
  virtual void close() = 0;
  /// Connections currently open (for /admin/actors).
  virtual int open_connections() const = 0;
  /// Connections opened since construction (a measure of reuse).
  virtual int connections_opened() const = 0;
};

}  // namespace moonmq::transport

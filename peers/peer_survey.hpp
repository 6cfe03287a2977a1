#pragma once
// The configured peers of this broker and a parallel GET to all of them:
// what /admin/cluster, /admin/reassignments and the balance loop use to
// learn what other brokers hold. One request per peer, all in flight at
// once, each with its own deadline, so a dead peer costs one timeout, not
// one per peer.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peers/peer_link.hpp"

namespace moonmq::transport {

/// One configured peer (Cluster.Peers[]) and its link (net/http_client.hpp
/// in the node: a keep-alive HTTP client).
struct cluster_peer {
  std::string id;
  std::string address;         ///< cluster listener host:port
  std::string client_address;  ///< client API host:port ("" when not configured)
  std::string token;           ///< X-Cluster-Token sent to this peer ("" = none)
  std::shared_ptr<peer_link> client;
  std::string kafka_address;   ///< Kafka listener host:port ("" when not configured)
};

/// One peer's answer to a survey.
struct peer_answer {
  std::string id;
  bool ok = false;       ///< answered 200 with a JSON body
  int status = 0;        ///< HTTP status; 0 when the exchange failed
  std::string error;     ///< why not ok (transport error text, or "HTTP 503: <body>")
  nlohmann::json body;   ///< the parsed body when ok, else null
};

/// GETs `target` from every peer in parallel (idempotent, X-Cluster-Token
/// set), then calls `done` once with one answer per peer, in the order of
/// `peers`, on an I/O thread (it must not block). With no peers `done` runs
/// at once on the calling thread.
void survey_peers(const std::vector<cluster_peer>& peers, const std::string& target,
                  std::chrono::milliseconds timeout, std::function<void(std::vector<peer_answer>)> done);

/// The same with another method, for requests that are idempotent all the
/// same (retried once on a broken keep-alive connection), e.g. POST
/// /cluster/plugins/reload.
void survey_peers(const std::vector<cluster_peer>& peers, const std::string& method, const std::string& target,
                  std::chrono::milliseconds timeout, std::function<void(std::vector<peer_answer>)> done);

/// Sends one JSON request to `peer` with the cluster token and, when
/// `epoch` > 0, the control-plane headers X-Controller-Epoch / X-Controller-Id.
/// `done` gets the status (0 on a transport failure), the parsed body (null
/// when not JSON) and an error text for logs; called on an I/O thread.
void call_peer(const cluster_peer& peer, const std::string& method, const std::string& target, std::string body,
               int64_t epoch, const std::string& controller, std::chrono::milliseconds timeout,
               std::function<void(int status, nlohmann::json body, std::string error)> done);

/// The error code of a peer's JSON answer ({"error":"<code>","message"}),
/// or "" when it has none or it is not a string: a malformed answer never
/// throws.
std::string answer_error_code(const nlohmann::json& answer);

/// call_peer's report in one struct, with what the link knows of a failure.
struct peer_reply {
  int status = 0;       ///< HTTP status; 0 when the exchange failed
  nlohmann::json body;  ///< the parsed body (null when not JSON)
  std::string error;    ///< why not 2xx, for logs
  bool unsent = false;  ///< failed, and the request never left (peer_result::unsent)
};

/// The same as call_peer, reporting a peer_reply.
void call_peer_reply(const cluster_peer& peer, const std::string& method, const std::string& target, std::string body,
                     int64_t epoch, const std::string& controller, std::chrono::milliseconds timeout,
                     std::function<void(peer_reply)> done);

}  // namespace moonmq::transport

#pragma once
// The peer actor: one per configured peer (Cluster.Peers[]). It owns the
// view of that broker the node shows operators: its keep-alive client's
// connections, and whether the peer answers — probed on its cluster
// listener (GET /cluster/health) every `probe_interval`, each probe with the
// PeerTimeout deadline. Requests themselves go through the peer's link
// (peers/peer_link.hpp; in the node an HTTP client with a keep-alive pool,
// one deadline per request, a retry only for idempotent requests, TLS/mTLS
// from Cluster.Tls), which every component shares; this actor is what
// /admin/actors lists and what `moonmq_peer_up{peer}` reports.

#include <chrono>
#include <memory>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/image.hpp"
#include "actors/registry.hpp"
#include "peers/peer_survey.hpp"

namespace moonmq {

using peer_actor = caf::typed_actor<
  // Internal: probe the peer now (re-armed every probe interval).
  caf::reacts_to<tick_atom>,
  // Internal: a probe's answer (HTTP status or 0, round trip in µs, error).
  caf::reacts_to<step_atom, int32_t, int64_t, std::string>,
  // {"id","address","client_address","alive","last_ok_ms","last_error",
  //  "probe_ms","probes","probe_failures","open_connections","connections_opened"}.
  caf::replies_to<status_atom>::with<std::string>>;

/// The gauge a peer actor reports: 1 when its last probe was answered.
inline constexpr const char* peer_up_metric = "moonmq_peer_up";

/// Spawns the actor for `peer` and enrolls it as "peer-<id>" (kind "peer").
/// With `image`, the actor drops its moonmq_peer_up series at its first
/// probe after the metadata log removed the peer from the cluster.
peer_actor spawn_peer(caf::actor_system& sys, transport::cluster_peer peer, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds probe_interval, registry_actor reg,
                      std::shared_ptr<const owner_view> image = nullptr);

}  // namespace moonmq

#pragma once
// The load_meter actor (DESIGN §6, docs/placement.md "Wiring"): one per
// broker. Every Placement.HeartbeatMs it
//   1. samples this broker's load — sessions and bytes in/out per client id
//      from the session_probe the client routes feed, process and machine
//      cpu from /proc — into a placement::load_report, publishes it for
//      GET /cluster/loads ("session_load") and keeps it in its load_tracker;
//   2. pulls every peer's GET /cluster/loads (peers/peer_survey.hpp) and
//      keeps each peer's "session_load" in the tracker; a peer that does not
//      answer is marked not alive, a report that fails to parse is logged
//      and ignored; each answering peer's rack, weight and topic placement
//      version go to the broker_traits_view.
// GET /session/recommend asks it to rank the brokers (placement::recommend).
// It answers status_atom with its state for /admin/actors: the latest local
// report, the tracker snapshot and the last recommendation.

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/registry.hpp"
#include "config/node_config.hpp"
#include "peers/peer_directory.hpp"

namespace moonmq {

class session_probe;
class session_load_view;
class broker_traits_view;

/// Rank the brokers for one client session (≤ 10 chars; local to placement).
using recommend_atom = caf::atom_constant<caf::atom("recommend")>;

using load_meter_actor = caf::typed_actor<
  // Internal: heartbeat — sample, publish, pull the peers' reports (re-armed every HeartbeatMs).
  caf::reacts_to<tick_atom>,
  // Internal: the peers' answers of one pull, JSON text
  // [{"id","ok","error","session_load","broker_id","rack","weight","topic_placement"}].
  caf::reacts_to<step_atom, std::string>,
  // Recommend for (client id, topic or "", owner of each of the topic's partitions):
  // replies (HTTP status, JSON body): 200 {"broker_id","url","score","details"},
  // 400 {"error":"invalid_request","message"} naming clientId/topic,
  // 503 {"error":"no_eligible_broker","message","details"}.
  caf::replies_to<recommend_atom, std::string, std::string, std::vector<std::string>>::with<int32_t, std::string>,
  // {"broker_id","heartbeat_ms","heartbeats","local","tracker","peers","last_recommendation","config"} as JSON text.
  caf::replies_to<status_atom>::with<std::string>>;

struct load_meter_settings {
  std::string broker_id;
  config::placement_config config;
  /// Autobalance.ExcludedBrokers: never recommended (counted as draining).
  std::vector<std::string> excluded_brokers;
  /// The other brokers (configured and registered at runtime), each with its
  /// client_address (the recommended URL).
  std::shared_ptr<transport::peer_directory> peers = std::make_shared<transport::peer_directory>();
  std::chrono::milliseconds peer_timeout{5000};
  /// This broker's client API: Server.Host and the bound port (set once
  /// the listener is up; 0 before).
  std::string client_host = "127.0.0.1";
  std::shared_ptr<std::atomic<uint16_t>> client_port;
  std::shared_ptr<session_probe> probe;
  std::shared_ptr<session_load_view> published;
  /// Where each peer's rack, weight and topic placement version from its
  /// answer go (null = not kept; actors/broker_traits_view.hpp).
  std::shared_ptr<broker_traits_view> traits;
  std::string proc_dir = "/proc";  ///< where stat files are read (tests may point elsewhere)
};

/// Spawns the meter (first heartbeat at once) and enrolls it as
/// "load_meter" (kind "load_meter").
load_meter_actor spawn_load_meter(caf::actor_system& sys, load_meter_settings settings, registry_actor reg);

}  // namespace moonmq

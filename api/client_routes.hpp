#pragma once
// The client API (CONTRACT.md §3) as routes on the shared HTTP server:
// topics, records, consumer groups and committed offsets (the group routes
// live in api/group_routes.cpp: cluster-wide groups).
//
// Produce goes straight to the partition actors (the catalog view names
// them): the body is split per partition, each part encoded into one v2
// batch here, appended, and the offsets answered in request order. `?acks=`
// may be `leader` (default: answered once fsynced) or `none` (answered once
// appended).

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <caf/fwd.hpp>

#include "actors/broker.hpp"
#include "actors/catalog_view.hpp"
#include "actors/cluster_state.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/load_meter.hpp"
#include "peers/peer_directory.hpp"
#include "net/router.hpp"

namespace moonmq {
class session_probe;
}

namespace moonmq::transport {


struct client_context {
  caf::actor_system* system = nullptr;
  broker_actor broker;
  group_actor groups;
  std::shared_ptr<catalog_view> catalog;
  /// Bound on each request to an actor (produce waits for an fsync).
  std::chrono::milliseconds timeout{10000};
  /// Largest fetch answer in bytes (whole batches; at least one batch).
  int32_t max_fetch_bytes = 4 * 1024 * 1024;
  /// Partitions of a topic created without "partitions" (Cluster.NumPartitions;
  /// the metadata log's NumPartitions overrides it).
  int32_t default_partitions = 1;
  /// In a cluster: this broker's id, the ownership table's view and the
  /// other brokers (the peer directory: configured and registered ones; its
  /// client_address is named in 421 answers, its cluster listener takes
  /// forwarded produce). A partition the table gives to another broker is
  /// not served here: produce is forwarded to the owner (answered with the
  /// owner's offsets), fetch and commit answer 421 not_owner with the owner's
  /// id and client URL. Null `owners` = single broker, everything local.
  std::string broker_id;
  std::shared_ptr<owner_view> owners;
  std::shared_ptr<peer_directory> peers = std::make_shared<peer_directory>();
  /// Session placement (docs/placement.md): produce, fetch and group
  /// join/heartbeat/leave report their client id (`?clientId=` or the
  /// `X-Client-Id` header; an invalid one is a 400) and bytes here; the
  /// load_meter samples it. Null = not metered.
  std::shared_ptr<session_probe> sessions;
  /// Cluster-wide groups (api/group_routes.hpp): join and heartbeat
  /// answers name the coordinator's client URL (Server.Host and the bound
  /// port, 0 until the listener is up) and the load_meter's recommended
  /// broker URL for the session (absent meter = the coordinator's URL).
  std::string client_host = "127.0.0.1";
  std::shared_ptr<std::atomic<uint16_t>> client_port;
  std::optional<load_meter_actor> meter;
  /// With the metadata log (Cluster.Raft): topic create and growth go to the
  /// cluster state actor, which commits them cluster-wide; unset = the
  /// broker creates them locally.
  std::optional<cluster_state_actor> metadata;
};

void add_client_routes(router& r, const client_context& ctx);

/// The broker that owns (topic, partition) when it is not this one (the
/// ownership table names another broker); nullopt when local or single broker.
std::optional<std::string> remote_owner(const client_context& ctx, const std::string& topic, int32_t partition);

/// True when the metadata log names no owner for (topic, partition) (Raft
/// mode): nobody may serve it, this broker included.
bool unowned(const client_context& ctx, const std::string& topic, int32_t partition);
/// Partitions of `topic` as this broker knows them: its local copy, or with
/// the metadata log the applied image when that says more (a topic exists
/// cluster-wide once its entry is applied here, before this broker's own
/// copy is made, so produce and fetch route by the image meanwhile).
/// nullopt when neither knows the topic.
std::optional<int32_t> partition_count(const client_context& ctx, const std::string& topic);

/// GET /v1/topics/{topic} (partitions with owner and bounds, config) and
/// PATCH /v1/topics/{topic}/config (api/topic_routes.cpp).
void add_topic_routes(router& r, const client_context& ctx);
/// 503 partition_offline for such a partition.
http_response offline_response(const std::string& topic, int32_t partition);

/// The request's client id for session metering (session_routes.hpp:
/// client_id_of; "" when none); answers 400 and returns false when it is
/// malformed.
bool session_client(const http_request& req, const responder& respond, std::string& client);

/// The local partition actor of the request's {topic}/{partition}, served
/// by this broker; otherwise answers 404 unknown_topic/unknown_partition,
/// 503 partition_offline (no owner), 421 not_owner (another broker owns
/// it) or 503 partition_not_ready (its copy is being created) and returns
/// nullopt.
std::optional<partition_actor> owned_partition(const client_context& ctx, http_request& req,
                                               const responder& respond);

/// 421 not_owner naming the owner and its client URL (CONTRACT §3).
http_response not_owner_response(const client_context& ctx, const std::string& topic, int32_t partition,
                                 const std::string& owner);

}  // namespace moonmq::transport

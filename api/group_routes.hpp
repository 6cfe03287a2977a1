#pragma once
// Consumer groups across the cluster (issue 8, docs/groups.md "Cluster-wide
// groups"): the /v1/groups/* routes of the client API (CONTRACT §3) and the
// /cluster/groups/* routes of the cluster listener (docs/cluster-api.md).
//
// - Every group has one coordinator, cluster::group_coordinator(group, this
//   broker + Cluster.Peers). Join / heartbeat / leave reaching another
//   broker are forwarded to it over the cluster listener (one hop: the
//   cluster routes only ever run the local group coordinator) and its
//   answer relayed unchanged; 503 coordinator_unavailable when it cannot be
//   reached. GET /v1/groups/{g}/coordinator names it.
// - Committed offsets live with the partition's owner: a commit is split by
//   owner and each part stored there; a read gathers every owner's part.
// Without a Cluster section everything is local, as before.

#include "api/client_routes.hpp"
#include "peers/peer_survey.hpp"

#include <functional>
#include <string>
#include <vector>

namespace moonmq::transport {


/// POST/DELETE /v1/groups/{g}/members..., POST/GET /v1/groups/{g}/offsets
/// and GET /v1/groups/{g}/coordinator on the client API.
void add_group_routes(router& r, const client_context& ctx);

/// The /cluster/groups/* routes (data plane, no epoch) on the cluster
/// listener, whose token guard the caller has set.
void add_cluster_group_routes(router& r, const client_context& ctx);

/// This broker and its configured peers (unsorted): the brokers among which
/// group coordinators are placed.
std::vector<std::string> group_brokers(const client_context& ctx);

/// The broker that coordinates `group` (cluster::group_coordinator over
/// the unfenced brokers; this broker without a cluster).
std::string group_coordinator_of(const client_context& ctx, const std::string& group);

/// Every broker's committed offsets of `group` (`topic` or "" = all),
/// merged (the higher offset wins should two brokers both claim a partition
/// during a move's cutover): `done(200, {"offsets":[{"topic","partition",
/// "offset","metadata"}]})`, 404 unknown_group only when no broker knows the
/// group, 503 owner_unavailable when a broker did not answer. What GET
/// /v1/groups/{g}/offsets answers.
void gather_committed_offsets(const client_context& ctx, const std::string& group, const std::string& topic,
                              std::function<void(int status, std::string body)> done);

/// How deleting a group ended.
enum class group_deletion { deleted, not_found, non_empty, unavailable };

/// Deletes `group` on its coordinator (this broker): refused (non_empty)
/// while HTTP or Kafka members (both the group actor's) are in it; else its committed offsets on every broker (each owner
/// keeps its partitions': the local group actor and every peer's DELETE
/// /cluster/groups/{g}/offsets) and its membership state here. not_found
/// when no broker held anything of it; unavailable when a peer did not
/// answer (deleting again is harmless). Kafka DeleteGroups and DELETE
/// /v1/groups/{g} both end here. `done` once, on any thread.
void delete_group_everywhere(caf::actor_system& sys, const group_actor& groups, std::vector<cluster_peer> peers,
                             std::chrono::milliseconds timeout,
                             const std::string& group, std::function<void(group_deletion)> done);

/// Deletes `group`'s committed offsets of `partitions` of `topic` on every
/// broker (the local group actor and every peer's DELETE
/// /cluster/groups/{g}/offsets/{t}): a partition's offsets live with its
/// owner, and a copy left on an earlier owner must not come back with a
/// later move. `done(ok, held)` once: ok false when a broker did not
/// answer; held whether any broker stores offsets of the group at all.
void delete_offsets_everywhere(caf::actor_system& sys, const group_actor& groups, std::vector<cluster_peer> peers,
                               std::chrono::milliseconds timeout, const std::string& group, const std::string& topic,
                               std::vector<int32_t> partitions, std::function<void(bool, bool)> done);

/// GET /v1/groups, GET and DELETE /v1/groups/{g} on the client API, and
/// GET /cluster/groups, GET and DELETE /cluster/groups/{g} on the cluster
/// listener (api/group_admin_routes.cpp).
void add_group_admin_routes(router& r, const client_context& ctx);
void add_cluster_group_admin_routes(router& r, const client_context& ctx);

}  // namespace moonmq::transport

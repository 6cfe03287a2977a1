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

#include "transport/client_routes.hpp"

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

}  // namespace moonmq::transport

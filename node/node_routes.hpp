#pragma once
// Every listener's routes, made from one node_services (node_services.hpp):
// each route family gets the part of it it reads. Internal to node/.

#include <memory>

#include "api/cluster_admin_routes.hpp"
#include "api/kafka_handlers.hpp"
#include "net/router.hpp"
#include "node/node_services.hpp"

namespace moonmq::composition {

/// The routers of the admin, client and cluster listeners (cluster: null
/// without a Cluster section).
struct node_routers {
  std::shared_ptr<transport::router> admin = std::make_shared<transport::router>();
  std::shared_ptr<transport::router> client = std::make_shared<transport::router>();
  std::shared_ptr<transport::router> cluster;
  /// The transaction coordinator the admin route's abort reaches, set once
  /// the Kafka listener spawned it.
  std::shared_ptr<transport::txn_handle> txns;
};

/// Adds every route of every listener. The routes keep what they read from
/// `n` (actor handles, views, the peer directory) for the node's life.
node_routers mount_routes(const node_services& n);

/// What the Kafka listener's handlers read (docs/kafka.md).
std::shared_ptr<transport::kafka_context> kafka_context_of(const node_services& n);

}  // namespace moonmq::composition

// Every listener's routes, made from the node's services (node_routes.hpp).

#include "node/node_routes.hpp"

#include <algorithm>

#include "api/admin_routes.hpp"
#include "api/client_routes.hpp"
#include "api/cluster_routes.hpp"
#include "api/console_routes.hpp"
#include "api/group_routes.hpp"
#include "api/local_loads.hpp"
#include "api/move_routes.hpp"
#include "api/raft_routes.hpp"
#include "api/session_routes.hpp"

namespace moonmq::composition {
namespace {

/// This broker's rack and weight as its load reports carry them.
transport::broker_traits own_traits(const config::node_config& cfg) {
  if (!cfg.cluster)
    return {};
  return {cfg.cluster->rack, cfg.cluster->weight};
}

/// The client API (records, topics, groups, sessions) and the cluster
/// listener's group routes, which peers forward joins and commits to.
transport::client_context client_context_of(const node_services& n) {
  const auto& cfg = n.cfg;
  transport::client_context c;
  c.system = n.system.get();
  c.broker = n.broker;
  c.groups = n.groups;
  c.catalog = n.catalog;
  c.broker_id = cfg.broker_id();
  c.sessions = n.sessions;
  c.peers = n.peers;
  if (cfg.cluster) {
    c.owners = n.owners;  // null: a single broker, every partition local
    c.default_partitions = cfg.cluster->num_partitions;
    c.metadata = *n.cluster_state;  // topics are created through the metadata log
  }
  // Cluster-wide groups (api/group_routes.hpp): join answers name the
  // coordinator's URL and the meter's recommended URL.
  c.client_host = cfg.client.host;
  c.client_port = n.client_port;
  c.meter = n.meter;
  return c;
}

transport::admin_context admin_context_of(const node_services& n) {
  const auto& cfg = n.cfg;
  transport::admin_context a;
  a.system = n.system.get();
  a.registry = n.registry;
  a.broker_id = cfg.broker_id();
  a.token = cfg.admin.token;
  a.goals = n.goals;
  a.catalog = n.catalog;  // POST /admin/partitions/{topic}/{partition}/truncate-corrupt
  a.groups = n.groups;    // GET /metrics: group lag
  if (cfg.cluster) {
    a.peers = n.peers;  // POST /admin/plugins/reload reaches every broker
    a.peer_timeout = n.peer_timeout();
    a.owners = n.owners;           // GET /metrics: owned partitions, brokers
    a.reassigner = n.reassigner;   // GET /metrics: moves by state
  }
  return a;
}

transport::cluster_admin_context cluster_admin_context_of(const node_services& n) {
  const auto& cfg = n.cfg;
  transport::cluster_admin_context c;
  c.system = n.system.get();
  c.broker_id = cfg.broker_id();
  c.traits = own_traits(cfg);
  c.catalog = n.catalog;
  // Read by /admin/cluster: the client listener's bound port once bound.
  c.client_address = [port = n.client_port, host = cfg.client.host] { return host + ":" + std::to_string(port->load()); };
  if (cfg.cluster) {
    c.owners = n.owners;
    c.probe_timeout = probe_timeout(n);
    c.peers = n.peers;
    c.raft = n.raft->view;
    c.state = *n.cluster_state;
    c.balancer = *n.balancer;
    c.reassigner = *n.reassigner;  // a broker is removed only with no move from or to it
  }
  return c;
}

/// The cluster listener's own routes: metadata and loads for peers, Raft,
/// the move steps, a peer's view of this balancer.
void add_cluster_listener_routes(transport::router& r, transport::router& admin, const node_services& n,
                                 const transport::cluster_admin_context& cluster_admin) {
  const auto& cfg = n.cfg;
  transport::cluster_context k;
  k.system = n.system.get();
  k.state = *n.cluster_state;
  k.catalog = n.catalog;
  k.owners = n.owners;
  k.broker_id = cfg.broker_id();
  k.traits = own_traits(cfg);
  k.token = cfg.cluster->token;
  k.timeout = n.peer_timeout();
  k.loads_timeout = loads_timeout(n);
  k.session_load = n.session_load;  // session placement
  k.goals = n.goals;                // POST /cluster/plugins/reload
  k.shared_storage = !cfg.broker.shared_dir.empty();
  transport::add_cluster_routes(r, k);

  transport::raft_context rc;
  rc.system = n.system.get();
  rc.broker_id = cfg.broker_id();
  rc.node = n.raft->node;
  rc.propose_timeout = n.peer_timeout();
  transport::add_raft_routes(r, rc);

  transport::move_context m;
  m.system = n.system.get();
  m.broker_id = cfg.broker_id();
  m.state = *n.cluster_state;
  m.reassigner = *n.reassigner;
  m.destination = *n.destination;
  m.catalog = n.catalog;
  m.owners = n.owners;
  m.peers = n.peers;
  m.timeout = n.peer_timeout();
  m.peer_timeout = n.peer_timeout();
  transport::add_move_routes(r, m);
  transport::add_reassignment_routes(admin, m);
  transport::add_cluster_balancer_route(r, cluster_admin);  // a peer's GET /admin/balancer?broker=
}

}  // namespace

node_routers mount_routes(const node_services& n) {
  node_routers out;
  auto cluster_admin = cluster_admin_context_of(n);
  out.txns = cluster_admin.txns;
  if (n.clustered()) {
    out.cluster = std::make_shared<transport::router>();
    add_cluster_listener_routes(*out.cluster, *out.admin, n, cluster_admin);
  }
  transport::session_context s;
  s.system = n.system.get();
  s.meter = n.meter;
  s.catalog = n.catalog;
  s.owners = n.clustered() ? n.owners : nullptr;
  s.broker_id = n.cfg.broker_id();
  transport::add_session_routes(*out.client, s);
  auto client = client_context_of(n);
  transport::add_client_routes(*out.client, client);
  if (out.cluster)
    transport::add_cluster_group_routes(*out.cluster, client);  // joins and commits forwarded by peers
  transport::add_admin_routes(*out.admin, admin_context_of(n));
  transport::add_console_routes(*out.admin, out.client);  // the web console (docs/console.md)
  transport::add_cluster_admin_routes(*out.admin, cluster_admin);
  return out;
}

std::shared_ptr<transport::kafka_context> kafka_context_of(const node_services& n) {
  const auto& cfg = n.cfg;
  auto k = std::make_shared<transport::kafka_context>();
  k->system = n.system.get();
  k->broker = n.broker;
  k->groups = n.groups;
  k->catalog = n.catalog;
  k->broker_id = cfg.broker_id();
  k->advertised_host = cfg.kafka.advertised_host;
  k->peers = n.peers;
  if (cfg.cluster) {
    k->owners = n.owners;
    k->default_partitions = cfg.cluster->num_partitions;
    k->metadata = *n.cluster_state;
    k->raft = n.raft->view;
  }
  return k;
}

}  // namespace moonmq::composition

#pragma once
// What one node is made of, in the order node/node_runtime.cpp assembles
// it (and the reverse of the order it goes away): the state read from the
// data directory before any actor runs, the actor system, every long-lived
// actor and the views they publish, the peer links. The routes of every
// listener are made from this one struct (node/node_routes.cpp). Internal
// to node/.

#include <atomic>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actors/balancer.hpp"
#include "actors/broker.hpp"
#include "actors/broker_traits_view.hpp"
#include "actors/cluster_state.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/load_meter.hpp"
#include "actors/move_destination.hpp"
#include "actors/peer.hpp"
#include "actors/reassigner.hpp"
#include "actors/registry.hpp"
#include "actors/session_probe.hpp"
#include "cluster/takeover_hold.hpp"
#include "config/node_config.hpp"
#include "dataplane/topic_catalog.hpp"
#include "net/http_server.hpp"
#include "net/tls.hpp"
#include "peers/peer_directory.hpp"
#include "plugins/goal_loader.hpp"
#include "raft/raft_store.hpp"
#include "storage/disk_latency.hpp"

namespace moonmq::composition {

/// The peer actors of brokers that joined at runtime (one per registered
/// broker, as a configured peer has one), made by the raft thread as
/// registrations apply and stopped with the node.
struct learned_peer_actors {
  std::mutex mtx;
  std::map<std::string, peer_actor> actors;
  bool stopped = false;  ///< the node is stopping: no new actor
};

struct node_services {
  explicit node_services(const config::node_config& c) : cfg(c) {}
  node_services(const node_services&) = delete;
  node_services& operator=(const node_services&) = delete;

  const config::node_config& cfg;
  /// Wraps each peer link made (node_hooks::wrap_peer_link); null: none.
  std::function<std::shared_ptr<transport::peer_link>(const std::string& peer, std::shared_ptr<transport::peer_link>)>
    wrap_peer_link;

  // Read from the data directory before any actor runs (open_state).
  std::optional<dataplane::topic_catalog> loaded_catalog;  ///< handed to the broker
  std::shared_ptr<groups::offset_store> offset_store;      ///< handed to the group coordinator
  /// The owners every request path reads, from the Raft store.
  std::shared_ptr<owner_view> owners = std::make_shared<owner_view>();
  std::unique_ptr<raft::raft_store> raft_store;  ///< handed to the raft node
  std::shared_ptr<const transport::tls_context> cluster_tls, peer_tls;

  // The actors (spawn_actors).
  std::unique_ptr<caf::actor_system_config> system_config;
  std::unique_ptr<caf::actor_system> system;
  registry_actor registry;
  std::shared_ptr<catalog_view> catalog = std::make_shared<catalog_view>();
  std::shared_ptr<cluster::takeover_hold> takeover_hold;  ///< shared storage with a cluster
  broker_actor broker;
  std::optional<storage::disk_probe> disk_probe;  ///< with a cluster (the balancer's slow-broker check)
  group_actor groups;
  std::unique_ptr<transport::io_pool> io;  ///< every listener's and peer link's Asio threads
  std::shared_ptr<plugins::goal_registry> goals;
  std::shared_ptr<session_probe> sessions;
  std::shared_ptr<session_load_view> session_load = std::make_shared<session_load_view>();
  /// The client port this broker recommends (Port=0: the bound one, once bound).
  std::shared_ptr<std::atomic<uint16_t>> client_port;
  /// Each broker's rack, weight and topic placement version.
  std::shared_ptr<broker_traits_view> traits = std::make_shared<broker_traits_view>();
  /// The configured peers and every broker the metadata log registers later.
  std::shared_ptr<transport::peer_directory> peers = std::make_shared<transport::peer_directory>();
  /// The Raft node's own keep-alive clients (heartbeats never queue behind copies).
  std::shared_ptr<transport::peer_directory> raft_clients;
  std::vector<peer_actor> peer_actors;  ///< one per configured peer
  std::shared_ptr<learned_peer_actors> learned_peers = std::make_shared<learned_peer_actors>();
  std::optional<raft_link> raft;
  std::optional<cluster_state_actor> cluster_state;
  std::optional<move_destination_actor> destination;
  std::optional<reassigner_actor> reassigner;
  std::optional<balancer_actor> balancer;
  load_meter_actor meter;
  /// Actors spawned with the listeners (the transaction coordinator, the
  /// Kafka listener's probe), linked to the node like the others.
  std::vector<caf::actor> more_children;

  bool clustered() const { return cfg.cluster.has_value(); }
  /// Cluster.PeerTimeout.
  std::chrono::milliseconds peer_timeout() const;
  /// Every long-lived actor the node actor links (stopping it stops them).
  std::vector<caf::actor> children() const;
  /// Closes every peer link (their callbacks finish before the Asio threads stop).
  void close_peers();
  /// Exits every actor and the registry (a start that failed half-way).
  void stop_actors();
  /// Exits the peer actors of brokers that joined at runtime, and makes no
  /// new one.
  void stop_learned_peers();
};

/// How long a broker waits for its peers' answers to a survey
/// (/admin/cluster, the load meter's reports): min(PeerTimeout, 2 s).
std::chrono::milliseconds probe_timeout(const node_services& n);
/// How long this broker takes at most for its own partitions' loads when a
/// peer asks: half the probe timeout, so they arrive within its deadline.
std::chrono::milliseconds loads_timeout(const node_services& n);

/// Reads the data directory's state into `n` (data and shared dirs
/// writable, topic catalogue, committed offsets, Raft store, move journal,
/// TLS): "" or why the node cannot start, with `event` set to its log event.
std::string open_state(node_services& n, std::string& event);

/// Spawns every long-lived actor of `n` (broker, groups, and with a cluster
/// the peers, the raft node, cluster state, move destination, reassigner,
/// balancer; the load meter): "" or why not, with `event` set.
std::string spawn_actors(node_services& n, std::string& event);

}  // namespace moonmq::composition

// The composition root (node_runtime.hpp). A node comes up in five steps,
// each in its own place:
//   1. open_state (node_actors.cpp): the data directory's state, checked
//      before anything runs;
//   2. spawn_actors (node_actors.cpp): every long-lived actor, into one
//      node_services (node_services.hpp);
//   3. mount_routes (node_routes.cpp): every listener's routes from it;
//   4. here: the listeners bound (the Kafka listener last), the node actor
//      that links every other, the registration of a joining broker;
//   5. here: the ordered shutdown once told to stop.

#include "node/node_runtime.hpp"

#include <chrono>
#include <iostream>
#include <memory>
#include <tuple>
#include <vector>

#include <caf/all.hpp>

#include "actors/node.hpp"
#include "actors/raft_node.hpp"
#include "api/kafka_listener.hpp"
#include "api/kafka_txn.hpp"
#include "moonmq/version.hpp"
#include "node/node_routes.hpp"
#include "node/node_services.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

namespace moonmq {
namespace {

using composition::node_routers;
using composition::node_services;

transport::http_server_options listener_options(const config::node_config& cfg, std::string name,
                                                const config::listener_config& l) {
  transport::http_server_options o;
  o.name = std::move(name);
  o.host = l.host;
  o.port = l.port;
  o.max_body_bytes = cfg.http.max_body_bytes;
  o.header_timeout = std::chrono::milliseconds{cfg.http.header_timeout_ms};
  o.max_connections = cfg.http.max_connections;
  return o;
}

/// A runtime failure: logged, printed, exit code 1.
int fail(const std::string& event, const std::string& why) {
  log::get("node")->error("{} reason=\"{}\"", event, why);
  std::cerr << "moonmq-node: " << why << "\n";
  return 1;
}

/// Binds `server`; "" or why not.
std::string start_listener(transport::http_server& server, const std::string& name,
                           const config::listener_config& l) {
  if (auto ec = server.start())
    return "cannot listen on " + l.host + ":" + std::to_string(l.port) + " (" + name + "): " + ec.message();
  return {};
}

/// The HTTP listeners of one node (admin, client, and cluster with a
/// Cluster section), made but not yet bound.
struct http_listeners {
  using entry = std::tuple<transport::http_server*, const char*, const config::listener_config*>;

  http_listeners(node_services& n, const node_routers& routers)
      : admin{*n.io, listener_options(n.cfg, "admin", n.cfg.admin), routers.admin},
        client{*n.io, listener_options(n.cfg, "client", n.cfg.client), routers.client} {
    if (n.clustered()) {
      auto opts = listener_options(n.cfg, "cluster", *n.cfg.cluster);
      opts.tls = n.cluster_tls;
      cluster = std::make_unique<transport::http_server>(*n.io, opts, routers.cluster);
    }
  }

  std::vector<entry> all(const config::node_config& cfg) {
    std::vector<entry> out{entry{&admin, "admin", &cfg.admin}, entry{&client, "client", &cfg.client}};
    if (cluster)
      out.push_back(entry{cluster.get(), "cluster", &*cfg.cluster});
    return out;
  }

  transport::http_server admin;
  transport::http_server client;
  std::unique_ptr<transport::http_server> cluster;
};

/// A start that failed after the actors ran: the listeners stop, the peer
/// links close, the Asio threads and every actor end.
int abandon(node_services& n, http_listeners& listeners, const std::string& event, const std::string& why) {
  for (auto& other : listeners.all(n.cfg))
    std::get<0>(other)->stop(std::chrono::milliseconds{0});
  n.close_peers();
  n.io->stop();
  n.stop_actors();
  return fail(event, why);
}

}  // namespace

int run_node(const config::load_result& loaded, const node_hooks& hooks) {
  const auto& cfg = loaded.config;
  auto logger = log::get("node");
  node_services n{cfg};
  n.wrap_peer_link = hooks.wrap_peer_link;
  std::string event;
  if (auto why = composition::open_state(n, event); !why.empty())
    return fail(event, why);
  metrics::register_process_metrics(version_string);
  if (auto why = composition::spawn_actors(n, event); !why.empty())
    return fail(event, why);
  auto routers = composition::mount_routes(n);
  http_listeners listeners{n, routers};
  for (auto [server, name, l] : listeners.all(cfg))
    if (auto failed = start_listener(*server, name, *l); !failed.empty())
      return abandon(n, listeners, "node.listen_failed", failed);
  n.client_port->store(listeners.client.port());  // the recommended URL of this broker (Port=0: the bound port)

  // The Kafka wire-protocol listener (docs/kafka.md), bound last.
  std::unique_ptr<transport::kafka_listener> kafka;
  std::string kafka_address = "off";
  if (cfg.kafka.enabled) {
    auto kx = composition::kafka_context_of(n);
    // Transactions keep their coordinator state in the metadata log (docs/transactions.md).
    if (n.raft) {
      auto txns = transport::spawn_kafka_txn_coordinator(
        kx, n.raft->node, n.registry, std::chrono::milliseconds{cfg.kafka.transactional_id_expiration_ms});
      routers.txns->set(txns);  // the admin route's abort
      n.more_children.push_back(caf::actor_cast<caf::actor>(txns));
    }
    kafka = std::make_unique<transport::kafka_listener>(*n.io, transport::kafka_listener_options{cfg.kafka.host, cfg.kafka.port}, kx);
    if (auto ec = kafka->start())
      return abandon(n, listeners, "node.listen_failed",
                     "cannot listen on " + cfg.kafka.host + ":" + std::to_string(cfg.kafka.port)
                       + " (kafka): " + ec.message());
    kafka_address = cfg.kafka.host + ":" + std::to_string(kafka->port());
    n.more_children.push_back(transport::spawn_kafka_listener_probe(*n.system, kafka_address, *kafka, n.registry));
  }
  node_settings settings{cfg.broker_id(), cfg.data_dir, loaded.files, {}};
  settings.listeners["admin"] = cfg.admin.host + ":" + std::to_string(listeners.admin.port());
  settings.listeners["client"] = cfg.client.host + ":" + std::to_string(listeners.client.port());
  if (listeners.cluster)
    settings.listeners["cluster"] = cfg.cluster->host + ":" + std::to_string(listeners.cluster->port());
  if (kafka)
    settings.listeners["kafka"] = kafka_address;
  // The node is spawned once the listeners are bound, so that its summary
  // shows the real ports; it links every long-lived actor.
  node_actor node = spawn_node(*n.system, settings, n.registry, n.children());
  // A broker that is not a voter joins now that its listeners are bound
  // (docs/metadata.md "Joining"); a voter's raft node ignores this.
  if (n.raft && listeners.cluster)
    caf::anon_send(n.raft->node, register_atom::value, settings.listeners["cluster"], settings.listeners["client"],
                   kafka ? cfg.kafka.advertised_host + ":" + std::to_string(kafka->port()) : std::string{});
  logger->info("node.ready broker={} version={} admin={}:{} client={}:{} cluster={} kafka={}", cfg.broker_id(),
               version_string, cfg.admin.host, listeners.admin.port(), cfg.client.host, listeners.client.port(),
               listeners.cluster ? settings.listeners["cluster"] : "off", kafka_address);
  if (hooks.ready)
    hooks.ready(settings.listeners);

  auto reason = hooks.wait_for_stop();
  auto t0 = std::chrono::steady_clock::now();
  logger->info("node.signal signal={}", reason);
  // Stop accepting on every listener first, then let in-flight requests finish.
  listeners.client.stop(std::chrono::milliseconds{3000});
  if (listeners.cluster)
    listeners.cluster->stop(std::chrono::milliseconds{1000});
  listeners.admin.stop(std::chrono::milliseconds{1000});
  if (kafka)
    kafka->stop();
  n.close_peers();
  n.io->stop();
  n.stop_learned_peers();  // not linked to the node: they come and go with registrations
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  n.system->await_all_actors_done();
  if (kafka)
    kafka->release_actors();  // before ~actor_system (see kafka_listener.hpp)
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  logger->info("node.stopped broker={} shutdown_ms={}", cfg.broker_id(), ms);
  return 0;
}

}  // namespace moonmq

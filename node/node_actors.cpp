// A node's state and actors: what it reads from its data directory before
// anything runs, and every long-lived actor it spawns (node_services.hpp).

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <caf/all.hpp>

#include <sys/resource.h>

#include "actors/node.hpp"
#include "actors/raft_node.hpp"
#include "actors/shared_mode.hpp"
#include "actors/system.hpp"
#include "api/local_loads.hpp"
#include "cluster/lease_gate.hpp"
#include "cluster/topic_placement.hpp"
#include "net/blocking_client.hpp"
#include "net/http_client.hpp"
#include "node/node_services.hpp"
#include "util/logging.hpp"

namespace moonmq::composition {
namespace {

/// Checks that `dir` exists (creating it) and is writable; "" on success,
/// else the reason.
std::string prepare_data_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return "cannot create data dir " + dir + ": " + ec.message();
  auto probe = std::filesystem::path(dir) / ".moonmq-write-probe";
  {
    std::ofstream out{probe};
    if (!(out << "ok") || !out.flush())
      return "data dir " + dir + " is not writable";
  }
  std::filesystem::remove(probe, ec);
  return {};
}

/// Every partition keeps its active segment open: raise the soft limit on
/// open files to the hard limit.
void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

/// Autobalance.GoalsDir, or <dir of moonmq-node>/plugins when unset.
std::string goals_dir(const config::node_config& cfg) {
  if (!cfg.autobalance.goals_dir.empty())
    return cfg.autobalance.goals_dir;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("plugins") : (exe.parent_path() / "plugins").string();
}

/// Loads the goal plugins once at start-up; a bad plugin is logged and
/// skipped, never fatal.
std::shared_ptr<plugins::goal_registry> load_goals(const config::node_config& cfg) {
  auto registry = std::make_shared<plugins::goal_registry>(goals_dir(cfg));
  auto report = registry->reload();
  auto logger = log::get("plugins");
  logger->info("plugins.loaded dir={} goals={} errors={}", registry->dir(), report.goals.size(),
               report.errors.size());
  for (const auto& e : report.errors)
    logger->warn("plugins.refused path={} error=\"{}\"", e.path, e.message);
  return registry;
}

/// A keep-alive HTTP client to a peer's cluster listener (wrapped as the
/// node was told), or null for a bad address.
std::shared_ptr<transport::peer_link> http_link(const node_services& n, std::string name, const std::string& peer,
                                               const std::string& address, std::chrono::milliseconds timeout,
                                               int max_connections, int max_queued) {
  transport::http_client_options o;
  o.name = std::move(name);
  if (!transport::split_host_port(address, o.host, o.port))
    return nullptr;
  o.timeout = timeout;
  o.max_connections = max_connections;
  if (max_queued > 0)
    o.max_queued = max_queued;
  o.tls = n.peer_tls;
  std::shared_ptr<transport::peer_link> link = std::make_shared<transport::http_client>(*n.io, o);
  return n.wrap_peer_link ? n.wrap_peer_link(peer, std::move(link)) : link;
}

/// Spawns the raft_node with a keep-alive client of its own per peer (Raft
/// heartbeats never queue behind partition copies), kept in n.raft_clients
/// so that shutdown closes them.
raft_link spawn_raft(node_services& n) {
  const auto& cfg = n.cfg;
  auto& sys = *n.system;
  raft_node_settings rs;
  // A topic exists on every broker once its entry is applied there: the
  // broker creates or grows its local copy (owned as the image says).
  // A topic the log deleted, or created anew under the same name, loses its
  // local copy first (the broker handles the delete before the adopt).
  // A deleted topic's committed offsets go with it (Kafka drops them too).
  rs.on_topics = [broker = n.broker, catalog = n.catalog, groups = n.groups](const owner_view& image) {
    auto [topics, deleted] = image.topics_and_deleted();
    sync_local_topics(broker, *catalog, *topics, *deleted, image.topic_defaults().values, &groups);
  };
  rs.broker_id = cfg.broker_id();
  rs.election_timeout_ms = cfg.cluster->raft.election_timeout_ms;
  rs.heartbeat_ms = cfg.cluster->raft.heartbeat_ms;
  rs.max_log_entries = cfg.cluster->raft.max_log_entries;
  rs.session_timeout_ms = cfg.cluster->raft.session_timeout_ms;
  rs.lease_ms = cfg.cluster->raft.lease_ms;
  rs.proposal_timeout = n.peer_timeout();
  // Three election timeouts: the bound docs/raft.md gives for electing a leader.
  rs.leader_wait = std::max<std::chrono::milliseconds>(rs.proposal_timeout,
                                                       std::chrono::milliseconds(3 * cfg.cluster->raft.election_timeout_ms));
  auto raft_client = [&n, timeout = cfg.cluster->raft.election_timeout_ms](const std::string& id,
                                                                            const std::string& address) {
    return http_link(n, id + "-raft", id, address, std::chrono::milliseconds(timeout), 4, 64);
  };
  for (const auto& p : cfg.cluster->peers)  // addresses checked with the peers' own clients
    rs.peers.push_back({p.id, p.address, p.client_address, p.token.empty() ? cfg.cluster->token : p.token,
                        raft_client(p.id, p.address), p.kafka_address});
  // Brokers that register at runtime get Raft clients of their own, and the
  // peer directory every other context reads learns them.
  auto clients = std::make_shared<transport::peer_directory>(rs.peers, raft_client, cfg.cluster->token);
  n.raft_clients = clients;
  rs.connect = [clients](const std::string& id, const std::string& address) { return clients->connect(id, address); };
  // A joined broker gets a peer actor too (its row in /admin/actors, its
  // moonmq_peer_up series); a removed one loses it.
  rs.on_brokers = [&sys, directory = n.peers, learned = n.learned_peers, registry = n.registry, owners = n.owners,
                   self = cfg.broker_id(), timeout = n.peer_timeout()](std::shared_ptr<const broker_standing> standing) {
    auto reachable = standing->registered;  // a removed broker is no longer talked to
    for (const auto& id : standing->removed)
      reachable.erase(id);
    std::lock_guard<std::mutex> g{learned->mtx};
    for (const auto& id : directory->learn(self, reachable)) {
      log::get("node")->info("node.peer_learned broker={} peer={}", self, id);
      auto peer = directory->find(id);
      if (!peer || learned->stopped)
        continue;
      if (auto old = learned->actors.find(id); old != learned->actors.end())
        caf::anon_send_exit(old->second, caf::exit_reason::user_shutdown);  // a new address
      learned->actors[id] = spawn_peer(sys, *peer, timeout, std::chrono::seconds(5), registry, owners);
    }
    for (auto it = learned->actors.begin(); it != learned->actors.end();) {
      if (reachable.count(it->first)) {
        ++it;
        continue;
      }
      // Its moonmq_peer_up series goes with it (the actor removes it as it exits).
      caf::anon_send_exit(it->second, caf::exit_reason::user_shutdown);
      it = learned->actors.erase(it);
    }
  };
  rs.voters = cfg.cluster->raft.voters;
  std::vector<std::string> brokers = rs.voters;
  std::string learner;
  if (brokers.empty()) {
    brokers.push_back(cfg.broker_id());
    for (const auto& p : cfg.cluster->peers)
      brokers.push_back(p.id);
  } else if (std::find(brokers.begin(), brokers.end(), cfg.broker_id()) == brokers.end()) {
    // A joining broker counts itself from the start (group coordinators);
    // the others count it once its registration applies, which also gives
    // it its Kafka node id.
    learner = cfg.broker_id();
  }
  n.owners->set_voters(brokers, learner);
  auto view = std::make_shared<raft_view>();
  auto node = spawn_raft_node(sys, std::move(rs), std::move(n.raft_store), n.owners, view, n.registry);
  return raft_link{view, node, std::move(brokers)};
}

/// With a cluster: the peer links and actors, the raft node, the cluster
/// state, the move destination, the reassigner and the balancer.
std::string spawn_cluster_actors(node_services& n, std::string& event) {
  const auto& cfg = n.cfg;
  auto& sys = *n.system;
  // A held copy keeps its connection until the destination applies it,
  // so each move's window needs a connection per append in flight, beside
  // the control-plane calls (docs/cluster.md "How a move runs").
  const int peer_connections =
    std::min(64, std::max(4, cfg.cluster->move_window * cfg.cluster->max_concurrent_moves + 2));
  auto peer_client = [&n, timeout = n.peer_timeout(), peer_connections](const std::string& id,
                                                                        const std::string& address) {
    return http_link(n, id, id, address, timeout, peer_connections, 0);
  };
  std::vector<transport::cluster_peer> configured;
  for (const auto& p : cfg.cluster->peers) {
    auto client = peer_client(p.id, p.address);
    if (!client) {
      event = "node.peer_failed";
      return "peer " + p.id + ": bad address " + p.address;
    }
    configured.push_back({p.id, p.address, p.client_address, p.token.empty() ? cfg.cluster->token : p.token,
                          std::move(client), p.kafka_address});
  }
  // The configured peers, and every broker the metadata log registers
  // later (docs/metadata.md "Joining"): one directory all contexts read.
  n.peers = std::make_shared<transport::peer_directory>(configured, peer_client, cfg.cluster->token);
  for (const auto& p : configured)
    n.peer_actors.push_back(spawn_peer(sys, p, n.peer_timeout(), std::chrono::seconds(5), n.registry, n.owners));
  n.raft = spawn_raft(n);
  topic_placement_settings placement{cfg.cluster->topic_placement, n.traits, cfg.autobalance.excluded_brokers,
                                     3 * static_cast<int64_t>(cfg.placement.heartbeat_ms)};
  n.traits->set(cfg.broker_id(), {cfg.cluster->rack, cfg.cluster->weight, cluster::topic_placement_version});
  n.cluster_state = spawn_cluster_state(sys, cfg.broker_id(), n.owners, n.registry, *n.raft, n.broker, n.catalog,
                                        n.groups, std::move(placement));
  const bool shared = !cfg.broker.shared_dir.empty();  // a move copies nothing

  move_destination_settings ds;
  ds.broker_id = cfg.broker_id();
  ds.timeout = n.peer_timeout();
  ds.shared = shared;
  n.destination = spawn_move_destination(sys, ds, n.catalog, n.owners, *n.cluster_state, n.broker, n.groups,
                                         n.registry);

  reassigner_settings rs;
  rs.data_dir = cfg.data_dir;
  rs.broker_id = cfg.broker_id();
  rs.batch_bytes = cfg.cluster->batch_bytes;
  rs.copy_window = cfg.cluster->move_window;
  rs.throttle_bytes_per_sec = cfg.cluster->move_throttle_bytes_per_sec;
  rs.max_concurrent = cfg.cluster->max_concurrent_moves;
  rs.confirm_timeout = std::chrono::seconds(cfg.cluster->move_confirm_timeout_seconds);
  rs.peer_timeout = n.peer_timeout();
  rs.peers = n.peers;
  // An election after a restart may wait out the others' longer timeouts
  // (pre-vote is refused while they still hear from the old leader): at
  // least 10 s, three of this broker's election timeouts, or PeerTimeout.
  rs.leader_wait = std::max({rs.peer_timeout, std::chrono::milliseconds(3 * cfg.cluster->raft.election_timeout_ms),
                             std::chrono::milliseconds(10000)});
  rs.raft_status = n.raft->view;
  rs.shared = shared;
  rs.destination = *n.destination;  // the leader's confirm of an orphaned move to this broker
  n.reassigner = spawn_reassigner(sys, rs, n.catalog, n.owners, *n.cluster_state, n.groups, n.registry);

  balancer_settings loop;
  loop.broker_id = cfg.broker_id();
  loop.config = cfg.autobalance;
  loop.peers = n.peers;
  loop.peer_timeout = n.peer_timeout();
  loop.throttle_bytes_per_sec = cfg.cluster->move_throttle_bytes_per_sec;
  loop.image = n.owners;            // PATCH /admin/balancer settings from the metadata log
  loop.raft = n.raft->view;         // the leader's per-peer silence, for the shared-storage failover
  loop.traits = n.traits;    // its slow verdicts keep new partitions off slow brokers
  // Shared storage: the leader hands a fenced broker's partitions over
  // once it has been silent for the lease and its margin (docs/shared-storage.md).
  loop.shared_storage = shared;
  // A deposed leader may echo the broker's answers for max(ElectionTimeoutMs,
  // LeaseMs) after this leader starts counting (docs/shared-storage.md).
  loop.failover_wait_ms = std::max<int64_t>(cfg.cluster->raft.election_timeout_ms, cfg.cluster->raft.lease_ms) +
                          cfg.cluster->raft.lease_ms + cfg.cluster->raft.lease_margin_ms;
  loop.takeover_hold = n.takeover_hold;
  loop.local_loads = [&sys, view = n.catalog, owners = n.owners, id = cfg.broker_id(), timeout = loads_timeout(n),
                      traits = transport::broker_traits{cfg.cluster->rack, cfg.cluster->weight}](
                       std::function<void(nlohmann::json)> done) {
    transport::collect_local_loads(sys, view->get(), owners->get(), id, timeout, std::move(done), traits);
  };
  n.balancer = spawn_balancer(sys, loop, n.goals, *n.cluster_state, *n.reassigner, n.registry);
  return {};
}

}  // namespace

std::chrono::milliseconds node_services::peer_timeout() const {
  return cfg.cluster ? std::chrono::seconds(cfg.cluster->peer_timeout_seconds) : std::chrono::seconds(5);
}

std::chrono::milliseconds probe_timeout(const node_services& n) {
  return std::min<std::chrono::milliseconds>(n.peer_timeout(), std::chrono::seconds(2));
}

std::chrono::milliseconds loads_timeout(const node_services& n) {
  return probe_timeout(n) / 2;  // a peer's loads arrive within our survey deadline
}

std::vector<caf::actor> node_services::children() const {
  std::vector<caf::actor> out{caf::actor_cast<caf::actor>(broker), caf::actor_cast<caf::actor>(groups)};
  if (cluster_state)
    out.push_back(caf::actor_cast<caf::actor>(*cluster_state));
  if (reassigner)
    out.push_back(caf::actor_cast<caf::actor>(*reassigner));
  if (destination)
    out.push_back(caf::actor_cast<caf::actor>(*destination));
  if (balancer)
    out.push_back(caf::actor_cast<caf::actor>(*balancer));
  for (const auto& p : peer_actors)
    out.push_back(caf::actor_cast<caf::actor>(p));
  if (raft)
    out.push_back(caf::actor_cast<caf::actor>(raft->node));
  out.push_back(caf::actor_cast<caf::actor>(meter));
  out.insert(out.end(), more_children.begin(), more_children.end());
  return out;
}

void node_services::close_peers() {
  peers->close();
  if (raft_clients)
    raft_clients->close();
}

void node_services::stop_actors() {
  for (auto& c : children())
    caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
  stop_learned_peers();
  caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
}

void node_services::stop_learned_peers() {
  std::lock_guard<std::mutex> g{learned_peers->mtx};
  for (auto& [id, p] : learned_peers->actors)
    caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
  learned_peers->actors.clear();
  learned_peers->stopped = true;
}

std::string open_state(node_services& n, std::string& event) {
  const auto& cfg = n.cfg;
  if (auto why = prepare_data_dir(cfg.data_dir); !why.empty()) {
    event = "node.data_dir_failed";
    return why;
  }
  if (!cfg.broker.shared_dir.empty())
    if (auto why = prepare_data_dir(cfg.broker.shared_dir); !why.empty()) {
      event = "node.shared_dir_failed";
      return why;
    }
  raise_fd_limit();
  std::string why;
  n.loaded_catalog = dataplane::topic_catalog::load(cfg.data_dir, why);
  if (!n.loaded_catalog) {
    event = "node.catalog_failed";
    return why;
  }
  if (auto store = groups::offset_store::open(cfg.data_dir)) {
    n.offset_store = std::make_shared<groups::offset_store>(std::move(store.value()));
  } else {
    event = "node.offsets_failed";
    return store.err().message;
  }
  if (!cfg.cluster)
    return {};
  // A corrupt Raft store stops the boot here, never a silent reset.
  if (why = check_legacy_cluster_state(cfg.data_dir); !why.empty()) {
    event = "node.cluster_state_failed";
    return why;
  }
  if (why = open_raft_store(cfg.data_dir, n.raft_store, *n.owners); !why.empty()) {
    event = "node.raft_state_failed";
    return why;
  }
  if (why = check_move_journal(cfg.data_dir); !why.empty()) {
    event = "node.move_journal_failed";
    return why;
  }
  event = "node.tls_failed";
  auto settings = transport::tls_settings_from_config(cfg.cluster->tls, why);
  if (!settings)
    return why;
  if (settings->enabled()) {
    auto made = transport::tls_context::make_server(*settings);
    if (!made.context)
      return made.error;
    n.cluster_tls = made.context;
    auto client = transport::tls_context::make_client(*settings);
    if (!client.context)
      return client.error;
    n.peer_tls = client.context;
  }
  event.clear();
  if (cfg.cluster->token.empty())
    log::get("node")->warn("cluster.no_token broker={} msg=\"Cluster.Token is empty: inter-broker requests are not "
                           "authenticated\"",
                           cfg.broker_id());
  return {};
}

std::string spawn_actors(node_services& n, std::string& event) {
  const auto& cfg = n.cfg;
  n.system_config = make_system_config(cfg.scheduler);
  n.system = std::make_unique<caf::actor_system>(*n.system_config);
  auto& sys = *n.system;
  n.registry = spawn_registry(sys, std::chrono::milliseconds{500});

  broker_settings bs;
  bs.broker_id = cfg.broker_id();
  bs.data_dir = cfg.data_dir;
  bs.retention_check_ms = cfg.broker.retention_check_ms;
  bs.io.threads = cfg.broker.io_threads;
  bs.io.max_open_files = cfg.broker.max_open_files;
  bs.io.write_ahead_log = cfg.broker.write_ahead_log;
  bs.io.wal_checkpoint_bytes = cfg.broker.wal_checkpoint_bytes;
  bs.io.wal_max_batch_bytes = cfg.broker.wal_max_batch_bytes;
  bs.image = cfg.cluster ? n.owners : nullptr;
  bs.shared_dir = cfg.broker.shared_dir;
  // Shared storage: acknowledgements need the lease, and a take-back waits
  // out the destination's (docs/shared-storage.md "The lease", "Take-back").
  if (!bs.shared_dir.empty()) {
    bs.io.lease_valid = [] { return cluster::lease_gate::process().valid_now(); };
    if (cfg.cluster)
      n.takeover_hold = std::make_shared<cluster::takeover_hold>(cfg.cluster->raft.lease_ms
                                                                 + cfg.cluster->raft.lease_margin_ms);
    bs.io.takeover_hold = n.takeover_hold;
  }
  n.broker = spawn_broker(sys, std::move(bs), std::move(*n.loaded_catalog), n.catalog, n.registry);
  n.loaded_catalog.reset();
  // The disk's latency even without traffic, for the balancer's slow-broker
  // check (storage/disk_latency.hpp); a standalone broker has no balancer.
  if (cfg.cluster)
    n.disk_probe.emplace(cfg.data_dir, std::chrono::seconds{1});
  group_settings gs;
  gs.data_dir = cfg.data_dir;
  gs.session_timeout_ms = cfg.broker.session_timeout_ms;
  gs.kafka_initial_rebalance_delay_ms = cfg.kafka.group_initial_rebalance_delay_ms;
  if (!cfg.broker.shared_dir.empty()) {  // committed offsets live beside the logs (docs/shared-storage.md)
    gs.shared_dir = cfg.broker.shared_dir;
    gs.shared = std::make_shared<const shared_mode>(shared_mode{
      n.owners, cfg.broker_id(), [] { return cluster::lease_gate::process().valid_now(); }, n.takeover_hold});
  }
  n.groups = spawn_group_coordinator(sys, std::move(gs), n.catalog, n.registry, std::move(n.offset_store));
  // The broker loads the topic catalogue into `catalog` when it starts
  // running, after spawn returned; the client routes read `catalog`
  // directly. One answer from the broker means it is loaded, so no request
  // sees an empty catalogue.
  {
    caf::scoped_actor self{sys};
    bool catalogue_loaded = false;
    self->request(n.broker, std::chrono::minutes(2), status_atom::value)
      .receive([&](std::string&) { catalogue_loaded = true; }, [](caf::error&) {});
    if (!catalogue_loaded) {
      caf::anon_send_exit(n.broker, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(n.groups, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(n.registry, caf::exit_reason::user_shutdown);
      event = "node.broker_failed";
      return "the broker did not load its topic catalogue within 2 minutes";
    }
  }

  n.io = std::make_unique<transport::io_pool>(cfg.http.threads);
  n.goals = load_goals(cfg);
  // Session placement (docs/placement.md): the client routes feed the
  // probe, the load_meter publishes its report for /cluster/loads.
  n.sessions = std::make_shared<session_probe>(cfg.placement.client_session_ttl_ms, cfg.broker.session_timeout_ms);
  n.client_port = std::make_shared<std::atomic<uint16_t>>(cfg.client.port);
  if (cfg.cluster)
    if (auto why = spawn_cluster_actors(n, event); !why.empty()) {
      n.stop_actors();
      return why;
    }
  load_meter_settings lms;
  lms.broker_id = cfg.broker_id();
  lms.config = cfg.placement;
  lms.excluded_brokers = cfg.autobalance.excluded_brokers;
  lms.peers = n.peers;
  if (cfg.cluster)
    lms.peer_timeout = probe_timeout(n);
  lms.client_host = cfg.client.host;
  lms.client_port = n.client_port;
  lms.probe = n.sessions;
  lms.published = n.session_load;
  lms.traits = n.traits;
  n.meter = spawn_load_meter(sys, std::move(lms), n.registry);
  return {};
}

}  // namespace moonmq::composition

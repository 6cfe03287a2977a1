// moonmq-node: one broker (CONTRACT.md §1).
//
//   moonmq-node [--config FILE] [--set Dotted.Key=value ...]
//
// Exit codes: 0 clean shutdown (SIGINT/SIGTERM), 1 runtime failure (a
// listener that cannot bind, an unwritable data dir), 2 invalid
// configuration (the message names the key or the file and line).

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <iostream>
#include <pthread.h>
#include <optional>
#include <tuple>

#include <CLI/CLI.hpp>
#include <caf/all.hpp>

#include <malloc.h>
#include <sys/resource.h>

#include "actors/balancer.hpp"
#include "actors/broker.hpp"
#include "actors/broker_traits_view.hpp"
#include "actors/cluster_state.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/load_meter.hpp"
#include "actors/move_destination.hpp"
#include "actors/node.hpp"
#include "actors/peer.hpp"
#include "actors/reassigner.hpp"
#include "actors/registry.hpp"
#include "actors/shared_mode.hpp"
#include "actors/session_probe.hpp"
#include "actors/system.hpp"
#include "cluster/lease_gate.hpp"
#include "cluster/takeover_hold.hpp"
#include "cluster/topic_placement.hpp"
#include "config/loader.hpp"
#include "moonmq/version.hpp"
#include "dataplane/topic_catalog.hpp"
#include "plugins/goal_loader.hpp"
#include "api/admin_routes.hpp"
#include "api/client_routes.hpp"
#include "api/group_routes.hpp"
#include "api/cluster_admin_routes.hpp"
#include "api/console_routes.hpp"
#include "api/cluster_routes.hpp"
#include "api/move_routes.hpp"
#include "api/raft_routes.hpp"
#include "raft/raft_store.hpp"
#include "storage/disk_latency.hpp"
#include "api/session_routes.hpp"
#include "api/local_loads.hpp"
#include "net/blocking_client.hpp"
#include "net/http_client.hpp"
#include "net/tls.hpp"
#include "net/http_server.hpp"
#include "api/kafka_listener.hpp"
#include "api/kafka_txn.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

namespace {

using namespace moonmq;

/// Pins glibc malloc's mmap threshold at 32 MiB and its trim threshold at
/// 64 MiB: the values its dynamic adjustment reaches after the first freed
/// 32 MiB block (mallopt(3)), set from the start. Batch lists, request
/// bodies and fetch answers of 128 KiB to a few MiB are then reused from
/// the heap instead of being mapped and unmapped each time: every fresh
/// page is a page fault, which made the source read and the destination
/// append of a move copy each cost several ms per MiB on a virtual machine,
/// and a window of appends gained nothing (bench/move/README.md). Freed
/// memory is kept for reuse (trimmed only past 64 MiB at the top of each
/// arena). The environment's MALLOC_MMAP_THRESHOLD_ /
/// MALLOC_TRIM_THRESHOLD_, or the same glibc.malloc tunables in
/// GLIBC_TUNABLES, win.
void tune_malloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  auto tuned = [tunables](const char* env, const char* tunable) {
    return std::getenv(env) != nullptr || (tunables && std::strstr(tunables, tunable));
  };
  if (!tuned("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold"))
    ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (!tuned("MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold"))
    ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

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

/// SIGINT and SIGTERM, blocked in every thread from the start of main (so
/// that a signal arriving during start-up is not lost) and taken by sigwait.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
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

/// The peer actors of brokers that joined at runtime (one per registered
/// broker, as a configured peer has one), made by the raft thread as
/// registrations apply and stopped with the node.
struct learned_peer_actors {
  std::mutex mtx;
  std::map<std::string, peer_actor> actors;
  bool stopped = false;  ///< the node is stopping: no new actor
};

/// Spawns the raft_node with a keep-alive client of its own per peer (Raft
/// heartbeats never queue behind partition copies), appended to `clients`
/// so that shutdown closes them.
raft_link spawn_raft(caf::actor_system& sys, const config::node_config& cfg, transport::io_pool& io,
                     std::shared_ptr<const transport::tls_context> tls, std::unique_ptr<raft::raft_store> store,
                     std::shared_ptr<owner_view> owners, registry_actor registry,
                     std::shared_ptr<transport::peer_directory>& clients, broker_actor broker, group_actor groups,
                     std::shared_ptr<catalog_view> catalog, std::shared_ptr<transport::peer_directory> directory,
                     std::shared_ptr<learned_peer_actors> learned) {
  raft_node_settings rs;
  // A topic exists on every broker once its entry is applied there: the
  // broker creates or grows its local copy (owned as the image says).
  // A topic the log deleted, or created anew under the same name, loses its
  // local copy first (the broker handles the delete before the adopt).
  // A deleted topic's committed offsets go with it (Kafka drops them too).
  rs.on_topics = [broker, catalog, groups](const owner_view& image) {
    auto [topics, deleted] = image.topics_and_deleted();
    sync_local_topics(broker, *catalog, *topics, *deleted, image.topic_defaults().values, &groups);
  };
  rs.broker_id = cfg.broker_id();
  rs.election_timeout_ms = cfg.cluster->raft.election_timeout_ms;
  rs.heartbeat_ms = cfg.cluster->raft.heartbeat_ms;
  rs.max_log_entries = cfg.cluster->raft.max_log_entries;
  rs.session_timeout_ms = cfg.cluster->raft.session_timeout_ms;
  rs.lease_ms = cfg.cluster->raft.lease_ms;
  rs.proposal_timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds);
  // Three election timeouts: the bound docs/raft.md gives for electing a leader.
  rs.leader_wait = std::max<std::chrono::milliseconds>(rs.proposal_timeout,
                                                       std::chrono::milliseconds(3 * cfg.cluster->raft.election_timeout_ms));
  auto raft_client = [&io, tls, timeout = cfg.cluster->raft.election_timeout_ms](
                       const std::string& id, const std::string& address) -> std::shared_ptr<transport::http_client> {
    transport::http_client_options o;
    o.name = id + "-raft";
    if (!transport::split_host_port(address, o.host, o.port))
      return nullptr;
    o.timeout = std::chrono::milliseconds(timeout);
    o.max_connections = 4;
    o.max_queued = 64;
    o.tls = tls;
    return std::make_shared<transport::http_client>(io, o);
  };
  for (const auto& p : cfg.cluster->peers)  // addresses checked with the peers' own clients
    rs.peers.push_back({p.id, p.address, p.client_address, p.token.empty() ? cfg.cluster->token : p.token,
                        raft_client(p.id, p.address), p.kafka_address});
  // Brokers that register at runtime get Raft clients of their own, and the
  // peer directory every other context reads learns them.
  clients = std::make_shared<transport::peer_directory>(rs.peers, raft_client, cfg.cluster->token);
  rs.connect = [clients](const std::string& id, const std::string& address) { return clients->connect(id, address); };
  // A joined broker gets a peer actor too (its row in /admin/actors, its
  // moonmq_peer_up series); a removed one loses it.
  rs.on_brokers = [&sys, directory, learned, registry, owners, self = cfg.broker_id(),
                   timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds)](
                    std::shared_ptr<const broker_standing> standing) {
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
  owners->set_voters(brokers, learner);
  auto view = std::make_shared<raft_view>();
  auto node = spawn_raft_node(sys, std::move(rs), std::move(store), std::move(owners), view, registry);
  return raft_link{view, node, std::move(brokers)};
}

int run(const config::load_result& loaded) {
  const auto& cfg = loaded.config;
  auto logger = log::get("node");
  if (auto why = prepare_data_dir(cfg.data_dir); !why.empty())
    return fail("node.data_dir_failed", why);
  if (!cfg.broker.shared_dir.empty())
    if (auto why = prepare_data_dir(cfg.broker.shared_dir); !why.empty())
      return fail("node.shared_dir_failed", why);
  raise_fd_limit();
  std::string why;
  auto catalog = dataplane::topic_catalog::load(cfg.data_dir, why);
  if (!catalog)
    return fail("node.catalog_failed", why);
  if (why = check_offset_store(cfg.data_dir); !why.empty())
    return fail("node.offsets_failed", why);
  std::shared_ptr<const transport::tls_context> cluster_tls, peer_tls;
  // The owners every request path reads, from the Raft store (a corrupt one
  // stops the boot here, never a silent reset).
  auto owners = std::make_shared<owner_view>();
  std::unique_ptr<raft::raft_store> raft_store;
  if (cfg.cluster) {
    if (why = check_legacy_cluster_state(cfg.data_dir); !why.empty())
      return fail("node.cluster_state_failed", why);
    if (why = open_raft_store(cfg.data_dir, raft_store, *owners); !why.empty())
      return fail("node.raft_state_failed", why);
    if (why = check_move_journal(cfg.data_dir); !why.empty())
      return fail("node.move_journal_failed", why);
    auto settings = transport::tls_settings_from_config(cfg.cluster->tls, why);
    if (!settings)
      return fail("node.tls_failed", why);
    if (settings->enabled()) {
      auto made = transport::tls_context::make_server(*settings);
      if (!made.context)
        return fail("node.tls_failed", made.error);
      cluster_tls = made.context;
      auto client = transport::tls_context::make_client(*settings);
      if (!client.context)
        return fail("node.tls_failed", client.error);
      peer_tls = client.context;
    }
    if (cfg.cluster->token.empty())
      logger->warn("cluster.no_token broker={} msg=\"Cluster.Token is empty: inter-broker requests are not "
                   "authenticated\"",
                   cfg.broker_id());
  }
  metrics::register_process_metrics(version_string);

  auto sys_cfg = make_system_config(cfg.scheduler);
  caf::actor_system sys{*sys_cfg};
  auto registry = spawn_registry(sys, std::chrono::milliseconds{500});

  auto view = std::make_shared<catalog_view>();
  broker_settings bs;
  bs.broker_id = cfg.broker_id();
  bs.data_dir = cfg.data_dir;
  bs.retention_check_ms = cfg.broker.retention_check_ms;
  bs.io.threads = cfg.broker.io_threads;
  bs.io.max_open_files = cfg.broker.max_open_files;
  bs.io.write_ahead_log = cfg.broker.write_ahead_log;
  bs.io.wal_checkpoint_bytes = cfg.broker.wal_checkpoint_bytes;
  bs.io.wal_max_batch_bytes = cfg.broker.wal_max_batch_bytes;
  bs.image = cfg.cluster ? owners : nullptr;
  bs.shared_dir = cfg.broker.shared_dir;
  // Shared storage: acknowledgements need the lease, and a take-back waits
  // out the destination's (docs/shared-storage.md "The lease", "Take-back").
  std::shared_ptr<cluster::takeover_hold> takeover_hold;
  if (!bs.shared_dir.empty()) {
    bs.io.lease_valid = [] { return cluster::lease_gate::process().valid_now(); };
    if (cfg.cluster)
      takeover_hold = std::make_shared<cluster::takeover_hold>(cfg.cluster->raft.lease_ms
                                                               + cfg.cluster->raft.lease_margin_ms);
    bs.io.takeover_hold = takeover_hold;
  }
  auto broker = spawn_broker(sys, std::move(bs), std::move(*catalog), view, registry);
  // The disk's latency even without traffic, for the balancer's slow-broker
  // check (storage/disk_latency.hpp); a standalone broker has no balancer.
  std::optional<storage::disk_probe> disk_probe;
  if (cfg.cluster)
    disk_probe.emplace(cfg.data_dir, std::chrono::seconds{1});
  group_settings gs;
  gs.data_dir = cfg.data_dir;
  gs.session_timeout_ms = cfg.broker.session_timeout_ms;
  gs.kafka_initial_rebalance_delay_ms = cfg.kafka.group_initial_rebalance_delay_ms;
  if (!cfg.broker.shared_dir.empty()) {  // committed offsets live beside the logs (docs/shared-storage.md)
    gs.shared_dir = cfg.broker.shared_dir;
    gs.shared = std::make_shared<const shared_mode>(
      shared_mode{owners, cfg.broker_id(), [] { return cluster::lease_gate::process().valid_now(); }, takeover_hold});
  }
  auto groups = spawn_group_coordinator(sys, std::move(gs), view, registry);
  // The broker loads the topic catalogue into `view` when it starts running,
  // after spawn returned; the client routes read `view` directly. One answer
  // from the broker means it is loaded, so no request sees an empty catalogue.
  {
    caf::scoped_actor self{sys};
    bool catalogue_loaded = false;
    self->request(broker, std::chrono::minutes(2), status_atom::value)
      .receive([&](std::string&) { catalogue_loaded = true; }, [](caf::error&) {});
    if (!catalogue_loaded) {
      caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(groups, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
      return fail("node.broker_failed", "the broker did not load its topic catalogue within 2 minutes");
    }
  }

  transport::io_pool io{cfg.http.threads};
  auto admin_router = std::make_shared<transport::router>();
  transport::admin_context actx;
  actx.system = &sys;
  actx.registry = registry;
  actx.broker_id = cfg.broker_id();
  actx.token = cfg.admin.token;
  actx.goals = load_goals(cfg);
  actx.catalog = view;  // POST /admin/partitions/{topic}/{partition}/truncate-corrupt
  actx.groups = groups;  // GET /metrics: group lag
  auto client_router = std::make_shared<transport::router>();
  transport::client_context cctx;
  cctx.system = &sys;
  cctx.broker = broker;
  cctx.groups = groups;
  cctx.catalog = view;
  cctx.broker_id = cfg.broker_id();
  // Session placement (docs/placement.md): the client routes feed
  // the probe, the load_meter publishes its report for /cluster/loads.
  auto sessions = std::make_shared<session_probe>(cfg.placement.client_session_ttl_ms, cfg.broker.session_timeout_ms);
  auto session_load = std::make_shared<session_load_view>();
  auto client_port = std::make_shared<std::atomic<uint16_t>>(cfg.client.port);
  cctx.sessions = sessions;

  std::optional<cluster_state_actor> cluster_state;
  // Each broker's rack, weight and topic placement version (the load_meter
  // keeps the peers', from their load reports) for placing new partitions.
  auto broker_traits = std::make_shared<broker_traits_view>();
  std::optional<reassigner_actor> reassigner;
  std::optional<move_destination_actor> destination;
  std::optional<balancer_actor> balancer;
  std::vector<peer_actor> peer_actors;
  auto learned_peers = std::make_shared<learned_peer_actors>();
  transport::raft_context rctx;
  std::shared_ptr<transport::peer_directory> raft_clients;
  std::shared_ptr<transport::peer_directory> directory = std::make_shared<transport::peer_directory>();
  auto cluster_router = std::make_shared<transport::router>();
  std::unique_ptr<transport::http_server> cluster_server;
  transport::cluster_admin_context cactx;
  cactx.system = &sys;
  cactx.broker_id = cfg.broker_id();
  if (cfg.cluster)
    cactx.traits = {cfg.cluster->rack, cfg.cluster->weight};
  cactx.catalog = view;
  if (cfg.cluster) {
    cactx.owners = owners;
    cctx.owners = owners;
    cctx.default_partitions = cfg.cluster->num_partitions;
    cactx.probe_timeout = std::min<std::chrono::milliseconds>(std::chrono::seconds(cfg.cluster->peer_timeout_seconds),
                                                              std::chrono::seconds(2));
    // A held copy keeps its connection until the destination applies it,
    // so each move's window needs a connection per append in flight, beside
    // the control-plane calls (docs/cluster.md "How a move runs").
    const int peer_connections =
      std::min(64, std::max(4, cfg.cluster->move_window * cfg.cluster->max_concurrent_moves + 2));
    auto peer_client = [&io, peer_tls, timeout = cfg.cluster->peer_timeout_seconds, peer_connections](
                         const std::string& id, const std::string& address) -> std::shared_ptr<transport::http_client> {
      transport::http_client_options o;
      o.name = id;
      if (!transport::split_host_port(address, o.host, o.port))
        return nullptr;
      o.timeout = std::chrono::seconds(timeout);
      o.max_connections = peer_connections;
      o.tls = peer_tls;
      return std::make_shared<transport::http_client>(io, o);
    };
    std::vector<transport::cluster_peer> configured;
    for (const auto& p : cfg.cluster->peers) {
      auto client = peer_client(p.id, p.address);
      if (!client)
        return fail("node.peer_failed", "peer " + p.id + ": bad address " + p.address);
      configured.push_back({p.id, p.address, p.client_address, p.token.empty() ? cfg.cluster->token : p.token,
                            std::move(client), p.kafka_address});
    }
    // The configured peers, and every broker the metadata log registers
    // later (docs/metadata.md "Joining"): one directory all contexts read.
    directory = std::make_shared<transport::peer_directory>(configured, peer_client, cfg.cluster->token);
    cactx.peers = directory;
    cctx.peers = directory;
    // POST /admin/plugins/reload reaches every broker.
    actx.peers = directory;
    actx.peer_timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds);
    for (const auto& p : configured)
      peer_actors.push_back(spawn_peer(sys, p, std::chrono::seconds(cfg.cluster->peer_timeout_seconds),
                                       std::chrono::seconds(5), registry, owners));
    auto raft = spawn_raft(sys, cfg, io, peer_tls, std::move(raft_store), owners, registry, raft_clients, broker, groups,
                           view, directory, learned_peers);
    cactx.raft = raft.view;
    rctx.node = raft.node;
    topic_placement_settings placement{cfg.cluster->topic_placement, broker_traits, cfg.autobalance.excluded_brokers,
                                       3 * static_cast<int64_t>(cfg.placement.heartbeat_ms)};
    broker_traits->set(cfg.broker_id(), {cfg.cluster->rack, cfg.cluster->weight, cluster::topic_placement_version});
    cluster_state = spawn_cluster_state(sys, cfg.broker_id(), owners, registry, raft, broker, view, groups,
                                        std::move(placement));
    cctx.metadata = *cluster_state;  // topics are created through the metadata log
    cactx.state = *cluster_state;
    transport::cluster_context kctx;
    kctx.system = &sys;
    kctx.state = *cluster_state;
    kctx.catalog = view;
    kctx.owners = owners;
    kctx.broker_id = cfg.broker_id();
    kctx.traits = {cfg.cluster->rack, cfg.cluster->weight};
    kctx.token = cfg.cluster->token;
    kctx.timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds);
    kctx.loads_timeout = cactx.probe_timeout / 2;  // a peer's loads arrive within our survey deadline
    kctx.session_load = session_load;  // session placement
    kctx.goals = actx.goals;           // POST /cluster/plugins/reload
    kctx.shared_storage = !cfg.broker.shared_dir.empty();
    transport::add_cluster_routes(*cluster_router, kctx);
    rctx.system = &sys;
    rctx.broker_id = cfg.broker_id();
    rctx.propose_timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds);
    transport::add_raft_routes(*cluster_router, rctx);
    reassigner_settings rs;
    rs.data_dir = cfg.data_dir;
    rs.broker_id = cfg.broker_id();
    rs.batch_bytes = cfg.cluster->batch_bytes;
    rs.copy_window = cfg.cluster->move_window;
    rs.throttle_bytes_per_sec = cfg.cluster->move_throttle_bytes_per_sec;
    rs.max_concurrent = cfg.cluster->max_concurrent_moves;
    rs.confirm_timeout = std::chrono::seconds(cfg.cluster->move_confirm_timeout_seconds);
    rs.peer_timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds);
    rs.peers = directory;
    // An election after a restart may wait out the others' longer timeouts
    // (pre-vote is refused while they still hear from the old leader): at
    // least 10 s, three of this broker's election timeouts, or PeerTimeout.
    rs.leader_wait = std::max({rs.peer_timeout, std::chrono::milliseconds(3 * cfg.cluster->raft.election_timeout_ms),
                               std::chrono::milliseconds(10000)});
    rs.raft_status = raft.view;
    rs.shared = !cfg.broker.shared_dir.empty();  // a move copies nothing
    move_destination_settings ds;
    ds.broker_id = cfg.broker_id();
    ds.timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds);
    ds.shared = !cfg.broker.shared_dir.empty();  // a move copies nothing
    destination = spawn_move_destination(sys, ds, view, owners, *cluster_state, broker, groups, registry);
    rs.destination = *destination;  // the leader's confirm of an orphaned move to this broker
    reassigner = spawn_reassigner(sys, rs, view, owners, *cluster_state, groups, registry);
    transport::move_context mctx;
    mctx.system = &sys;
    mctx.broker_id = cfg.broker_id();
    mctx.state = *cluster_state;
    mctx.reassigner = *reassigner;
    mctx.destination = *destination;
    mctx.catalog = view;
    mctx.owners = owners;
    mctx.peers = directory;
    mctx.timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds);
    mctx.peer_timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds);
    transport::add_move_routes(*cluster_router, mctx);
    transport::add_reassignment_routes(*admin_router, mctx);
    balancer_settings loop;
    loop.broker_id = cfg.broker_id();
    loop.config = cfg.autobalance;
    loop.peers = directory;
    loop.peer_timeout = std::chrono::seconds(cfg.cluster->peer_timeout_seconds);
    loop.throttle_bytes_per_sec = cfg.cluster->move_throttle_bytes_per_sec;
    loop.image = owners;  // PATCH /admin/balancer settings from the metadata log
    loop.raft = raft.view;  // the leader's per-peer silence, for the shared-storage failover
    loop.traits = broker_traits;  // its slow verdicts keep new partitions off slow brokers
    // Shared storage: the leader hands a fenced broker's partitions over
    // once it has been silent for the lease and its margin (docs/shared-storage.md).
    loop.shared_storage = !cfg.broker.shared_dir.empty();
    // A deposed leader may echo the broker's answers for max(ElectionTimeoutMs,
    // LeaseMs) after this leader starts counting (docs/shared-storage.md).
    loop.failover_wait_ms = std::max<int64_t>(cfg.cluster->raft.election_timeout_ms, cfg.cluster->raft.lease_ms) +
                            cfg.cluster->raft.lease_ms + cfg.cluster->raft.lease_margin_ms;
    loop.takeover_hold = takeover_hold;
    loop.local_loads = [&sys, view, owners, id = cfg.broker_id(), timeout = kctx.loads_timeout,
                        traits = kctx.traits](std::function<void(nlohmann::json)> done) {
      transport::collect_local_loads(sys, view->get(), owners->get(), id, timeout, std::move(done), traits);
    };
    balancer = spawn_balancer(sys, loop, actx.goals, *cluster_state, *reassigner, registry);
    cactx.balancer = *balancer;
    cactx.reassigner = *reassigner;  // a broker is removed only with no move from or to it
    actx.owners = owners;            // GET /metrics: owned partitions, brokers
    actx.reassigner = *reassigner;   // GET /metrics: moves by state
    transport::add_cluster_balancer_route(*cluster_router, cactx);  // a peer's GET /admin/balancer?broker=
    auto opts = listener_options(cfg, "cluster", *cfg.cluster);
    opts.tls = cluster_tls;
    cluster_server = std::make_unique<transport::http_server>(io, opts, cluster_router);
  }
  // Session placement: the load_meter and GET /session/recommend.
  load_meter_settings lms;
  lms.broker_id = cfg.broker_id();
  lms.config = cfg.placement;
  lms.excluded_brokers = cfg.autobalance.excluded_brokers;
  lms.peers = directory;
  if (cfg.cluster)
    lms.peer_timeout = cactx.probe_timeout;
  lms.client_host = cfg.client.host;
  lms.client_port = client_port;
  lms.probe = sessions;
  lms.published = session_load;
  lms.traits = broker_traits;
  auto meter = spawn_load_meter(sys, std::move(lms), registry);
  transport::session_context sctx;
  sctx.system = &sys;
  sctx.meter = meter;
  sctx.catalog = view;
  sctx.owners = cctx.owners;
  sctx.broker_id = cfg.broker_id();
  transport::add_session_routes(*client_router, sctx);
  // Cluster-wide groups (api/group_routes.hpp): join answers
  // name the coordinator's URL and the meter's recommended URL; joins and
  // commits forwarded by peers arrive on the cluster listener.
  cctx.client_host = cfg.client.host;
  cctx.client_port = client_port;
  cctx.meter = meter;
  transport::add_client_routes(*client_router, cctx);
  if (cfg.cluster)
    transport::add_cluster_group_routes(*cluster_router, cctx);
  // Peer clients must finish their callbacks before the Asio threads stop.
  auto close_peers = [&directory, &raft_clients] {
    directory->close();
    if (raft_clients)
      raft_clients->close();
  };

  transport::add_admin_routes(*admin_router, actx);
  transport::add_console_routes(*admin_router, client_router);  // the web console (docs/console.md)
  transport::http_server admin{io, listener_options(cfg, "admin", cfg.admin), admin_router};
  transport::http_server client{io, listener_options(cfg, "client", cfg.client), client_router};
  // Read by /admin/cluster, which is only served while `client` exists.
  cactx.client_address = [&client, host = cfg.client.host] { return host + ":" + std::to_string(client.port()); };
  transport::add_cluster_admin_routes(*admin_router, cactx);
  // The node is spawned once the listeners are bound, so that its summary
  // shows the real ports; it links every long-lived actor.
  std::vector<caf::actor> children{caf::actor_cast<caf::actor>(broker), caf::actor_cast<caf::actor>(groups)};
  if (cluster_state)
    children.push_back(caf::actor_cast<caf::actor>(*cluster_state));
  if (reassigner)
    children.push_back(caf::actor_cast<caf::actor>(*reassigner));
  if (destination)
    children.push_back(caf::actor_cast<caf::actor>(*destination));
  if (balancer)
    children.push_back(caf::actor_cast<caf::actor>(*balancer));
  for (const auto& p : peer_actors)
    children.push_back(caf::actor_cast<caf::actor>(p));
  if (rctx.node)
    children.push_back(caf::actor_cast<caf::actor>(*rctx.node));
  children.push_back(caf::actor_cast<caf::actor>(meter));
  auto stop_actors = [&] {
    for (auto& c : children)
      caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
    {
      std::lock_guard<std::mutex> g{learned_peers->mtx};
      for (auto& [id, p] : learned_peers->actors)
        caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
      learned_peers->actors.clear();
      learned_peers->stopped = true;
    }
    caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
  };
  using listener = std::tuple<transport::http_server*, const char*, const config::listener_config*>;
  std::vector<listener> listeners{listener{&admin, "admin", &cfg.admin}, listener{&client, "client", &cfg.client}};
  if (cluster_server)
    listeners.push_back(listener{cluster_server.get(), "cluster", &*cfg.cluster});
  for (auto [server, name, l] : listeners) {
    if (auto failed = start_listener(*server, name, *l); !failed.empty()) {
      for (auto& other : listeners)
        std::get<0>(other)->stop(std::chrono::milliseconds{0});
      close_peers();
      io.stop();
      stop_actors();
      return fail("node.listen_failed", failed);
    }
  }
  // The Kafka wire-protocol listener (docs/kafka.md), bound last.
  std::unique_ptr<transport::kafka_listener> kafka;
  std::string kafka_address = "off";
  if (cfg.kafka.enabled) {
    auto kx = std::make_shared<transport::kafka_context>();
    kx->system = &sys;
    kx->broker = broker;
    kx->groups = groups;
    kx->catalog = view;
    kx->owners = cctx.owners;
    kx->default_partitions = cctx.default_partitions;
    kx->metadata = cctx.metadata;
    kx->raft = cactx.raft;
    kx->broker_id = cfg.broker_id();
    kx->advertised_host = cfg.kafka.advertised_host;
    kx->peers = directory;
    // Transactions keep their coordinator state in the metadata log (docs/transactions.md).
    if (rctx.node) {
      auto txns = transport::spawn_kafka_txn_coordinator(
        kx, *rctx.node, registry, std::chrono::milliseconds{cfg.kafka.transactional_id_expiration_ms});
      cactx.txns->set(txns);  // the admin route's abort
      children.push_back(caf::actor_cast<caf::actor>(txns));
    }
    kafka = std::make_unique<transport::kafka_listener>(io, transport::kafka_listener_options{cfg.kafka.host, cfg.kafka.port}, kx);
    if (auto ec = kafka->start()) {
      for (auto& other : listeners)
        std::get<0>(other)->stop(std::chrono::milliseconds{0});
      close_peers();
      io.stop();
      stop_actors();
      return fail("node.listen_failed", "cannot listen on " + cfg.kafka.host + ":" + std::to_string(cfg.kafka.port)
                                          + " (kafka): " + ec.message());
    }
    kafka_address = cfg.kafka.host + ":" + std::to_string(kafka->port());
    children.push_back(transport::spawn_kafka_listener_probe(sys, kafka_address, *kafka, registry));
  }
  client_port->store(client.port());  // the recommended URL of this broker (Port=0: the bound port)
  node_settings settings{cfg.broker_id(), cfg.data_dir, loaded.files, {}};
  settings.listeners["admin"] = cfg.admin.host + ":" + std::to_string(admin.port());
  settings.listeners["client"] = cfg.client.host + ":" + std::to_string(client.port());
  if (cluster_server)
    settings.listeners["cluster"] = cfg.cluster->host + ":" + std::to_string(cluster_server->port());
  if (kafka)
    settings.listeners["kafka"] = kafka_address;
  node_actor node = spawn_node(sys, settings, registry, children);
  // A broker that is not a voter joins now that its listeners are bound
  // (docs/metadata.md "Joining"); a voter's raft node ignores this.
  if (rctx.node && cluster_server)
    caf::anon_send(*rctx.node, register_atom::value, settings.listeners["cluster"], settings.listeners["client"],
                   kafka ? cfg.kafka.advertised_host + ":" + std::to_string(kafka->port()) : std::string{});
  logger->info("node.ready broker={} version={} admin={}:{} client={}:{} cluster={} kafka={}", cfg.broker_id(), version_string,
               cfg.admin.host, admin.port(), cfg.client.host, client.port(),
               cluster_server ? cfg.cluster->host + ":" + std::to_string(cluster_server->port()) : "off",
               kafka_address);

  int sig = 0;
  auto signals = stop_signals();
  sigwait(&signals, &sig);
  auto t0 = std::chrono::steady_clock::now();
  logger->info("node.signal signal={}", sig == SIGINT ? "SIGINT" : "SIGTERM");
  // Stop accepting on every listener first, then let in-flight requests finish.
  client.stop(std::chrono::milliseconds{3000});
  if (cluster_server)
    cluster_server->stop(std::chrono::milliseconds{1000});
  admin.stop(std::chrono::milliseconds{1000});
  if (kafka)
    kafka->stop();
  close_peers();
  io.stop();
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  sys.await_all_actors_done();
  if (kafka)
    kafka->release_actors();  // before ~actor_system (see kafka_listener.hpp)
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  logger->info("node.stopped broker={} shutdown_ms={}", cfg.broker_id(), ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tune_malloc();
  auto signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  CLI::App app{"moonmq-node: one moonmq broker (client API, admin endpoint, cluster member)"};
  std::string config_file;
  std::vector<std::string> overrides;
  bool show_version = false;
  app.add_option("-c,--config", config_file, "appsettings JSON file (// comments allowed)");
  app.add_option("-s,--set", overrides, "override one key: Dotted.Key=value (e.g. Server.Admin.Port=9700)")
    ->type_name("KEY=VALUE");
  app.add_flag("-V,--version", show_version, "print the version and exit");
  app.footer("Environment: MOONMQ_ENVIRONMENT=<name> also reads <config stem>.<name>.json next to the "
             "config file.\nExit codes: 0 clean shutdown, 1 runtime failure, 2 invalid configuration.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (show_version) {
    std::cout << "moonmq-node " << moonmq::version_string << "\n";
    return 0;
  }
  const char* env = std::getenv("MOONMQ_ENVIRONMENT");
  auto loaded = moonmq::config::load(config_file, env ? env : "", overrides);
  for (const auto& w : loaded.warnings)
    std::cerr << "moonmq-node: warning: " << w << "\n";
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors)
      std::cerr << "moonmq-node: invalid configuration: " << e << "\n";
    return 2;
  }
  moonmq::log::set_level(loaded.config.log_level);
  try {
    return run(loaded);
  } catch (const std::exception& e) {
    std::cerr << "moonmq-node: fatal: " << e.what() << "\n";
    return 1;
  }
}

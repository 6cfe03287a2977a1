#pragma once
// The configuration of one moonmq-node (CONTRACT.md §2). Plain data: loaded
// and validated by config/loader.hpp, read by every component at start-up.
// Times carry their unit in the name (…_ms, …_seconds); sizes are bytes.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moonmq::config {

struct listener_config {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
};

struct admin_config : listener_config {
  /// Bearer token for the admin API; empty = no authentication.
  std::string token;
};

struct kafka_config : listener_config {
  bool enabled = true;
  std::string advertised_host = "127.0.0.1";
  /// Kafka's group.initial.rebalance.delay.ms: the first join round of an
  /// Empty group waits this long for more members (docs/kafka.md).
  int64_t group_initial_rebalance_delay_ms = 3000;
  /// Kafka's transactional.id.expiration.ms (docs/transactions.md).
  int64_t transactional_id_expiration_ms = 604800000;
};

struct peer_config {
  std::string id;
  std::string address;         ///< host:port of the peer's cluster listener
  std::string client_address;  ///< host:port of the peer's client API
  std::string token;           ///< token sent to this peer; empty = Cluster.Token
  std::string kafka_address;   ///< host:port of the peer's Kafka listener (Metadata); empty = unknown
};

struct tls_config {
  std::string cert_file, key_file, ca_file;
  std::string verify = "none";  ///< none | peer | required
};

/// Cluster.TopicPlacement's values: "proposer" or "spread".
inline bool valid_topic_placement(const std::string& v) { return v == "proposer" || v == "spread"; }

/// With Storage.SharedDir set, the defaults of the Raft timings a config
/// leaves out (config/loader.cpp apply_shared_storage_defaults): a failover
/// of about 2.5 s, SessionTimeoutMs = ElectionTimeoutMs + LeaseMs +
/// LeaseMarginMs + 400 with the default election timeout, and LeaseMs five
/// heartbeats (more than the two check_shared_storage_lease requires, so
/// a lease survives a late heartbeat or two on a loaded broker).
constexpr int shared_heartbeat_ms = 200;
constexpr int shared_lease_ms = 1000;
constexpr int shared_lease_margin_ms = 100;
constexpr int shared_session_timeout_ms = 2500;

struct raft_config {
  bool enabled = true;
  int election_timeout_ms = 1000;
  int heartbeat_ms = 500;
  int max_log_entries = 512;
  /// A broker the Raft leader has not heard from for this long is fenced
  /// (KRaft's broker.session.timeout.ms, 9 s by default there too).
  int session_timeout_ms = 9000;
  /// The broker lease (docs/shared-storage.md "The lease"): a broker that has
  /// not heard from the Raft leader for this long stops acknowledging
  /// produce in shared-storage mode. Monotonic clock, milliseconds.
  int lease_ms = 3000;
  /// What the controller waits beyond LeaseMs before it hands a fenced
  /// broker's partitions on: covers clock-rate drift over one lease.
  int lease_margin_ms = 500;
  /// Cluster.Raft.Voters (Kafka's controller.quorum.voters): the broker ids
  /// that vote. Empty = this broker and every configured peer. A broker not
  /// listed joins at runtime as a learner (docs/metadata.md "Joining"); every
  /// voter other than this broker must be a configured peer (its address).
  std::vector<std::string> voters;
};

struct cluster_config : listener_config {
  std::string broker_id;
  std::string token;
  int peer_timeout_seconds = 5;  ///< CONTRACT key Cluster.PeerTimeout, seconds
  int64_t batch_bytes = 262144;  ///< copy batch size of a partition move
  /// Cluster.MoveWindow: appends of one move's copy in flight at once (1-16).
  int move_window = 4;
  /// Cluster.MoveThrottleBytesPerSec: copy rate limit of one move, bytes/s; 0 = none.
  int64_t move_throttle_bytes_per_sec = 0;
  /// Cluster.MaxConcurrentMoves: moves this broker runs as a source at once; more wait queued.
  int max_concurrent_moves = 2;
  /// Cluster.MoveConfirmTimeoutSeconds: with Raft, how long a move waits in
  /// `offsets` for its destination to confirm before the source takes the
  /// partition back (docs/metadata.md "Owner epochs"); 0 = for ever.
  int move_confirm_timeout_seconds = 120;
  /// Cluster.NumPartitions: the partition count of a topic created without
  /// one (Kafka's num.partitions: auto-creation, CreateTopics with -1, POST
  /// /v1/topics without "partitions"); the metadata log's NumPartitions,
  /// set with PATCH /admin/balancer, overrides it cluster-wide.
  int num_partitions = 1;
  /// Cluster.Rack: this broker's rack (failure domain, availability zone);
  /// "" = none. The balancer keeps a draining broker's partitions in its
  /// rack and fills a new broker from its rack first (docs/balancer.md
  /// "Racks and weights").
  std::string rack;
  /// Cluster.TopicPlacement: where the partitions of a topic created (or
  /// grown) through this broker start: "spread" (the default: over racks by
  /// rack weight and brokers by weight, docs/metadata.md "Placing a new
  /// topic's partitions", as Kafka spreads a new topic's replicas) or
  /// "proposer" (all on this broker, the balancer spreads them later). The
  /// metadata log's TopicPlacement, set with PATCH /admin/balancer,
  /// overrides it cluster-wide.
  std::string topic_placement = "spread";
  /// Cluster.Weight (0.01-100): this broker's relative size; the
  /// distribution goals give it a share of each resource proportional to it.
  double weight = 1.0;
  std::vector<peer_config> peers;
  tls_config tls;
  raft_config raft;
};

/// Per-goal settings (CONTRACT §6); a goal missing from the map runs with
/// its plugin's defaults. Only the keys present are set.
struct goal_config {
  std::optional<bool> enabled;
  std::optional<double> avg_deviation;
  std::optional<double> detect_threshold;
  std::optional<int> priority;
  std::optional<double> capacity_threshold;
};

struct autobalance_config {
  bool enabled = false;
  int interval_seconds = 60;
  bool dry_run = true;
  int max_actions_per_detect = 50;
  int window = 60;
  int min_valid = 1;
  double percentile = 0.9;
  std::string goals_dir;  ///< empty = "<dir of moonmq-node>/plugins"
  std::map<std::string, goal_config> goals;
  std::vector<std::string> excluded_topics;
  std::vector<std::string> excluded_brokers;
  /// How long the balancer leaves a partition an operator moved where it
  /// is (seconds; at least three intervals either way).
  int64_t manual_move_cooldown_seconds = 3600;
  /// How long the balancer keeps a partition off the broker a move took it
  /// from and off the destination of its failed or cancelled move (seconds;
  /// never less than that move's cooldown).
  int64_t avoid_broker_seconds = 1800;
  /// Slow brokers (docs/balancer.md "Slow brokers", goals/slow_brokers.hpp):
  /// a broker whose sync p90 is at least this many times the
  /// median of its peers'...
  double slow_broker_ratio = 5.0;
  /// ...and at least this many milliseconds...
  double slow_broker_min_latency_ms = 100.0;
  /// ...for this many passes in a row is marked slow; as many passes below
  /// half that bar clear it.
  int slow_broker_passes = 3;
};

/// Settings of the HTTP server shared by every listener.
struct http_config {
  int64_t max_body_bytes = 16 * 1024 * 1024;
  int header_timeout_ms = 10000;
  int max_connections = 1024;
  int threads = 2;  ///< Asio threads shared by all listeners
};

/// CAF scheduler settings. "sharing" idles at 0% CPU; the default
/// work-stealing policy burns ~30% of a core when idle on 2 cores
/// (TOOLCHAIN.md, runtime trap 6).
struct scheduler_config {
  std::string policy = "sharing";  ///< sharing | stealing
  int max_threads = 0;             ///< 0 = number of cores (at least 2)
};

/// Broker-side timings (extension of CONTRACT §2).
struct broker_config {
  int64_t retention_check_ms = 30000;  ///< how often each partition applies retention
  int64_t session_timeout_ms = 10000;  ///< HTTP consumer-group member session timeout
  int io_threads = 4;                  ///< Storage.IoThreads: I/O workers holding the partition logs
  int64_t max_open_files = 0;          ///< Storage.MaxOpenFiles: segment fds held open (0 = half RLIMIT_NOFILE)
  bool write_ahead_log = true;         ///< Storage.WriteAheadLog: group commit rounds sync one WAL file per I/O worker
  int64_t wal_checkpoint_bytes = 64LL << 20;  ///< Storage.WalCheckpointBytes: WAL size that triggers a segment sync
  /// Storage.WalMaxBatchBytes: an acks=leader batch this large or larger
  /// skips the WAL; its round syncs the partition's segment instead.
  int64_t wal_max_batch_bytes = 64LL << 10;
  /// Storage.SharedDir: partition data on a directory every broker mounts
  /// at this path (docs/shared-storage.md); empty = local storage in DataDir.
  std::string shared_dir;
};

/// Session placement (Server.Placement; docs/placement.md, docs/configuration.md):
/// the load_meter's heartbeat and GET /session/recommend's scoring. The
/// defaults follow the EventMesh seed (5 s heartbeat, overload at cpu > 0.8
/// or inflow > 5 MiB/s).
struct placement_config {
  int64_t heartbeat_ms = 5000;           ///< HeartbeatMs: load sample + peer report pull period
  int stale_after_heartbeats = 3;        ///< StaleAfterHeartbeats: no new report for this many = stale
  int64_t client_session_ttl_ms = 30000; ///< ClientSessionTtlMs: a producer/consumer stays a session this long
  double session_weight = 1.0;           ///< SessionWeight (w1)
  double byte_rate_weight = 1.0;         ///< ByteRateWeight (w2)
  double cpu_weight = 1.0;               ///< CpuWeight (w3)
  double partition_weight = 0.5;         ///< PartitionWeight (w4, topic ownership)
  double overload_cpu = 0.8;             ///< OverloadCpu, in (0, 1]
  double overload_inflow_bytes_per_sec = 5.0 * 1024 * 1024;  ///< OverloadInflowBytesPerSec, > 0
  std::string cpu = "higher";            ///< Cpu: process | machine | higher
  bool spread_clients = true;            ///< SpreadClients
  bool draining = false;                 ///< Draining: this broker reports itself draining (never recommended)
};

struct node_config {
  listener_config client{"127.0.0.1", 8080};
  std::string data_dir = "./data";
  admin_config admin{{"127.0.0.1", 9644}, ""};
  kafka_config kafka{{"127.0.0.1", 9092}, true, "127.0.0.1"};
  std::optional<cluster_config> cluster;  ///< absent = single broker
  autobalance_config autobalance;
  http_config http;
  scheduler_config scheduler;
  broker_config broker;
  placement_config placement;
  std::string log_level = "info";

  /// This broker's id: Cluster.BrokerId, or "local" without a cluster.
  std::string broker_id() const { return cluster ? cluster->broker_id : "local"; }
};

}  // namespace moonmq::config

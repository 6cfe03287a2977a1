#pragma once
// The Kafka listener's request handlers (issue 9, docs/kafka.md): one
// decoded request in, its response body out, through the same broker,
// partition and group actors as the HTTP client API. Cluster behaviour
// mirrors api/client_routes.cpp: a partition the owner_view gives to
// another broker is answered NOT_LEADER_OR_FOLLOWER (6) for Produce, Fetch
// and ListOffsets, and Metadata names that broker as its leader, so Kafka
// clients follow a move by refreshing metadata.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/broker.hpp"
#include "actors/catalog_view.hpp"
#include "actors/cluster_state.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/txn_coordinator.hpp"
#include "kafka/codec.hpp"
#include "peers/peer_directory.hpp"
#include "util/fan_in.hpp"

namespace moonmq::transport {

class kafka_producer_ids;

struct kafka_context {
  caf::actor_system* system = nullptr;
  broker_actor broker;
  group_actor groups;
  std::shared_ptr<catalog_view> catalog;
  /// Null = single broker: every partition is local.
  std::shared_ptr<owner_view> owners;
  std::string broker_id;
  /// The other brokers (configured and registered): each one's Kafka
  /// listener (Metadata, FindCoordinator; "" = left out of Metadata) and its
  /// cluster listener (a commit's part for partitions it owns, its committed
  /// offsets: /cluster/groups/{g}/offsets, docs/cluster-api.md).
  std::shared_ptr<peer_directory> peers = std::make_shared<peer_directory>();
  /// This listener as clients reach it (Server.Kafka.AdvertisedHost and the
  /// bound port, set once bound).
  std::string advertised_host = "127.0.0.1";
  std::atomic<uint16_t> port{0};
  /// Bound on each request to an actor (a produce waits for an fsync).
  std::chrono::milliseconds timeout{10000};
  /// Partitions of a topic created by Metadata auto-creation or by a
  /// CreateTopics entry with num_partitions = -1 (Kafka num.partitions).
  int32_t default_partitions = 1;
  /// Runs `fn` after `delay` on the listener's I/O threads (long polls).
  /// Set by the listener.
  std::function<void(std::chrono::milliseconds, std::function<void()>)> schedule;
  std::shared_ptr<kafka_producer_ids> producers;
  /// With the metadata log: topics are created through the cluster state
  /// actor (cluster-wide); unset = by this broker alone.
  std::optional<cluster_state_actor> metadata;
  /// With the metadata log: the Raft status (Metadata names its leader as
  /// the controller).
  std::shared_ptr<raft_view> raft;
  /// With the metadata log: the transaction coordinator (api/kafka_txn.hpp);
  /// unset = transactional requests answer COORDINATOR_NOT_AVAILABLE.
  std::optional<txn_actor> txns;
};

/// Calls `finish` once `n` parts reported (from any thread); the
/// handlers' fan-in of per-partition actor and peer requests, which keep
/// their answers themselves: a util::fan_in that gathers only the count.
class kafka_gather {
public:
  static std::shared_ptr<kafka_gather> make(size_t n, std::function<void()> finish) {
    auto g = std::make_shared<kafka_gather>();
    g->in_ = util::fan_in<bool>::make(n, false, [finish = std::move(finish)](bool&) { finish(); });
    return g;
  }
  void one() {
    in_->add([](bool&) {});
  }

private:
  std::shared_ptr<util::fan_in<bool>> in_;
};

/// The Kafka node id of `broker` (owner_view::kafka_node_id: a voter's
/// 1-based position among the voters in id order, a joined broker's id from
/// its registration, 1001 up; -1 for none); a standalone broker is 1.
int32_t kafka_node_id(const kafka_context& ctx, const std::string& broker);

/// The cluster id Metadata (v2+) and DescribeCluster report.
inline constexpr const char* kafka_cluster_id = "moonmq";

/// The controller's Kafka node id for Metadata and DescribeCluster: the
/// Raft leader's with the metadata log (-1 while none is known), else this
/// broker's own.
int32_t kafka_controller_id(const kafka_context& ctx);

/// The brokers offered to Kafka clients (Metadata, DescribeCluster): this
/// one at AdvertisedHost:<bound port>, then every peer with a KafkaAddress
/// that has a node id and that the metadata log has not removed; rack null.
/// Adds the moonmq ids of those listed to `listed`.
std::vector<kafka::metadata_broker> kafka_brokers(const kafka_context& ctx, std::set<std::string>& listed);

/// Kafka's num.partitions: the metadata log's NumPartitions (PATCH
/// /admin/balancer, Kafka AlterConfigs of the cluster default) when set,
/// else ctx.default_partitions (Cluster.NumPartitions).
int32_t kafka_num_partitions(const kafka_context& ctx);

/// The coordinator of `group`: this broker without a cluster, else
/// cluster::group_coordinator over this broker and its peers (the broker
/// that coordinates the group over HTTP too).
std::string kafka_coordinator_of(const kafka_context& ctx, const std::string& group);

/// The owner of (topic, partition) when the ownership table gives it to
/// another broker; nullopt when it is served here.
std::optional<std::string> kafka_remote_owner(const kafka_context& ctx, const std::string& topic,
                                              int32_t partition);

/// One HTTP request to peer `broker`'s cluster listener with the cluster
/// token, bounded by `timeout` (0 = ctx.timeout); `done(status, body)` on an
/// I/O thread, with status 0 when the peer is unknown or could not be reached.
void kafka_peer_call(const kafka_context& ctx, const std::string& broker, const std::string& method,
                     const std::string& target, std::string body, std::function<void(int, std::string)> done,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds{0});

/// Handles one decoded request and calls `done` exactly once (from any
/// thread) with the response body, or nullopt when none is sent (Produce
/// with acks = 0). `errors` counts the error codes in the answer (metrics).
using kafka_done = std::function<void(std::optional<kafka::response_body>, int errors)>;
void handle_kafka_request(const std::shared_ptr<kafka_context>& ctx, kafka::request& req, kafka_done done);

/// Producer ids for InitProducerId (KIP-98). The sequence state that makes
/// a producer idempotent lives with each partition's log
/// (storage/producer_state.hpp), so it survives restarts and moves.
class kafka_producer_ids {
public:
  /// Ids step by 1024 from `node_id` mod 1024 (distinct across brokers),
  /// starting at a random multiple of 1024 below 2^62 (std::random_device):
  /// producer state outlives restarts in the partition logs, so a restarted
  /// broker must not hand out the ids of its last run again, and a clock
  /// that steps back cannot make it.
  explicit kafka_producer_ids(int32_t node_id);
  /// A new producer id, unique across this cluster's brokers and restarts.
  int64_t allocate();

private:
  std::atomic<int64_t> next_;
};

/// The Kafka error code (kafka/errors.hpp) a partition's answer carries for
/// an actor error: request timeout → REQUEST_TIMED_OUT; a partition actor or
/// I/O worker that stopped before answering (sec::request_receiver_down:
/// the partition was deleted, moved away or the broker is stopping; nothing
/// was acknowledged) and partition_moved → NOT_LEADER_OR_FOLLOWER, which
/// clients retry after refreshing metadata (Kafka's answer once a partition
/// left the broker); unknown topic or partition → UNKNOWN_TOPIC_OR_PARTITION;
/// offline or storage errors → KAFKA_STORAGE_ERROR; not_ready →
/// LEADER_NOT_AVAILABLE; out_of_order_sequence and invalid_producer_epoch
/// (coded, or errc::invalid_producer_epoch: a stale epoch) →
/// theirs; offset_out_of_range → OFFSET_OUT_OF_RANGE; invalid_request →
/// INVALID_RECORD; anything else UNKNOWN_SERVER_ERROR.
int16_t kafka_code_of(const caf::error& e);

/// The local partition actor of topic/partition in `out`, or the error to
/// answer: UNKNOWN_TOPIC_OR_PARTITION (3), LEADER_NOT_AVAILABLE (the
/// metadata log names no owner), NOT_LEADER_OR_FOLLOWER (6, owned by
/// another broker).
int16_t kafka_locate(const kafka_context& ctx, const topic_map& topics, const std::string& topic, int32_t partition,
                     partition_actor& out);

}  // namespace moonmq::transport

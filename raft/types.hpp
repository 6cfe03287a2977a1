#pragma once
// Core value types of the raft module: strong ids (term, log_index, node_id),
// log entries (controller / owner), the hard state and the snapshot.
// JSON (nlohmann) shapes are given on each type; decoding is strict and
// returns errc::malformed naming the offending field.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cluster/txn_record.hpp"
#include "raft/result.hpp"

namespace moonmq::raft {

/// Strong unsigned counter (terms and log indexes). Zero means "none":
/// term 0 precedes every election, index 0 precedes the first entry.
template <class Tag>
struct counter {
  uint64_t value = 0;

  constexpr counter() = default;
  constexpr explicit counter(uint64_t v) : value(v) {}

  constexpr counter next() const { return counter{value + 1}; }
  constexpr counter prev() const { return counter{value == 0 ? 0 : value - 1}; }

  friend constexpr bool operator==(counter a, counter b) { return a.value == b.value; }
  friend constexpr bool operator!=(counter a, counter b) { return a.value != b.value; }
  friend constexpr bool operator<(counter a, counter b) { return a.value < b.value; }
  friend constexpr bool operator<=(counter a, counter b) { return a.value <= b.value; }
  friend constexpr bool operator>(counter a, counter b) { return a.value > b.value; }
  friend constexpr bool operator>=(counter a, counter b) { return a.value >= b.value; }
  friend constexpr counter operator+(counter a, uint64_t n) { return counter{a.value + n}; }
};

struct term_tag {};
struct log_index_tag {};

/// Raft term (Raft paper §5.1). Also the controller epoch when Raft is on.
using term = counter<term_tag>;
/// Position of an entry in the replicated log; the first entry has index 1.
using log_index = counter<log_index_tag>;

/// A broker id ("b1"). Empty means "nobody" (no vote, no known leader).
struct node_id {
  std::string value;

  node_id() = default;
  explicit node_id(std::string v) : value(std::move(v)) {}
  bool empty() const { return value.empty(); }
  const std::string& str() const { return value; }

  friend bool operator==(const node_id& a, const node_id& b) { return a.value == b.value; }
  friend bool operator!=(const node_id& a, const node_id& b) { return a.value != b.value; }
  friend bool operator<(const node_id& a, const node_id& b) { return a.value < b.value; }
};

/// True when `id` is a valid broker id: 1..64 characters of [A-Za-z0-9._-].
bool valid_node_id(const std::string& id);
/// True when `name` is a valid topic name (DESIGN §2): [A-Za-z0-9._-]{1,249}, no "..".
bool valid_topic(const std::string& name);

/// Payload of a `controller` entry: written by a new leader as its
/// current-term no-op (Raft paper §8; thesis §6.4) and naming it controller.
/// JSON: {"type":"controller","leader":"b1"}
struct controller_entry {
  node_id leader;
  friend bool operator==(const controller_entry& a, const controller_entry& b) { return a.leader == b.leader; }
};

/// Payload of an `owner` entry: one ownership change, which bumps the
/// partition's owner epoch (docs/metadata.md "Owner epochs").
/// JSON: {"type":"owner","topic":"orders","partition":3,"owner":"b2"}, and
/// "expect_epoch":7 for a conditional change: applied only while the
/// partition's owner epoch is still 7, else a no-op the proposer is told of
/// (compare-and-set in log order, as KIP-497's AlterPartition checks the
/// partition epoch).
struct owner_entry {
  std::string topic;
  int32_t partition = 0;  ///< >= 0
  node_id owner;
  uint64_t expect_epoch = 0;  ///< 0 = unconditional
  /// Applies only while the partition's current owner is fenced at this
  /// index (the shared-storage failover: a broker unfenced before the entry
  /// keeps its partitions). JSON "expect_owner_fenced", absent = false.
  bool expect_owner_fenced = false;
  friend bool operator==(const owner_entry& a, const owner_entry& b) {
    return a.topic == b.topic && a.partition == b.partition && a.owner == b.owner &&
           a.expect_epoch == b.expect_epoch && a.expect_owner_fenced == b.expect_owner_fenced;
  }
};

/// Payload of a `topic` entry. A create (`grow` false) makes the topic
/// exist cluster-wide with `partitions` partitions and `config`, unless it
/// exists already (then it changes nothing: of two racing creates the first
/// in log order wins). A growth (`grow` true) raises an existing topic's
/// count to `partitions` (nothing for an unknown topic or a count at or below
/// the current one). Every partition the entry adds is owned by `owner` (the
/// broker that proposed it), recorded in the same entry, so no partition of
/// a committed topic is ever without an owner. `config` is the topic
/// configuration as JSON object text ("" = defaults), validated by the
/// proposer and kept verbatim.
/// A deletion (`remove` true, docs/metadata.md "Deleting a topic") drops the
/// topic, its owner rows and owner epochs, and records its name among the
/// deleted topics; it is refused (a no-op its proposer is told of) when the
/// topic does not exist or a move of one of its partitions is unfinished.
/// `partitions` is then the count the proposer saw, `owner` the proposer.
/// A config change (`alter` true, docs/metadata.md "Topic configuration")
/// replaces the topic's `config` with this entry's, or with `merge` true
/// merges this entry's `config` (a patch: key -> value, null removes the
/// key) into it key by key, at apply time, so that two changes of
/// different keys never undo each other. Validated by the proposer (each
/// key on its own, so any merge of valid patches is valid); refused for a
/// topic that does not exist. `partitions` is the count the proposer saw,
/// `owner` the proposer.
/// A create or growth may place its partitions over several brokers
/// (docs/metadata.md "Placing a new topic's partitions"): `owners[i]` owns
/// partition `first + i`. It is applied only when every broker registered
/// at apply time (and not removed) is among `checked`, the brokers the
/// proposer knew to run a version that reads `owners`; otherwise, and for a
/// named owner removed by then, `owner` owns the partition, which is what a
/// broker of an earlier version (ignoring both fields) applies, so every
/// broker's image agrees.
/// JSON: {"type":"topic","topic":"orders","partitions":6,"owner":"b1","config":"","grow":false}
/// (a deletion adds "delete":true, a config change "alter":true and, for a
/// patch, "merge":true; absent = false; a placed create or growth adds
/// "owners":["b1","b2",…],"first":0,"checked":["b1","b2","b3"]).
struct topic_entry {
  std::string topic;
  int32_t partitions = 1;  ///< >= 1
  node_id owner;
  std::string config;
  bool grow = false;
  bool remove = false;
  bool alter = false;
  bool merge = false;  ///< with alter: `config` is a patch
  std::vector<node_id> owners{};   ///< create / grow: owner of partition first + i (empty = all `owner`)
  int32_t first = 0;             ///< the partition `owners[0]` names
  std::vector<node_id> checked{};  ///< the brokers known to read `owners` when it was proposed
  friend bool operator==(const topic_entry& a, const topic_entry& b) {
    return a.topic == b.topic && a.partitions == b.partitions && a.owner == b.owner && a.config == b.config &&
           a.grow == b.grow && a.remove == b.remove && a.alter == b.alter && a.merge == b.merge &&
           a.owners == b.owners && a.first == b.first && a.checked == b.checked;
  }
};

/// Payload of a `config` entry: a change of the cluster's dynamic balancer
/// settings (docs/metadata.md "Dynamic settings"). `balancer` is a JSON
/// object text whose keys replace the same keys of the current settings (a
/// null value removes the key, so the node's configured value applies
/// again); keys and values are validated by the proposer and kept verbatim.
/// JSON: {"type":"config","balancer":"{\"DryRun\":false}"}
struct config_entry {
  std::string balancer;
  friend bool operator==(const config_entry& a, const config_entry& b) { return a.balancer == b.balancer; }
};

/// What a `broker` entry changes (docs/metadata.md "Brokers"):
///  - fence / unfence: the controller's liveness verdict (a broker silent for
///    Cluster.Raft.SessionTimeoutMs, then answering again);
///  - drain / undrain: an operator starts or cancels emptying the broker (the
///    balancer moves its partitions off; nothing new is placed on it);
///  - remove: an operator retires the broker. Applied only while the broker
///    is draining and owns no partition; otherwise the entry changes nothing.
///  - register: a broker that is not a voter joins at runtime (KIP-631's
///    BrokerRegistration): the entry records its endpoints, every broker
///    learns them when it applies it, and the leader replicates the log to it
///    as a learner from then on. A removed broker that registers again is
///    admitted again.
enum class broker_change : uint8_t { fence, unfence, drain, undrain, remove, register_broker };
const char* to_string(broker_change c);
/// The change named `s` ("fence", "unfence", "drain", "undrain", "remove", "register").
std::optional<broker_change> broker_change_from(const std::string& s);

/// The Kafka node id of the first broker that joins at runtime; the voters
/// are 1..V in broker id order (a static list, the same on every broker),
/// so ids from here on never meet theirs (docs/metadata.md "Joining").
constexpr int32_t first_joined_kafka_node_id = 1001;

/// Where a registered broker listens (host:port each; "" = not served).
struct broker_endpoints {
  std::string cluster;  ///< cluster listener (Raft, moves, forwarded requests)
  std::string client;   ///< client HTTP API
  std::string kafka;    ///< Kafka wire protocol
  friend bool operator==(const broker_endpoints& a, const broker_endpoints& b) {
    return a.cluster == b.cluster && a.client == b.client && a.kafka == b.kafka;
  }
  friend bool operator!=(const broker_endpoints& a, const broker_endpoints& b) { return !(a == b); }
};

/// Payload of a `broker` entry.
/// JSON: {"type":"broker","id":"b2","change":"drain"}; fence and unfence also
/// carry "fenced":true|false, the only field of entries written before the
/// other changes existed (read as fence / unfence); register carries
/// "cluster", "client" and "kafka" (host:port, "" = not served; cluster is
/// required).
struct broker_entry {
  node_id id;
  broker_change change = broker_change::fence;
  broker_endpoints endpoints;  ///< register only
  /// Register only: the broker gets a Kafka node id when this entry applies
  /// (JSON "assign_node_id":true). Register entries written before node ids
  /// were given lack it, so replaying them and loading a snapshot of their
  /// time agree: neither gives an id (docs/metadata.md "Joining").
  bool assign_node_id = false;
  friend bool operator==(const broker_entry& a, const broker_entry& b) {
    return a.id == b.id && a.change == b.change && a.endpoints == b.endpoints &&
           a.assign_node_id == b.assign_node_id;
  }
};

/// The states a move has in the metadata log (docs/cluster.md "Moves in the
/// log"): the source's journal states without `draining`, which the log's
/// `cutover` covers.
bool valid_move_state(const std::string& s);
/// True when `id` is a valid move id: 1..128 characters of [A-Za-z0-9._-]
/// (a broker id, "-" and a number).
bool valid_move_id(const std::string& id);
/// True for done, failed and cancelled.
bool finished_move_state(const std::string& s);

/// Payload of a `move` entry: a partition move created, or one step of it,
/// as a compare-and-set on the move's state in log order. `expect` empty
/// creates the move (`state` "queued"); applied only when the partition's
/// owner is `from`, no unfinished move of the partition exists and the id is
/// new. Otherwise applied only when the move's state is one of `expect`, the
/// step is allowed from it, and (with `expect_epoch`) the partition is still
/// at that owner epoch. The owner change a step implies is part of the same
/// entry, so a move's state and its partition's owner never disagree:
///   copying → cutover names `to` owner; cutover|offsets → rolling_back or
///   failed names `from` owner again (the rollback); → done needs `to` owner.
/// Refused entries change nothing and are remembered (ownership_state::refused).
/// JSON: {"type":"move","id":"b1-17","topic":"orders","partition":3,"from":"b1",
///        "to":"b2","state":"cutover","expect":["copying"],"error":"",
///        "end":812,"expect_epoch":4} ("end" -1 and "expect_epoch" 0 are omitted).
struct move_entry {
  std::string id;
  std::string topic;
  int32_t partition = 0;
  node_id from;
  node_id to;
  std::string state;
  std::vector<std::string> expect;
  std::string error;
  int64_t end = -1;           ///< offsets: the source's sealed log end
  /// offsets: the source's log start once sealed (final: DeleteRecords is
  /// refused on a sealed partition); -1 = not recorded (JSON absent).
  int64_t log_start = -1;
  uint64_t expect_epoch = 0;  ///< 0 = no owner epoch condition
  friend bool operator==(const move_entry& a, const move_entry& b) {
    return a.id == b.id && a.topic == b.topic && a.partition == b.partition && a.from == b.from && a.to == b.to &&
           a.state == b.state && a.expect == b.expect && a.error == b.error && a.end == b.end &&
           a.log_start == b.log_start && a.expect_epoch == b.expect_epoch;
  }
};

/// A move as the metadata image holds it (and a snapshot row).
struct move_record {
  std::string topic;
  int32_t partition = 0;
  node_id from;
  node_id to;
  std::string state;
  std::string error;
  int64_t end = -1;        ///< the sealed log end, once an offsets step recorded it
  int64_t log_start = -1;  ///< the sealed source's log start, with `end` (-1 = not recorded)
  uint64_t epoch = 0;      ///< the partition's owner epoch right after the cutover (0 before it)
  log_index updated_at;    ///< index of the entry that last changed it
  friend bool operator==(const move_record& a, const move_record& b) {
    return a.topic == b.topic && a.partition == b.partition && a.from == b.from && a.to == b.to &&
           a.state == b.state && a.error == b.error && a.end == b.end && a.log_start == b.log_start &&
           a.epoch == b.epoch && a.updated_at == b.updated_at;
  }
};

/// Payload of a `txn` entry (docs/transactions.md "Coordinator state"): the
/// whole new state of one transactional id, written by its coordinator as a
/// compare-and-set in log order: applied only when the id's record is still
/// at `expect_version` (the index of the entry that last wrote it; 0 = the
/// id must be unknown), so two brokers that both believe they coordinate an
/// id never both change it. Refused entries change nothing and are
/// remembered (ownership_state::refused). The applied record's version is
/// the entry's index.
/// JSON: {"type":"txn","transactional_id":"app-1","expect_version":41,
///        "producer_id":7,"producer_epoch":2,"state":"ongoing","timeout_ms":60000,
///        "started_ms":1733356800000,"partitions":[{"topic":"orders","partition":3}],
///        "groups":["g"],"offsets":[{"group":"g","topic":"in","partition":0,"offset":42,"metadata":""}]}
struct txn_entry {
  std::string transactional_id;
  cluster::txn_record record;  ///< record.version is ignored (set from the entry's index)
  uint64_t expect_version = 0;
  /// The id expired (transactional.id.expiration.ms): the record is removed
  /// instead of written (same compare-and-set); JSON "remove":true.
  bool remove = false;
  friend bool operator==(const txn_entry& a, const txn_entry& b) {
    auto ra = a.record, rb = b.record;
    ra.version = rb.version = 0;
    return a.transactional_id == b.transactional_id && ra == rb && a.expect_version == b.expect_version &&
           a.remove == b.remove;
  }
};

using entry_payload =
  std::variant<controller_entry, owner_entry, topic_entry, config_entry, broker_entry, move_entry, txn_entry>;

/// One log entry. JSON: {"term":3,"index":7,<payload fields>}.
struct log_entry {
  term entry_term;
  log_index index;
  entry_payload payload;
  friend bool operator==(const log_entry& a, const log_entry& b) {
    return a.entry_term == b.entry_term && a.index == b.index && a.payload == b.payload;
  }
  friend bool operator!=(const log_entry& a, const log_entry& b) { return !(a == b); }
};

/// State that must be durable before any message depending on it is sent
/// (Raft paper Figure 2 "persistent state", plus the commit index so a
/// restart re-applies exactly the committed prefix).
/// JSON: {"term":3,"vote":"b1","commit":7} (vote "" = none).
struct hard_state {
  term current_term;
  node_id voted_for;
  log_index commit;
  friend bool operator==(const hard_state& a, const hard_state& b) {
    return a.current_term == b.current_term && a.voted_for == b.voted_for && a.commit == b.commit;
  }
  friend bool operator!=(const hard_state& a, const hard_state& b) { return !(a == b); }
};

/// (topic, partition) key of the ownership table.
struct topic_partition {
  std::string topic;
  int32_t partition = 0;
  friend bool operator<(const topic_partition& a, const topic_partition& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  }
  friend bool operator==(const topic_partition& a, const topic_partition& b) {
    return a.topic == b.topic && a.partition == b.partition;
  }
};

/// A topic as the metadata log knows it: its partition count, its
/// configuration (JSON object text, "" = defaults) and the index of the entry
/// that created it (so a proposer can tell "created by my entry" from
/// "existed already").
struct topic_record {
  int32_t partitions = 0;
  std::string config;
  log_index created_at;
  friend bool operator==(const topic_record& a, const topic_record& b) {
    return a.partitions == b.partitions && a.config == b.config && a.created_at == b.created_at;
  }
};

/// Compacted log prefix (Raft paper §7): the applied ownership table, the
/// topics and the controller as of `last_index`, whose entry had term
/// `last_term`. `topics` may be absent in a snapshot written before topic
/// entries existed (read as none).
/// JSON: {"last_index":512,"last_term":3,"controller":"b1","brokers":["b1","b2"],
///        "owners":[{"topic":"legacy","partition":3,"owner":"b2"}],
///        "topics":[{"topic":"orders","partitions":3,"config":"","created_at":9,"owners":[0,1,0]}],
///        "balancer":"{}"}
/// A topic's "owners" are indexes into "brokers", one per partition (-1 = no
/// row); the top-level "owners" holds only rows no topic covers. Snapshots
/// written before per-topic owners have every row at the top level and no
/// "brokers" (both read); `balancer` may be absent too: "{}".
struct snapshot {
  log_index last_index;
  term last_term;
  node_id controller;
  std::map<topic_partition, node_id> owners;
  std::map<std::string, topic_record> topics;
  /// The dynamic balancer settings (a JSON object text; "{}" = none).
  std::string balancer = "{}";
  /// Brokers fenced by the controller (absent in older snapshots: none).
  std::set<node_id> fenced;
  /// Brokers being drained, and brokers removed (both absent in older
  /// snapshots: none). JSON: "draining":["b3"],"removed":["b4"].
  std::set<node_id> draining;
  std::set<node_id> removed;
  /// Brokers that joined by a register entry, with their endpoints (absent
  /// in older snapshots: none). JSON: "registered":[{"id":"b4","cluster":
  /// "127.0.0.1:7104","client":"127.0.0.1:7004","kafka":"",
  /// "kafka_node_id":1001}].
  std::map<node_id, broker_endpoints> registered;
  /// The Kafka node id the log gave each registered broker (the row's
  /// "kafka_node_id", unique; a row without one has none).
  std::map<node_id, int32_t> kafka_node_ids;
  /// Owner epochs above 1 (absent in older snapshots: every owned partition
  /// at 1). JSON: "epochs":[{"topic":"orders","partition":3,"epoch":4}].
  std::map<topic_partition, uint64_t> epochs;
  /// Moves by id (absent in older snapshots: none). JSON: "moves":[{"id",
  /// "topic","partition","from","to","state","error","end","epoch","updated_at"}].
  std::map<std::string, move_record> moves;
  /// Deleted topics: name -> index of the entry that deleted it (absent in
  /// older snapshots: none). JSON: "deleted_topics":[{"topic":"orders","deleted_at":90}].
  std::map<std::string, log_index> deleted_topics;
  /// Transactional ids and their state (absent in older snapshots: none).
  /// JSON: "transactions":[{"transactional_id":"app-1","version":41,<the
  /// record's fields as in a txn entry>}].
  std::map<std::string, cluster::txn_record> transactions;
  friend bool operator==(const snapshot& a, const snapshot& b) {
    return a.last_index == b.last_index && a.last_term == b.last_term && a.controller == b.controller &&
           a.owners == b.owners && a.topics == b.topics && a.balancer == b.balancer && a.fenced == b.fenced &&
           a.draining == b.draining && a.removed == b.removed && a.registered == b.registered &&
           a.kafka_node_ids == b.kafka_node_ids && a.epochs == b.epochs && a.moves == b.moves &&
           a.deleted_topics == b.deleted_topics && a.transactions == b.transactions;
  }
};

// JSON encoding (never fails) and strict decoding (errc::malformed).
nlohmann::json to_json(const log_entry& e);
result<log_entry> entry_from_json(const nlohmann::json& j);
/// A payload alone (the body of POST /cluster/raft/propose): an entry's JSON
/// without "term" and "index".
nlohmann::json to_json(const entry_payload& p);
result<entry_payload> payload_from_json(const nlohmann::json& j);
nlohmann::json to_json(const hard_state& h);
result<hard_state> hard_state_from_json(const nlohmann::json& j);
nlohmann::json to_json(const snapshot& s);
result<snapshot> snapshot_from_json(const nlohmann::json& j);

namespace detail {
class json_reader;
/// The fields of a txn entry's record (docs/transactions.md), shared by the
/// entry and the snapshot row; raft/txn_json.cpp.
void write_txn_record(nlohmann::json& j, const cluster::txn_record& r);
cluster::txn_record read_txn_record(json_reader& r);
/// True for a valid transactional id: 1..max_transactional_id_bytes bytes.
bool valid_transactional_id(const std::string& id);
/// Snapshot rows of the transactional ids, and back (errc::malformed naming the row).
nlohmann::json txn_rows(const std::map<std::string, cluster::txn_record>& txns);
result<std::map<std::string, cluster::txn_record>> read_txn_rows(const nlohmann::json& rows);
}  // namespace detail

/// Human-readable one-line form of an entry ("3/7 owner orders-3=b2"), for logs and test output.
std::string describe(const log_entry& e);
/// The payload alone ("owner orders-3=b2", "topic orders x6 @b1").
std::string describe(const entry_payload& p);

/// Largest partition count a topic entry may carry (dataplane::max_partitions).
inline constexpr int32_t max_topic_partitions = 100000;

}  // namespace moonmq::raft

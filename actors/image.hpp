#pragma once
// The metadata image every request path reads (DESIGN §9): who owns each
// partition and which topics exist cluster-wide, from the metadata log. One
// shared holder per broker, replaced whole by its writer (the raft_node) and
// read lock-free of any actor: readers take an immutable snapshot.
//
// A partition the table does not name is owned by nobody (never "absent =
// mine"): every partition of a topic created through the metadata log has an
// owner from the entry that created it, so such a partition is one this
// broker must not serve.

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/topic_sync.hpp"
#include "cluster/txn_record.hpp"
#include "cluster/types.hpp"
#include "dataplane/topic_config.hpp"

namespace moonmq {

/// Immutable snapshot of the ownership table: partitions whose owner is named.
using owner_map = std::map<cluster::topic_partition, std::string>;

/// Owner epochs above 1, by partition (docs/metadata.md "Owner epochs").
using epoch_map = std::map<cluster::topic_partition, int64_t>;

/// A topic as the metadata log knows it.
struct topic_info {
  int32_t partitions = 0;
  std::string config;      ///< topic config as JSON object text ("" = defaults)
  int64_t created_at = 0;  ///< index of the entry that created it
};
/// Immutable snapshot of the topics of the metadata log (empty without Raft).
using topic_image = std::map<std::string, topic_info>;

/// The log's topics as cluster::plan_topic_sync reads them, each config
/// over `defaults` (the cluster's topic defaults, dataplane::topic_defaults_of
/// the image's dynamic settings). A config is read as the broker's adopt
/// reads it (what this build cannot read is skipped), so a copy that took it
/// compares equal, and a change of a cluster default makes every copy that
/// inherits it differ: the sync adopts them again, which applies it.
inline std::map<std::string, cluster::topic_copy> log_copies(const topic_image& topics,
                                                             const dataplane::topic_config& defaults) {
  std::map<std::string, cluster::topic_copy> out;
  for (const auto& [name, t] : topics) {
    dataplane::topic_config c;
    (void)dataplane::read_topic_config_lenient(t.config, c, defaults);
    out[name] = {t.partitions, t.created_at, dataplane::topic_config_text(c)};
  }
  return out;
}

/// Topics the metadata log deleted: name -> index of the deletion entry.
using deleted_topic_map = std::map<std::string, int64_t>;

/// The standing of brokers in the metadata log (docs/metadata.md): fenced by
/// the controller's liveness check, being drained, or removed by an operator.
struct broker_standing {
  std::set<std::string> fenced;
  std::set<std::string> draining;
  std::set<std::string> removed;
  /// Brokers that joined at runtime (a register entry), with their endpoints.
  std::map<std::string, cluster::broker_endpoints> registered;
  /// The Kafka node id the log gave each of them (raft::first_joined_kafka_node_id up).
  std::map<std::string, int32_t> kafka_node_ids;
};

/// A partition move as the metadata log records it (docs/cluster.md "Moves
/// in the log"): every unfinished move and the recently finished ones.
struct move_info {
  cluster::topic_partition tp;
  std::string from;
  std::string to;
  std::string state;   ///< queued, copying, cutover, offsets, rolling_back, done, failed, cancelled
  std::string error;
  int64_t end = -1;    ///< the source's sealed log end, once its offsets step recorded it
  int64_t log_start = -1;  ///< the sealed source's log start, recorded with `end` (-1 = not recorded)
  int64_t epoch = 0;   ///< the partition's owner epoch right after the cutover (0 before it)
  int64_t updated_at = 0;  ///< index of the entry that last changed it
};
/// Moves by id.
using move_image = std::map<std::string, move_info>;

/// Transactional ids and their state, as the metadata log holds them
/// (docs/transactions.md "Coordinator state").
using txn_image = std::map<std::string, cluster::txn_record>;

/// Where a request for one partition goes, as the image says.
struct partition_route {
  enum class kind { local, remote, unowned };
  kind where = kind::local;
  std::string owner;  ///< the owner when remote
};

class owner_view {
public:
  std::shared_ptr<const owner_map> get() const {
    std::lock_guard<std::mutex> g{mtx_};
    return current_;
  }
  std::shared_ptr<const topic_image> topics() const {
    std::lock_guard<std::mutex> g{mtx_};
    return topics_;
  }
  /// The owner the table names for `tp` when that is not `self` (the
  /// broker asking): where a request for `tp` must go instead.
  std::optional<std::string> owner_other_than(const std::string& self, const cluster::topic_partition& tp) const {
    auto r = route(self, tp);
    if (r.where == partition_route::kind::remote)
      return r.owner;
    return std::nullopt;
  }
  /// Local (this broker serves it), remote (the named owner does) or
  /// unowned (no row: nobody may serve it).
  partition_route route(const std::string& self, const cluster::topic_partition& tp) const {
    std::unique_lock<std::mutex> g{mtx_};
    auto owners = current_;
    g.unlock();
    auto it = owners->find(tp);
    if (it == owners->end())
      return {partition_route::kind::unowned, {}};
    if (it->second == self)
      return {partition_route::kind::local, {}};
    return {partition_route::kind::remote, it->second};
  }
  void set(std::shared_ptr<const owner_map> next) {
    {
      std::lock_guard<std::mutex> g{mtx_};
      current_ = std::move(next);
    }
    notify();
  }
  /// Calls `f` after every set() that replaces the owners, on the setting
  /// thread and outside the image's lock (`f` must be quick: it only
  /// signals, e.g. sends an actor a message). A shared-storage I/O worker
  /// follows a new image at once with it, instead of on its next poll.
  void on_set(std::function<void()> f) const {
    std::lock_guard<std::mutex> g{listen_mtx_};
    listeners_.push_back(std::move(f));
  }
  /// Replaces the whole image at once, so that no reader sees owners of one
  /// applied index beside the broker standing of another.
  void set(std::shared_ptr<const owner_map> next, std::shared_ptr<const topic_image> topics,
           std::shared_ptr<const std::string> balancer, std::shared_ptr<const broker_standing> standing,
           std::shared_ptr<const epoch_map> epochs = std::make_shared<const epoch_map>(),
           std::shared_ptr<const move_image> moves = std::make_shared<const move_image>(),
           std::shared_ptr<const deleted_topic_map> deleted = std::make_shared<const deleted_topic_map>()) {
    auto taken_back = std::make_shared<std::map<cluster::topic_partition, int64_t>>();
    for (const auto& [id, m] : *moves)
      if (m.epoch > 0 && (m.state == "rolling_back" || m.state == "failed")) {
        auto& at = (*taken_back)[m.tp];
        at = std::max(at, m.epoch + 1);
      }
    {
      std::lock_guard<std::mutex> g{mtx_};
      taken_back_ = std::move(taken_back);
      moves_ = std::move(moves);
      deleted_ = std::move(deleted);
      current_ = std::move(next);
      topics_ = std::move(topics);
      balancer_ = std::move(balancer);
      standing_ = std::move(standing);
      epochs_ = std::move(epochs);
    }
    notify();
  }
  /// The owner (empty when none) and owner epoch of `tp`, read together
  /// from one applied image: epoch 1 from the partition's creation, bumped
  /// by every owner change; 0 without an owner (and without Raft).
  std::pair<std::string, int64_t> owner_and_epoch(const cluster::topic_partition& tp) const {
    std::unique_lock<std::mutex> g{mtx_};
    auto owners = current_;
    auto epochs = epochs_;
    g.unlock();
    auto it = owners->find(tp);
    if (it == owners->end())
      return {std::string{}, 0};
    auto e = epochs->find(tp);
    return {it->second, e == epochs->end() ? 1 : e->second};
  }
  /// Owners, owner epochs, moves and broker standing of one applied image,
  /// read together (a failover expects the epochs of the owners it reads).
  struct ownership_cut {
    std::shared_ptr<const owner_map> owners;
    std::shared_ptr<const epoch_map> epochs;  ///< above 1 only: a partition missing here is at 1
    std::shared_ptr<const move_image> moves;
    std::shared_ptr<const broker_standing> standing;
  };
  ownership_cut ownership() const {
    std::lock_guard<std::mutex> g{mtx_};
    return {current_, epochs_, moves_, standing_};
  }
  /// The topics and the deleted topics of one applied image (read together:
  /// a deletion and a creation of one name apply to both at once).
  std::pair<std::shared_ptr<const topic_image>, std::shared_ptr<const deleted_topic_map>> topics_and_deleted() const {
    std::lock_guard<std::mutex> g{mtx_};
    return {topics_, deleted_};
  }
  /// The topics the metadata log deleted (the newest
  /// raft::ownership_state::max_deleted_topics_kept).
  std::shared_ptr<const deleted_topic_map> deleted_topics() const {
    std::lock_guard<std::mutex> g{mtx_};
    return deleted_;
  }
  /// Replaces the transactions of the image (published with the rest of an
  /// applied batch, right after it).
  /// `changed_at`: the index of the log entry (or snapshot) that last
  /// changed them (raft::ownership_state::transactions_changed_at).
  void set_transactions(std::shared_ptr<const txn_image> txns, int64_t changed_at = -1) {
    std::lock_guard<std::mutex> g{mtx_};
    txns_ = std::move(txns);
    txns_changed_at_ = changed_at;
  }
  /// The `changed_at` of the published transactions (-1 before any).
  int64_t transactions_changed_at() const {
    std::lock_guard<std::mutex> g{mtx_};
    return txns_changed_at_;
  }
  /// The transactional ids of the metadata log and their state (empty without Raft).
  std::shared_ptr<const txn_image> transactions() const {
    std::lock_guard<std::mutex> g{mtx_};
    return txns_;
  }
  /// The owner epoch at which a move's source took `tp` back after its
  /// cutover (a rollback names the source owner at the cutover's epoch + 1),
  /// as far as the kept moves tell; 0 when none did. Shared storage holds a
  /// takeover at that epoch until the destination's lease has run out
  /// (shared_mode::epoch_of, docs/shared-storage.md "Take-back").
  int64_t taken_back_epoch(const cluster::topic_partition& tp) const {
    std::unique_lock<std::mutex> g{mtx_};
    auto back = taken_back_;
    g.unlock();
    auto it = back->find(tp);
    return it == back->end() ? 0 : it->second;
  }
  /// The moves of the metadata log, by id.
  std::shared_ptr<const move_image> moves() const {
    std::lock_guard<std::mutex> g{mtx_};
    return moves_;
  }
  /// Fenced, draining and removed brokers (all empty without Raft).
  std::shared_ptr<const broker_standing> standing() const {
    std::lock_guard<std::mutex> g{mtx_};
    return standing_;
  }
  /// Brokers the metadata log has fenced (silent for SessionTimeoutMs):
  /// their partitions are offline until they are unfenced.
  std::shared_ptr<const std::set<std::string>> fenced() const {
    auto s = standing();
    return {s, &s->fenced};
  }
  /// `brokers` without the fenced and the removed ones (all of them when
  /// none is left: something must coordinate). Group coordinators are
  /// placed over this list.
  std::vector<std::string> unfenced(std::vector<std::string> brokers) const {
    auto s = standing();
    std::vector<std::string> out;
    for (auto& b : brokers)
      if (!s->fenced.count(b) && !s->removed.count(b))
        out.push_back(b);
    return out.empty() ? brokers : out;
  }
  /// The brokers counted before any registration, set once at start: the
  /// voters of the metadata log (Cluster.Raft.Voters), and `self` when this
  /// broker joins as a learner (counted by members() before its
  /// registration applies; it has no Kafka node id until then).
  void set_voters(std::vector<std::string> voters, std::string self = {}) {
    std::lock_guard<std::mutex> g{mtx_};
    std::sort(voters.begin(), voters.end());
    voters_ = std::move(voters);
    self_ = std::move(self);
  }
  /// The Kafka node id of `broker` (docs/kafka.md): a voter's is its
  /// 1-based position among the voters in id order (a static list, the
  /// same on every broker); a broker that joined has the one its first
  /// registration was given in the log (1001 up), kept for good. -1 for a
  /// broker with none (unknown, or a learner before its registration applies).
  int32_t kafka_node_id(const std::string& broker) const {
    std::unique_lock<std::mutex> g{mtx_};
    if (auto it = std::lower_bound(voters_.begin(), voters_.end(), broker); it != voters_.end() && *it == broker)
      return static_cast<int32_t>(it - voters_.begin()) + 1;
    auto s = standing_;
    g.unlock();
    auto n = s->kafka_node_ids.find(broker);
    return n == s->kafka_node_ids.end() ? -1 : n->second;
  }
  /// The broker whose Kafka node id is `node` (nullopt when none is).
  std::optional<std::string> broker_of_kafka_node_id(int32_t node) const {
    std::unique_lock<std::mutex> g{mtx_};
    if (node >= 1 && static_cast<size_t>(node) <= voters_.size())
      return voters_[static_cast<size_t>(node) - 1];
    auto s = standing_;
    g.unlock();
    for (const auto& [id, n] : s->kafka_node_ids)
      if (n == node)
        return id;
    return std::nullopt;
  }
  /// Every broker of the cluster in id order: the voters and the brokers
  /// that registered (removed ones stay listed: unfenced() drops them). Group
  /// coordinators and placement are computed over this list, the same on
  /// every broker that applied the same image.
  std::vector<std::string> members() const {
    std::unique_lock<std::mutex> g{mtx_};
    std::set<std::string> ids(voters_.begin(), voters_.end());
    if (!self_.empty())
      ids.insert(self_);
    auto s = standing_;
    g.unlock();
    for (const auto& [id, e] : s->registered)
      ids.insert(id);
    return {ids.begin(), ids.end()};
  }
  /// The dynamic balancer settings of the metadata log (JSON object text,
  /// config/dynamic.hpp; "{}" without Raft or before any change).
  std::shared_ptr<const std::string> balancer() const {
    std::lock_guard<std::mutex> g{mtx_};
    return balancer_;
  }

  /// The cluster's topic defaults: dataplane::topic_defaults_of the
  /// dynamic settings (the built-in defaults without Raft).
  dataplane::topic_defaults topic_defaults() const { return dataplane::topic_defaults_of(*balancer()); }

private:
  void notify() const {
    std::vector<std::function<void()>> fs;
    {
      std::lock_guard<std::mutex> g{listen_mtx_};
      fs = listeners_;
    }
    for (const auto& f : fs)
      f();
  }

  mutable std::mutex listen_mtx_;
  mutable std::vector<std::function<void()>> listeners_;
  mutable std::mutex mtx_;
  std::shared_ptr<const owner_map> current_ = std::make_shared<owner_map>();
  std::shared_ptr<const topic_image> topics_ = std::make_shared<topic_image>();
  std::shared_ptr<const std::string> balancer_ = std::make_shared<const std::string>("{}");
  std::shared_ptr<const broker_standing> standing_ = std::make_shared<const broker_standing>();
  std::shared_ptr<const epoch_map> epochs_ = std::make_shared<const epoch_map>();
  std::shared_ptr<const move_image> moves_ = std::make_shared<const move_image>();
  std::shared_ptr<const std::map<cluster::topic_partition, int64_t>> taken_back_ =
    std::make_shared<const std::map<cluster::topic_partition, int64_t>>();
  std::shared_ptr<const txn_image> txns_ = std::make_shared<const txn_image>();
  int64_t txns_changed_at_ = -1;
  std::shared_ptr<const deleted_topic_map> deleted_ = std::make_shared<const deleted_topic_map>();
  std::vector<std::string> voters_;  ///< sorted
  std::string self_;                 ///< this broker when it is a learner
};

}  // namespace moonmq

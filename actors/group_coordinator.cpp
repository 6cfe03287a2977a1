#include "actors/group_coordinator.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "actors/shared_mode.hpp"
#include "groups/epoch_offsets.hpp"
#include "groups/group_state.hpp"
#include "groups/kafka_membership.hpp"
#include "groups/offset_store.hpp"
#include "util/clock.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace {

using json = nlohmann::json;

/// The committed offsets of one shared partition as this broker last
/// opened them: at `epoch`, for writing (the epoch's own store, carried
/// forward) or read-only (the newest earlier epoch's, before the first
/// write: a read never writes).
struct shared_offsets {
  int64_t epoch = 0;
  bool writable = false;
  std::optional<groups::offset_store> store;  ///< nullopt: no epoch has offsets yet
};

struct group_coordinator_state {
  group_settings settings;
  std::shared_ptr<catalog_view> view;
  std::optional<groups::offset_store> store;
  std::map<std::string, groups::group_state> groups;
  /// Partition counts of topics learned from other brokers (cluster-wide
  /// joins); a topic's count is max(local catalogue, learned).
  std::map<std::string, int32_t> learned_counts;
  /// Per group: the newest generation seen here (local joins, relayed
  /// answers, fenced commits): the owner-side commit fence.
  std::map<std::string, int32_t> newest_generation;
  /// Shared storage: the offsets of shared partitions, by partition.
  std::map<cluster::topic_partition, shared_offsets> shared_stores;
  /// The Kafka groups' membership (JoinGroup/SyncGroup rounds).
  groups::kafka_membership kafka;
  uint64_t seed = 0;
  static inline const char* name = "group_coordinator";
};

using self_ptr = group_actor::stateful_pointer<group_coordinator_state>;

/// The kind of a group error (actors/errors.hpp): bad input invalid, an
/// unknown member or topic not_found, an old generation conflict, I/O and
/// corrupt state internal.
fault fault_of(groups::errc code) {
  switch (code) {
    case groups::errc::invalid_group_id:
    case groups::errc::invalid_argument:
      return fault::invalid;
    case groups::errc::unknown_member:
    case groups::errc::unknown_topic:
      return fault::not_found;
    case groups::errc::illegal_generation:
      return fault::conflict;
    case groups::errc::io_error:
    case groups::errc::corrupt_state:
      return fault::internal;
  }
  return fault::internal;
}

caf::error from(const groups::error& e) {
  return make_coded_error(fault_of(e.code), groups::to_string(e.code), e.message);
}

std::string membership_json(const groups::membership& m) {
  json assignment = json::object();
  for (const auto& [topic, parts] : m.assigned)
    assignment[topic] = parts;
  return json{{"member_id", m.member_id}, {"generation", m.gen.value}, {"assignment", assignment}}.dump();
}

/// A topic's partition count: the larger of the local catalogue's and the
/// one learned from other brokers; nullopt when neither knows it.
std::optional<int32_t> count_of(self_ptr self, const std::string& topic) {
  std::optional<int32_t> n;
  auto topics = self->state.view->get();
  if (auto t = topics->find(topic); t != topics->end())
    n = static_cast<int32_t>(t->second.partitions.size());
  if (auto l = self->state.learned_counts.find(topic); l != self->state.learned_counts.end())
    n = std::max(n.value_or(0), l->second);
  return n;
}

groups::group_state& group_of(self_ptr self, const std::string& id);

void saw_generation(self_ptr self, const std::string& group, int32_t gen) {
  auto& g = self->state.newest_generation[group];
  g = std::max(g, gen);
}

/// Checks a commit's offsets JSON array against the catalogue into `out`.
caf::error parse_commit(self_ptr self, const std::string& offsets_json, std::vector<groups::partition_offset>& out) {
  auto arr = json::parse(offsets_json, nullptr, false);
  auto topics = self->state.view->get();
  for (size_t i = 0; arr.is_array() && i < arr.size(); ++i) {
    const auto& o = arr[i];
    auto where = "offsets[" + std::to_string(i) + "]";
    if (!o.is_object() || !o.contains("topic") || !o["topic"].is_string() || !o.contains("partition")
        || !o["partition"].is_number_integer() || !o.contains("offset") || !o["offset"].is_number_integer())
      return make_error(errc::invalid_request, where + ": expected {\"topic\",\"partition\",\"offset\"}");
    groups::partition_offset po{o["topic"].get<std::string>(), o["partition"].get<int32_t>(),
                                o["offset"].get<int64_t>()};
    if (o.contains("metadata") && !o["metadata"].is_null()) {
      if (!o["metadata"].is_string())
        return make_error(errc::invalid_request, where + ".metadata: must be a string");
      po.metadata = o["metadata"].get<std::string>();
      if (po.metadata.size() > groups::max_offset_metadata_bytes)
        return make_coded_error(fault::invalid, "offset_metadata_too_large",
                                where + ".metadata: " + std::to_string(po.metadata.size()) + " bytes, more than "
                                  + std::to_string(groups::max_offset_metadata_bytes));
    }
    auto t = topics->find(po.topic);
    if (t == topics->end())
      return make_error(errc::unknown_topic, where + ": unknown topic " + po.topic);
    if (po.partition < 0 || po.partition >= static_cast<int32_t>(t->second.partitions.size()))
      return make_error(errc::unknown_partition, where + ": no partition " + std::to_string(po.partition)
                                                   + " in topic " + po.topic);
    if (po.offset < 0)
      return make_error(errc::invalid_request, where + ".offset: must not be negative");
    out.push_back(std::move(po));
  }
  if (!arr.is_array() || out.empty())
    return make_error(errc::invalid_request, "body must be {\"offsets\":[...]} with at least one entry");
  return {};
}

// --- shared storage (docs/shared-storage.md "Committed group offsets") -------

/// The directory of (topic, partition) in the shared directory, or "" when
/// this broker is in local mode or the metadata log does not know it.
std::string shared_root(self_ptr self, const std::string& topic, int32_t partition) {
  const auto& s = self->state.settings;
  if (!s.shared || s.shared_dir.empty())
    return {};
  auto topics = s.shared->image->topics();
  auto t = topics->find(topic);
  if (t == topics->end() || t->second.created_at <= 0 || partition < 0 || partition >= t->second.partitions)
    return {};
  return shared_partition_root(s.shared_dir, topic, partition, t->second.created_at);
}

caf::error ownership_lost(const std::string& topic, int32_t partition) {
  return make_coded_error(fault::unavailable, "ownership_lost",
                          "the committed offsets of " + topic + "-" + std::to_string(partition)
                            + " are not this broker's to serve: the metadata log names another owner, or this "
                              "broker's lease lapsed; retry at the owner");
}

/// The offsets of the shared partition (topic, partition) at `root`, which
/// this broker must own at the image's epoch with a valid lease, opened for
/// writing or for reading (shared_offsets). Errors: ownership_lost (unavailable),
/// storage_error (an earlier epoch's offsets do not decode, or I/O).
caf::error open_shared(self_ptr self, const std::string& root, const cluster::topic_partition& tp, bool write,
                       shared_offsets*& out) {
  const auto& sh = *self->state.settings.shared;
  auto epoch = sh.epoch_of(tp.topic, tp.partition);
  if (!sh.holds(tp.topic, tp.partition, epoch))
    return ownership_lost(tp.topic, tp.partition);
  auto& e = self->state.shared_stores[tp];
  if (e.epoch != epoch || (write && !e.writable)) {
    using opened_store = groups::result<std::optional<groups::offset_store>>;
    auto opened = [&]() -> opened_store {
      if (!write)
        return groups::read_newest_offsets(root, epoch + 1);
      auto w = groups::open_epoch_offsets(root, epoch);
      if (!w)
        return w.err();
      return std::optional<groups::offset_store>{std::move(w).value()};
    }();
    if (!opened) {
      e = shared_offsets{};
      log::get("groups")->error("offsets.shared_open_failed root={} epoch={} error=\"{}\"", root, epoch,
                                opened.err().message);
      return make_error(errc::storage_error, "offsets of " + tp.topic + "-" + std::to_string(tp.partition) + ": "
                                               + opened.err().message);
    }
    e = shared_offsets{epoch, write, std::move(opened).value()};
  }
  out = &e;
  return {};
}

/// How often a shared write is made again at the next epoch of this broker's
/// (moved_on_here) before it is refused: one bump per move's confirm, so
/// more than two in one write's time means the partition is moving on.
constexpr int max_epoch_rewrites = 2;

/// The image names this broker owner of `tp` at `epoch` + 1: its own owner
/// entry (a move's destination confirming) bumped the epoch while a write
/// at `epoch` was under way, and nobody else owned the partition between
/// the two (each owner change bumps the epoch by one). The write, durable
/// at `epoch`, is carried into the next epoch's store when that store is
/// first written, so writing it there again is exact (an offset commit is
/// idempotent) and is what makes it acknowledgeable. Any other later epoch
/// may hold another owner's newer commits, which a rewrite would undo.
bool moved_on_here(self_ptr self, const cluster::topic_partition& tp, int64_t epoch) {
  return self->state.settings.shared->epoch_of(tp.topic, tp.partition) == epoch + 1;
}

/// Every shared partition the image names this broker owner of (of `topic`
/// when not ""), with its root.
std::vector<std::pair<cluster::topic_partition, std::string>> owned_shared(self_ptr self, const std::string& topic) {
  std::vector<std::pair<cluster::topic_partition, std::string>> out;
  const auto& s = self->state.settings;
  if (!s.shared)
    return out;
  auto owners = s.shared->image->get();
  for (const auto& [tp, owner] : *owners)
    if (owner == s.shared->broker_id && (topic.empty() || tp.topic == topic))
      if (auto root = shared_root(self, tp.topic, tp.partition); !root.empty())
        out.emplace_back(tp, std::move(root));
  return out;
}

/// Stores a commit: each shared partition's entries in its own store at this
/// broker's owner epoch, the rest in the local store. A shared part is
/// acknowledged only if, after its write (fsync) returned, the lease is
/// valid and the image still names this broker owner at that epoch: the
/// rule appends follow (docs/shared-storage.md "The lease").
caf::error store_commit(self_ptr self, const std::string& group, std::vector<groups::partition_offset>& offsets,
                        const groups::commit_fence& fence) {
  std::vector<groups::partition_offset> local;
  std::map<cluster::topic_partition, std::pair<std::string, std::vector<groups::partition_offset>>> shared;
  for (auto& o : offsets) {
    auto root = shared_root(self, o.topic, o.partition);
    if (root.empty()) {
      local.push_back(std::move(o));
      continue;
    }
    auto& part = shared[cluster::topic_partition{o.topic, o.partition}];
    part.first = std::move(root);
    part.second.push_back(std::move(o));
  }
  if (!local.empty())
    if (auto r = self->state.store->commit(group, local, fence); !r)
      return from(r.err());
  std::vector<std::pair<cluster::topic_partition, int64_t>> written;
  auto write = [&](const cluster::topic_partition& tp, const std::pair<std::string, std::vector<groups::partition_offset>>& part,
                   int64_t& epoch) -> caf::error {
    shared_offsets* e = nullptr;
    if (auto err = open_shared(self, part.first, tp, true, e))
      return err;
    if (auto r = e->store->commit(group, part.second, fence); !r)
      return from(r.err());
    epoch = e->epoch;
    return {};
  };
  for (auto& [tp, part] : shared) {
    int64_t epoch = 0;
    if (auto err = write(tp, part, epoch))
      return err;
    written.emplace_back(tp, epoch);
  }
  for (auto& [tp, epoch] : written)
    for (int again = 0; !self->state.settings.shared->holds(tp.topic, tp.partition, epoch); ++again) {
      if (again == max_epoch_rewrites || !moved_on_here(self, tp, epoch))
        return ownership_lost(tp.topic, tp.partition);
      if (auto err = write(tp, shared.at(tp), epoch))
        return err;
    }
  return {};
}

/// `group`'s committed offsets (of `topic` when not "") in the shared
/// partitions this broker owns, appended to `out`; `known` is set when a
/// store holds the group. Errors: as open_shared.
caf::error fetch_shared(self_ptr self, const std::string& group, const std::string& topic,
                        std::vector<groups::partition_offset>& out, bool& known) {
  for (const auto& [tp, root] : owned_shared(self, topic)) {
    shared_offsets* e = nullptr;
    if (auto err = open_shared(self, root, tp, false, e))
      return err;
    if (!e->store || !e->store->has_group(group))
      continue;
    known = true;
    if (auto c = e->store->fetch(group, tp.topic))
      for (auto& o : *c)
        if (o.partition == tp.partition)
          out.push_back(std::move(o));
  }
  return {};
}

/// Ids of the groups with committed offsets here, local or shared.
std::set<std::string> committed_groups(self_ptr self) {
  std::set<std::string> out;
  if (self->state.store)
    for (auto& g : self->state.store->list_groups())
      out.insert(std::move(g));
  for (const auto& [tp, root] : owned_shared(self, {})) {
    shared_offsets* e = nullptr;
    if (!open_shared(self, root, tp, false, e) && e->store)
      for (auto& g : e->store->list_groups())
        out.insert(std::move(g));
  }
  return out;
}

/// Removes `group`'s offsets (of `partitions` of `topic`, or all when
/// `topic` is "") from the shared partitions owned here; adds how many
/// entries went to `removed` and sets `held` when a store held the group.
caf::error remove_shared(self_ptr self, const std::string& group, const std::string& topic,
                         const std::vector<int32_t>& partitions, size_t& removed, bool& held) {
  for (const auto& [tp, root] : owned_shared(self, topic)) {
    if (!topic.empty() && std::find(partitions.begin(), partitions.end(), tp.partition) == partitions.end())
      continue;
    shared_offsets* e = nullptr;
    if (auto err = open_shared(self, root, tp, false, e))
      return err;
    if (!e->store || !e->store->has_group(group))
      continue;
    held = true;
    if (auto err = open_shared(self, root, tp, true, e))
      return err;
    if (topic.empty()) {
      auto r = e->store->remove_group(group);
      if (!r)
        return make_error(errc::storage_error, "delete of group " + group + ": " + r.err().message);
      removed += *r ? 1 : 0;
    } else {
      auto r = e->store->remove_offsets(group, tp.topic, {tp.partition});
      if (!r)
        return make_error(errc::storage_error, "offset delete of group " + group + ": " + r.err().message);
      removed += *r;
    }
    if (!self->state.settings.shared->holds(tp.topic, tp.partition, e->epoch))
      return ownership_lost(tp.topic, tp.partition);
  }
  return {};
}

/// The join shared by both join messages.
caf::result<std::string> run_join(self_ptr self, const std::string& group, const std::string& member,
                                  const std::vector<std::string>& topics) {
  if (auto v = groups::validate_group_id(group); !v)
    return from(v.err());
  std::optional<std::string> id;
  if (!member.empty())
    id = member;
  auto& g = group_of(self, group);
  auto before = g.current_generation().value;
  auto r = g.join(id, topics, util::monotonic_ms());
  if (!r)
    return from(r.err());
  if (r->gen.value != before)
    log::get("broker")->info("group.rebalanced group={} generation={} members={} reason={}", group, r->gen.value,
                             g.member_count(), groups::to_string(g.last_rebalance()));
  saw_generation(self, group, static_cast<int32_t>(r->gen.value));
  return membership_json(*r);
}

groups::group_state& group_of(self_ptr self, const std::string& id) {
  auto it = self->state.groups.find(id);
  if (it != self->state.groups.end())
    return it->second;
  groups::topic_lookup lookup = [self](const std::string& topic) { return count_of(self, topic); };
  groups::group_config cfg{self->state.settings.session_timeout_ms, ++self->state.seed};
  return self->state.groups.emplace(id, groups::group_state{id, cfg, lookup}).first->second;
}

void housekeeping(self_ptr self) {
  auto now = util::monotonic_ms();
  for (auto& [id, g] : self->state.groups) {
    for (const auto& [topic, count] : g.counts()) {
      auto n = count_of(self, topic);
      if (n && *n != count)
        (void) g.set_partition_count(topic, *n);
    }
    for (const auto& m : g.expire(now))
      log::get("broker")->info("group.member_evicted group={} member={} generation={}", id, m,
                               g.current_generation().value);
  }
}

/// How often the Kafka groups' membership expires silent members and
/// closes overdue join rounds.
constexpr std::chrono::milliseconds kafka_tick{250};

/// Runs the replies a membership call completed.
void run_all(groups::kafka_membership::actions& out) {
  for (auto& f : out)
    f();
}

group_actor::behavior_type coordinator_fn(self_ptr self, group_settings settings, std::shared_ptr<catalog_view> view,
                                          std::shared_ptr<groups::offset_store> opened) {
  self->state.settings = std::move(settings);
  self->state.view = std::move(view);
  if (opened) {
    self->state.store.emplace(std::move(*opened));
  } else if (auto store = groups::offset_store::open(self->state.settings.data_dir)) {
    self->state.store.emplace(std::move(store.value()));
  } else {
    log::get("broker")->error("groups.store_failed error=\"{}\"", store.err().message);
  }
  auto tick = std::chrono::milliseconds(std::max<int64_t>(100, self->state.settings.session_timeout_ms / 4));
  self->delayed_send(self, tick, tick_atom::value);
  self->state.kafka = groups::kafka_membership{self->state.settings.kafka_initial_rebalance_delay_ms};
  self->delayed_send(self, kafka_tick, kafka_group_atom::value, tick_atom::value);
  return {
    [self](join_atom, std::string& group, std::string& member, std::vector<std::string>& topics)
      -> caf::result<std::string> { return run_join(self, group, member, topics); },
    [self](join_atom, std::string& group, std::string& member, std::vector<std::string>& topics,
           std::string& counts_json) -> caf::result<std::string> {
      auto counts = json::parse(counts_json, nullptr, false);
      if (counts.is_object())
        for (const auto& [topic, n] : counts.items())
          if (n.is_number_integer() && n.get<int64_t>() > 0 && n.get<int64_t>() <= (int64_t{1} << 30)) {
            auto& known = self->state.learned_counts[topic];
            known = std::max(known, n.get<int32_t>());
          }
      // A learned count that grew rebalances the groups subscribed to it.
      for (auto& [id, g] : self->state.groups)
        for (const auto& [topic, count] : g.counts())
          if (auto n = count_of(self, topic); n && *n != count)
            (void) g.set_partition_count(topic, *n);
      return run_join(self, group, member, topics);
    },
    [self](observe_atom, std::string& group, int32_t gen) { saw_generation(self, group, gen); },
    [self](commit_atom, std::string& group, std::string& offsets_json, int32_t gen, std::string&,
           owner_fence_atom) -> caf::result<bool> {
      if (!self->state.store)
        return make_error(errc::not_ready, "the offset store could not be opened");
      if (auto v = groups::validate_group_id(group); !v)
        return from(v.err());
      std::vector<groups::partition_offset> offsets;
      if (auto e = parse_commit(self, offsets_json, offsets))
        return e;
      auto seen = self->state.newest_generation.find(group);
      if (gen >= 0 && seen != self->state.newest_generation.end() && gen < seen->second)
        return make_coded_error(fault::conflict, "stale_generation",
                                "generation " + std::to_string(gen) + " of group " + group
                                  + " is older than generation " + std::to_string(seen->second)
                                  + ", the newest this partition owner has seen; rejoin the group");
      if (auto e = store_commit(self, group, offsets, groups::commit_fence{}))
        return e;
      if (gen >= 0)
        saw_generation(self, group, gen);
      return true;
    },
    [self](beat_atom, std::string& group, std::string& member) -> caf::result<std::string> {
      auto it = self->state.groups.find(group);
      if (it == self->state.groups.end())
        return make_coded_error(fault::not_found, "unknown_member", "member " + member + " is not in group " + group);
      auto r = it->second.heartbeat(member, util::monotonic_ms());
      if (!r)
        return from(r.err());
      return membership_json(*r);
    },
    [self](leave_atom, std::string& group, std::string& member) -> caf::result<bool> {
      auto it = self->state.groups.find(group);
      if (it == self->state.groups.end())
        return make_coded_error(fault::not_found, "unknown_member", "member " + member + " is not in group " + group);
      if (auto r = it->second.leave(member); !r)
        return from(r.err());
      log::get("broker")->info("group.member_left group={} member={} generation={}", group, member,
                               it->second.current_generation().value);
      return true;
    },
    [self](commit_atom, std::string& group, std::string& offsets_json, int32_t gen,
           std::string& member) -> caf::result<bool> {
      if (!self->state.store)
        return make_error(errc::not_ready, "the offset store could not be opened");
      if (auto v = groups::validate_group_id(group); !v)
        return from(v.err());
      std::vector<groups::partition_offset> offsets;
      if (auto e = parse_commit(self, offsets_json, offsets))
        return e;
      groups::commit_fence fence;
      auto it = self->state.groups.find(group);
      std::optional<std::string> m = member.empty() ? std::nullopt : std::optional<std::string>(member);
      std::optional<groups::generation> requested;
      if (gen >= 0)
        requested = groups::generation{gen};
      if (it != self->state.groups.end()) {
        fence.current = it->second.current_generation();
        if (auto c = it->second.check_commit(m, requested); !c)
          return from(c.err());
      } else if (requested) {
        return make_coded_error(fault::conflict, "illegal_generation",
                                "group " + group + " has no live generation; commit without a generation");
      }
      fence.request = requested;
      if (auto e = store_commit(self, group, offsets, fence))
        return e;
      return true;
    },
    [self](offsets_atom, std::string& group, std::string& topic) -> caf::result<std::string> {
      if (!self->state.store)
        return make_error(errc::not_ready, "the offset store could not be opened");
      std::vector<groups::partition_offset> found;
      bool known = self->state.store->has_group(group) || self->state.groups.count(group);
      if (auto v = groups::validate_group_id(group); v) {
        if (auto e = fetch_shared(self, group, topic, found, known))
          return e;
      }
      if (!known)
        return make_coded_error(fault::not_found, "unknown_group", "no group " + group);
      if (auto r = self->state.store->fetch(group, topic.empty() ? std::nullopt : std::optional<std::string>(topic)))
        found.insert(found.end(), r->begin(), r->end());
      std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
        return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
      });
      json list = json::array();
      for (const auto& o : found)
        list.push_back(json{{"topic", o.topic}, {"partition", o.partition}, {"offset", o.offset},
                            {"metadata", o.metadata}});
      return json{{"offsets", list}}.dump();
    },
    [self](offsets_atom) -> caf::result<std::string> {
      if (!self->state.store)
        return make_error(errc::not_ready, "the offset store could not be opened");
      std::vector<std::tuple<std::string, std::string, int32_t, int64_t>> rows;
      for (const auto& group : self->state.store->list_groups())
        if (auto r = self->state.store->fetch(group))
          for (const auto& o : *r)
            rows.emplace_back(group, o.topic, o.partition, o.offset);
      for (const auto& [tp, root] : owned_shared(self, {})) {
        shared_offsets* e = nullptr;
        if (open_shared(self, root, tp, false, e) || !e->store)
          continue;  // metrics are best effort: a partition being handed on is skipped
        for (const auto& group : e->store->list_groups())
          if (auto o = e->store->committed(group, tp.topic, tp.partition))
            rows.emplace_back(group, tp.topic, tp.partition, *o);
      }
      std::sort(rows.begin(), rows.end());
      json list = json::array();
      for (const auto& [group, topic, partition, offset] : rows)
        list.push_back(json{{"group", group}, {"topic", topic}, {"partition", partition}, {"offset", offset}});
      return list.dump();
    },
    [self](offsets_atom, std::string& topic, int32_t partition) -> caf::result<std::string> {
      if (!self->state.store)
        return make_error(errc::not_ready, "the offset store could not be opened");
      std::vector<groups::group_offset> offsets;
      if (auto root = shared_root(self, topic, partition); !root.empty()) {
        // The offsets this broker wrote as the partition's owner: its own
        // epoch's store when open, else the newest epoch before the one
        // the image names now (the move's destination may already have
        // carried them forward and written more; the merge keeps the
        // higher of each).
        auto it = self->state.shared_stores.find(cluster::topic_partition{topic, partition});
        if (it != self->state.shared_stores.end() && it->second.writable && it->second.store) {
          offsets = it->second.store->offsets_for_partition(topic, partition);
        } else {
          auto [owner, epoch] = self->state.settings.shared->image->owner_and_epoch({topic, partition});
          auto below = owner == self->state.settings.shared->broker_id ? INT64_MAX : epoch;
          auto r = groups::read_newest_offsets(root, below);
          if (!r)
            return make_error(errc::storage_error, "offsets of " + topic + "-" + std::to_string(partition) + ": "
                                                     + r.err().message);
          if (*r)
            offsets = (*r)->offsets_for_partition(topic, partition);
        }
      } else {
        offsets = self->state.store->offsets_for_partition(topic, partition);
      }
      json list = json::array();
      for (const auto& o : offsets)
        list.push_back(json{{"group", o.group}, {"offset", o.offset}, {"metadata", o.metadata}});
      return list.dump();
    },
    [self](delete_atom, std::string& topic, int32_t count) {
      // A shared partition's offsets go with its directory (the I/O worker
      // removes it); only the open stores are forgotten here.
      for (auto it = self->state.shared_stores.begin(); it != self->state.shared_stores.end();)
        it = it->first.topic == topic ? self->state.shared_stores.erase(it) : std::next(it);
      if (!self->state.store)
        return;
      for (int32_t p = 0; p < count; ++p)
        if (auto r = self->state.store->remove_partition(topic, p); !r)
          log::get("broker")->error("groups.forget_failed topic={} partition={} error=\"{}\"", topic, p,
                                    r.err().message);
    },
    [self](merge_atom, std::string& topic, int32_t partition, std::string& offsets_json) -> caf::result<int32_t> {
      if (!self->state.store)
        return make_error(errc::not_ready, "the offset store could not be opened");
      auto list = json::parse(offsets_json, nullptr, false);
      if (!list.is_array())
        return make_error(errc::invalid_request, "offsets must be an array of {\"group\",\"offset\"}");
      for (const auto& o : list)
        if (!o.is_object() || !o.contains("group") || !o["group"].is_string() || !o.contains("offset")
            || !o["offset"].is_number_integer() || o["offset"].get<int64_t>() < 0
            || (o.contains("metadata") && !o["metadata"].is_null()
                && (!o["metadata"].is_string()
                    || o["metadata"].get_ref<const std::string&>().size() > groups::max_offset_metadata_bytes)))
          return make_error(errc::invalid_request, "offsets must be an array of {\"group\",\"offset\",\"metadata\"?}");
      const cluster::topic_partition tp{topic, partition};
      int32_t stored = 0;
      for (int again = 0;; ++again) {
        groups::offset_store* into = &*self->state.store;
        shared_offsets* shared = nullptr;
        if (auto root = shared_root(self, topic, partition); !root.empty()) {
          // The destination of a move in shared mode: into its own epoch's
          // store, which carried the source's forward already; the push adds
          // what the source acknowledged after that carry.
          if (auto e = open_shared(self, root, tp, true, shared))
            return e;
          into = &*shared->store;
        }
        stored = 0;
        for (const auto& o : list) {
          auto r = into->set_if_higher(o["group"].get<std::string>(), topic, partition, o["offset"].get<int64_t>(),
                                       o.contains("metadata") && o["metadata"].is_string()
                                         ? o["metadata"].get<std::string>()
                                         : "");
          if (!r)
            return make_error(errc::invalid_request, "merge: " + r.err().message);
          stored += *r ? 1 : 0;
        }
        if (!shared || self->state.settings.shared->holds(topic, partition, shared->epoch))
          break;
        // The destination's own confirm bumped the epoch meanwhile: merged
        // again at the new one (moved_on_here).
        if (again == max_epoch_rewrites || !moved_on_here(self, tp, shared->epoch))
          return ownership_lost(topic, partition);
      }
      log::get("groups")->info("offsets.merged topic={} partition={} groups={} stored={}", topic, partition,
                               list.size(), stored);
      return stored;
    },
    [self](delete_atom, std::string& group) -> caf::result<bool> {
      if (!self->state.store)
        return make_error(errc::not_ready, "the offset store could not be opened");
      if (auto v = groups::validate_group_id(group); !v)
        return from(v.err());
      // Refused while Kafka or HTTP members are in it, before anything is
      // deleted: a refused deletion deletes nothing.
      if (self->state.kafka.subscribed(group).has_members)
        return make_coded_error(fault::conflict, "non_empty_group",
                                "group " + group + " has Kafka members; they must leave first");
      bool held = false;
      auto it = self->state.groups.find(group);
      if (it != self->state.groups.end() && it->second.member_count() > 0)
        return make_coded_error(fault::conflict, "non_empty_group",
                                "group " + group + " has " + std::to_string(it->second.member_count())
                                  + " members; they must leave first");
      if (it != self->state.groups.end()) {
        self->state.groups.erase(it);
        held = true;
      }
      bool in_kafka = false;
      self->state.kafka.remove_if_empty(group, in_kafka);  // empty: checked above
      held = held || in_kafka;
      auto removed = self->state.store->remove_group(group);
      if (!removed)
        return make_error(errc::storage_error, "delete of group " + group + ": " + removed.err().message);
      size_t shared_removed = 0;
      bool shared_held = false;
      if (auto e = remove_shared(self, group, {}, {}, shared_removed, shared_held))
        return e;
      self->state.newest_generation.erase(group);
      return held || *removed || shared_held;
    },
    [self](delete_atom, std::string& group, std::string& topic,
           std::vector<int32_t>& partitions) -> caf::result<int32_t> {
      if (!self->state.store)
        return make_error(errc::not_ready, "the offset store could not be opened");
      if (auto v = groups::validate_group_id(group); !v)
        return from(v.err());
      size_t shared_removed = 0;
      bool shared_held = false;
      if (!topic.empty())
        if (auto e = remove_shared(self, group, topic, partitions, shared_removed, shared_held))
          return e;
      if (!self->state.store->has_group(group))
        return shared_held ? static_cast<int32_t>(shared_removed) : -1;
      auto removed = self->state.store->remove_offsets(group, topic, partitions);
      if (!removed)
        return make_error(errc::storage_error, "offset delete of group " + group + ": " + removed.err().message);
      return static_cast<int32_t>(*removed + shared_removed);
    },
    [self](list_atom) {
      json list = json::array();
      for (const auto& [id, g] : self->state.groups)
        list.push_back(json{{"group", id},
                            {"state", groups::to_string(g.phase())},
                            {"generation", g.current_generation().value},
                            {"members", g.member_count()}});
      json committed = json::array();
      for (const auto& g : committed_groups(self))
        committed.push_back(g);
      return json{{"groups", list}, {"committed", committed}}.dump();
    },
    [self](status_atom, std::string& group) {
      auto it = self->state.groups.find(group);
      if (it == self->state.groups.end())
        return json{{"state", "Dead"}, {"generation", 0}, {"members", json::array()}}.dump();
      json members = json::array();
      for (const auto& m : it->second.describe()) {
        json parts = json::array();
        for (const auto& [topic, ps] : m.assigned)
          for (auto p : ps)
            parts.push_back(json{{"topic", topic}, {"partition", p}});
        members.push_back(json{{"member_id", m.member_id},
                               {"topics", m.topics},
                               {"assignment", parts},
                               {"last_seen_ms", m.last_seen_ms}});
      }
      return json{{"state", groups::to_string(it->second.phase())},
                  {"generation", it->second.current_generation().value},
                  {"members", members}}
        .dump();
    },
    [self](kafka_group_atom, kafka::join_group_request& req, std::string& client_id, int16_t version,
           std::string& host) {
      auto rp = self->make_response_promise<kafka::join_group_response>();
      groups::kafka_membership::actions out;
      self->state.kafka.join(req, client_id, version, host,
                             [rp](kafka::join_group_response r) mutable { rp.deliver(std::move(r)); },
                             util::monotonic_ms(), out);
      run_all(out);
      return rp;
    },
    [self](kafka_group_atom, kafka::sync_group_request& req) {
      auto rp = self->make_response_promise<kafka::sync_group_response>();
      groups::kafka_membership::actions out;
      self->state.kafka.sync(req, [rp](kafka::sync_group_response r) mutable { rp.deliver(std::move(r)); },
                             util::monotonic_ms(), out);
      run_all(out);
      return rp;
    },
    [self](kafka_group_atom, kafka::heartbeat_request& req) {
      return self->state.kafka.heartbeat(req, util::monotonic_ms());
    },
    [self](kafka_group_atom, kafka::leave_group_request& req, int16_t version) {
      groups::kafka_membership::actions out;
      auto r = self->state.kafka.leave(req, version, util::monotonic_ms(), out);
      run_all(out);
      return r;
    },
    [self](kafka_group_atom, groups::kafka_commit_check& c) { return self->state.kafka.check_commit(c); },
    [self](kafka_group_atom, list_atom) { return self->state.kafka.list(); },
    [self](kafka_group_atom, status_atom, std::string& id) { return self->state.kafka.describe_group(id); },
    [self](kafka_group_atom, status_atom) {
      std::vector<kafka::described_group> out;
      for (const auto& listed : self->state.kafka.list())
        out.push_back(self->state.kafka.describe_group(listed.group_id));
      return out;
    },
    [self](kafka_group_atom, std::string& group) { return self->state.kafka.subscribed(group); },
    [self](kafka_group_atom, tick_atom) {
      groups::kafka_membership::actions out;
      self->state.kafka.tick(util::monotonic_ms(), out);
      run_all(out);
      self->delayed_send(self, kafka_tick, kafka_group_atom::value, tick_atom::value);
    },
    [self](tick_atom) {
      housekeeping(self);
      auto t = std::chrono::milliseconds(std::max<int64_t>(100, self->state.settings.session_timeout_ms / 4));
      self->delayed_send(self, t, tick_atom::value);
    },
    [self](status_atom) {
      json gs = json::object();
      for (const auto& [id, g] : self->state.groups)
        gs[id] = json{{"generation", g.current_generation().value},
                      {"members", g.member_count()},
                      {"phase", groups::to_string(g.phase())}};
      return json{{"groups", gs},
                  {"learned_partition_counts", self->state.learned_counts},
                  {"newest_generation_seen", self->state.newest_generation},
                  {"committed_groups", committed_groups(self).size()},
                  {"kafka_groups", self->state.kafka.describe()},
                  {"session_timeout_ms", self->state.settings.session_timeout_ms}}
        // Kafka member and client ids are a client's bytes: invalid UTF-8 becomes U+FFFD.
        .dump(-1, ' ', false, json::error_handler_t::replace);
    },
  };
}

}  // namespace

group_actor spawn_group_coordinator(caf::actor_system& sys, group_settings settings,
                                    std::shared_ptr<catalog_view> view, registry_actor reg,
                                    std::shared_ptr<groups::offset_store> opened) {
  auto g = sys.spawn<caf::detached>(coordinator_fn, std::move(settings), std::move(view), std::move(opened));
  enroll(reg, caf::actor_cast<caf::actor>(g), "group_coordinator", "group_coordinator");
  return g;
}

}  // namespace moonmq

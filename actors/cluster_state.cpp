#include "actors/cluster_state.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <tuple>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/broker_traits_view.hpp"
#include "actors/errors.hpp"
#include "cluster/ownership_table.hpp"
#include "cluster/topic_placement.hpp"
#include "config/dynamic.hpp"
#include "dataplane/topic_name.hpp"
#include "raft/types.hpp"
#include "util/clock.hpp"
#include "util/logging.hpp"

namespace moonmq {
namespace {

struct cluster_state_state {
  std::string self_id;
  std::shared_ptr<owner_view> view;
  raft_link raft;
  std::optional<broker_actor> broker;
  std::shared_ptr<catalog_view> catalog;
  std::optional<group_actor> groups;  ///< told to forget a deleted topic's offsets
  topic_placement_settings placement;
  /// Local topics whose import entry was proposed and not yet answered.
  std::set<std::string> importing;
  static inline const char* name = "cluster_state";
};

using self_ptr = cluster_state_actor::stateful_pointer<cluster_state_state>;

/// The Raft fence (docs/raft.md "Wiring"): an epoch is a Raft term. Below
/// the current term is stale; at the current term only the known leader
/// passes; above it this broker lags and lets it through (Raft will bring
/// the newer term here with the next heartbeat).
caf::result<int64_t> raft_observe(const raft_status& s, int64_t at, const std::string& controller) {
  auto held = " (highest epoch " + std::to_string(s.term) + " held by " + s.leader + ")";
  if (at < s.term)
    return make_coded_error(fault::conflict, "stale_epoch",
                            "controller epoch " + std::to_string(at) + " is older than the Raft term" + held);
  if (at == s.term && !s.leader.empty() && controller != s.leader)
    return make_coded_error(fault::conflict, "epoch_conflict",
                            controller + " is not the Raft leader of term " + std::to_string(at) + held);
  return std::max(at, s.term);
}

/// An owner change through the Raft log: answered once committed and
/// applied on this broker.
caf::result<bool> raft_set_owner(self_ptr self, std::string& topic, int32_t partition, std::string& owner,
                                 int64_t expect_epoch = 0, bool forward = true, bool expect_owner_fenced = false) {
  auto rp = self->make_response_promise<bool>();
  auto asked = expect_epoch == 0
                 ? self->request(self->state.raft.node, std::chrono::seconds(60), propose_atom::value, topic,
                                 partition, owner, forward)
                 : self->request(self->state.raft.node, std::chrono::seconds(60), propose_atom::value,
                                 owner_atom::value, topic, partition, owner, expect_epoch, forward,
                                 expect_owner_fenced);
  asked.then(
      [rp, topic, partition, owner](int64_t index, int64_t term) mutable {
        log::get("node")->info("ownership.changed topic={} partition={} owner={} raft_index={} term={}", topic,
                               partition, owner, index, term);
        rp.deliver(true);
      },
      [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

/// Makes the local copy of `name` match the image, then calls `done` with
/// its local count (or the error).
void adopt_local(self_ptr self, const std::string& name, std::function<void(int32_t)> done,
                 std::function<void(caf::error&)> fail) {
  auto& st = self->state;
  auto [topics, deleted] = st.view->topics_and_deleted();  // one image for the sync and the adopt
  auto it = topics->find(name);
  if (it == topics->end()) {
    auto e = make_error(errc::unknown_topic, "unknown topic " + name);
    fail(e);
    return;
  }
  // A stale copy of the name (deleted, or an earlier creation's) goes
  // first, in this actor's message order, so the adopt below never takes it
  // for the topic's own or stamps it.
  if (st.catalog)
    sync_local_topics(*st.broker, *st.catalog, *topics, *deleted, st.view->topic_defaults().values,
                      st.groups ? &*st.groups : nullptr);
  self->request(*st.broker, std::chrono::seconds(60), adopt_atom::value, name, it->second.partitions, it->second.config,
                it->second.created_at)
    .then([done](int32_t n) { done(n); }, [fail](caf::error& e) { fail(e); });
}

/// Every broker of the cluster in id order: the voters and the brokers that
/// registered at runtime (the applied image's members).
std::vector<std::string> cluster_brokers(self_ptr self) {
  auto ids = self->state.view->members();
  if (ids.empty())
    ids = self->state.raft.brokers;
  std::sort(ids.begin(), ids.end());
  return ids;
}

/// The brokers placement leaves out: the log's ExcludedBrokers (replacing
/// the configured list, as for the balance loop) from the dynamic
/// balancer settings `settings` (a non-object changes nothing).
std::set<std::string> excluded_brokers(self_ptr self, const nlohmann::json& settings) {
  config::autobalance_config base;
  base.excluded_brokers = self->state.placement.excluded;
  base = config::apply_balancer_settings(std::move(base), settings);
  return {base.excluded_brokers.begin(), base.excluded_brokers.end()};
}

/// The broker named owner of the partitions a create or growth proposed
/// here adds (TopicPlacement proposer, or spread falling back): this
/// broker, unless it is draining, removed, excluded (ExcludedBrokers) or
/// held slow by this broker's balance loop (docs/balancer.md "Slow
/// brokers"), then the first broker (in id order) that is none of those
/// nor fenced. When every broker is slow or excluded, slowness and then
/// exclusion are not looked at.
std::string placement_owner(self_ptr self) {
  auto& st = self->state;
  auto standing = st.view->standing();
  const auto slow = st.placement.traits ? st.placement.traits->slow() : std::set<std::string>{};
  const auto excluded = excluded_brokers(self, nlohmann::json::parse(*st.view->balancer(), nullptr, false));
  for (int leniency = 0; leniency < 3; ++leniency) {
    auto usable = [&](const std::string& id) {
      return !standing->draining.count(id) && !standing->removed.count(id) &&
             !(leniency < 1 && slow.count(id)) && !(leniency < 2 && excluded.count(id));
    };
    if (usable(st.self_id))
      return st.self_id;
    for (const auto& id : cluster_brokers(self))
      if (usable(id) && !standing->fenced.count(id))
        return id;
  }
  return st.self_id;
}

/// The reason place_spread gives when the mode is proposer (not logged: no
/// spread was asked for).
constexpr const char* proposer_mode = "TopicPlacement is proposer";

/// The owners a create or growth proposed here gives the partitions
/// [from, from + count) of `topic` (docs/metadata.md "Placing a new topic's
/// partitions"), with the brokers checked to read them; empty owners, and
/// why in `why_not`, when they all go to placement_owner() instead.
struct spread_placement {
  std::vector<std::string> owners;
  std::vector<std::string> checked;
  std::vector<std::string> candidates;  ///< the brokers that may get partitions now
  std::string why_not;
};

/// The brokers a placed entry must list as reading it, and those that may
/// get partitions now; `why_not` says which broker holds placement back.
struct broker_look {
  std::vector<std::string> checked;
  std::vector<cluster::placement_candidate> candidates;
  std::string why_not;
};

broker_look look_at_brokers(self_ptr self, const nlohmann::json& settings) {
  auto& st = self->state;
  broker_look out;
  if (!st.placement.traits) {
    out.why_not = "no broker traits are kept here";
    return out;
  }
  auto traits = st.placement.traits->get();
  const auto slow = st.placement.traits->slow();  // this broker's balance loop's verdicts
  auto standing = st.view->standing();
  const std::set<std::string> excluded = excluded_brokers(self, settings);
  const auto& voters = st.raft.brokers;
  auto now = util::monotonic_ms();
  // Every broker that applies the entry must read `owners`: every voter
  // (a removed voter still applies the log) and every registered broker
  // that is not removed (a removed one is no longer replicated to).
  for (const auto& id : cluster_brokers(self)) {
    bool voter = std::find(voters.begin(), voters.end(), id) != voters.end();
    if (standing->removed.count(id) && !voter)
      continue;
    auto t = traits.find(id);
    if (t == traits.end() || t->second.topic_placement < cluster::topic_placement_version) {
      out.why_not = "broker " + id + (t == traits.end() ? " has not answered a load report here yet"
                                                        : " runs a version that does not read placed topic entries");
      out.candidates.clear();
      return out;
    }
    out.checked.push_back(id);
    // Candidates: heard from lately (a broker that stopped answering may be
    // dead before it is fenced), neither removed, draining, fenced,
    // excluded nor held slow (docs/balancer.md "Slow brokers").
    bool fresh = t->second.heard_ms < 0 || now - t->second.heard_ms <= st.placement.fresh_ms;
    if (fresh && !standing->removed.count(id) && !standing->draining.count(id) && !standing->fenced.count(id)
        && !excluded.count(id) && !slow.count(id))
      out.candidates.push_back({id, t->second.rack, t->second.weight, 0, 0});
  }
  return out;
}

/// Where `count` new partitions of `topic` go under the dynamic settings
/// `settings` (the metadata log's), given `look` (look_at_brokers of the
/// same settings).
spread_placement place_spread(self_ptr self, const std::string& topic, int32_t count,
                              const nlohmann::json& settings, broker_look look) {
  auto& st = self->state;
  spread_placement out;
  if (config::topic_placement_with(st.placement.configured, settings) != "spread") {
    out.why_not = proposer_mode;
    return out;
  }
  out.checked = std::move(look.checked);
  out.why_not = std::move(look.why_not);
  auto candidates = std::move(look.candidates);
  if (out.why_not.empty() && candidates.empty())
    out.why_not = "no broker is answering and neither draining, fenced, excluded nor slow";
  if (!out.why_not.empty())
    return out;
  for (const auto& c : candidates)
    out.candidates.push_back(c.id);
  if (count < 1)
    return out;
  std::map<std::string, std::pair<int64_t, int32_t>> held;  // broker -> (partitions, of this topic)
  auto owners = st.view->get();
  for (const auto& [tp, owner] : *owners) {
    auto& h = held[owner];
    ++h.first;
    h.second += tp.topic == topic;
  }
  for (auto& c : candidates)
    if (auto h = held.find(c.id); h != held.end())
      std::tie(c.partitions, c.of_topic) = h->second;
  out.owners = cluster::place_partitions(std::move(candidates), count);
  return out;
}

/// The same under the settings the image holds now.
spread_placement place_spread(self_ptr self, const std::string& topic, int32_t count) {
  auto settings = nlohmann::json::parse(*self->state.view->balancer(), nullptr, false);
  auto look = look_at_brokers(self, settings);
  return place_spread(self, topic, count, settings, std::move(look));
}

/// "b1:2,b2:2,b3:4": the partitions [from, to) of `topic` per owner in the
/// applied image.
std::string owner_counts(self_ptr self, const std::string& topic, int32_t from, int32_t to) {
  std::map<std::string, int> per_broker;
  auto owners = self->state.view->get();
  for (int32_t p = from; p < to; ++p)
    if (auto it = owners->find(cluster::topic_partition{topic, p}); it != owners->end())
      ++per_broker[it->second];
  std::string out;
  for (const auto& [id, n] : per_broker)
    out += (out.empty() ? "" : ",") + id + ":" + std::to_string(n);
  return out;
}

/// A broker's row for the admin API, read from the applied image.
nlohmann::json broker_row(self_ptr self, const std::string& id) {
  auto standing = self->state.view->standing();
  auto owners = self->state.view->get();
  auto owned = std::count_if(owners->begin(), owners->end(), [&](const auto& row) { return row.second == id; });
  std::string state = standing->removed.count(id) ? "removed" : standing->draining.count(id) ? "draining" : "active";
  return {{"id", id}, {"state", state}, {"fenced", standing->fenced.count(id) != 0}, {"partitions", owned}};
}

/// drain / undrain / remove of `broker` through the Raft log, answered with
/// the broker's row once applied here.
caf::result<std::string> raft_change_broker(self_ptr self, const std::string& broker, const std::string& change) {
  auto& st = self->state;
  const auto ids = cluster_brokers(self);
  if (std::find(ids.begin(), ids.end(), broker) == ids.end())
    return make_coded_error(fault::not_found, "unknown_broker", "no broker " + broker + " in this cluster");
  auto row = broker_row(self, broker);
  auto state = row["state"].get<std::string>();
  if (state == "removed" && change != "remove")
    return make_coded_error(fault::conflict, "broker_removed", "broker " + broker + " was removed from the cluster");
  if (change == "remove" && state == "active")
    return make_coded_error(fault::conflict, "not_draining",
                            "broker " + broker + " is not draining: drain it first (POST /admin/brokers/" + broker
                              + "/drain), then remove it once it owns no partition");
  if (change == "remove" && state == "draining" && row["partitions"].get<int64_t>() > 0)
    return make_coded_error(fault::conflict, "broker_not_empty", "broker " + broker + " still owns "
                                                       + std::to_string(row["partitions"].get<int64_t>())
                                                       + " partition(s); removal waits until the drain has moved them");
  auto rp = self->make_response_promise<std::string>();
  self->request(st.raft.node, std::chrono::seconds(60), propose_atom::value, broker_atom::value, broker, change, true)
    .then(
      [self, rp, broker, change](int64_t index, int64_t) mutable {
        auto after = broker_row(self, broker);
        // The log decided at apply time: a partition handed to the broker
        // after the check above keeps it in the cluster.
        if (change == "remove" && after["state"] == "active") {
          rp.deliver(make_coded_error(fault::conflict, "not_draining",
                                      "broker " + broker + " was not draining when the removal was applied"));
          return;
        }
        if (change == "remove" && after["state"] != "removed") {
          rp.deliver(make_coded_error(fault::conflict, "broker_not_empty",
                                      "broker " + broker + " owned partitions when the removal was applied"));
          return;
        }
        log::get("node")->info("broker.{} broker={} raft_index={}", change, broker, index);
        rp.deliver(after.dump());
      },
      [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

/// A `topic` entry through the Raft log (create or grow), answered with the
/// entry's index once applied here. `place`: its partitions may be spread
/// (docs/metadata.md "Placing a new topic's partitions"); an import of a
/// local topic keeps them where their data is. `named`: the owner of each
/// new partition, as a Kafka CreateTopics assignment gives them (refused
/// with conflict placement_not_readable while a broker may not read them).
void propose_topic(self_ptr self, const std::string& name, int32_t partitions, const std::string& config, bool grow,
                   std::function<void(int64_t)> applied, std::function<void(caf::error&)> fail, bool place = true,
                   std::vector<std::string> named = {}) {
  auto& st = self->state;
  auto on_ok = [applied](int64_t index, int64_t) { applied(index); };
  auto on_err = [fail](caf::error& e) { fail(e); };
  int32_t first = 0;
  if (grow) {
    auto topics = st.view->topics();
    auto it = topics->find(name);
    first = it == topics->end() ? partitions : it->second.partitions;
  }
  auto spread = place && partitions > first && named.empty() ? place_spread(self, name, partitions - first)
                                                             : spread_placement{};
  if (!named.empty()) {
    auto look = look_at_brokers(self, nlohmann::json::parse(*st.view->balancer(), nullptr, false));
    if (!look.why_not.empty()) {
      auto e = make_coded_error(fault::conflict, "placement_not_readable",
                                "partitions can be placed by name only once every broker reads placed topic "
                                "entries: " + look.why_not);
      fail(e);
      return;
    }
    spread.owners = std::move(named);
    spread.checked = std::move(look.checked);
  }
  if (!spread.owners.empty()) {
    raft::topic_entry t{name, partitions, raft::node_id{placement_owner(self)}, grow ? "" : config, grow};
    for (const auto& o : spread.owners)
      t.owners.emplace_back(o);
    for (const auto& c : spread.checked)
      t.checked.emplace_back(c);
    t.first = first;
    // Logged as applied: a leader of an earlier version commits the entry
    // without its owners, and a broker that registered after the look
    // makes every broker apply it as all on `owner`.
    auto wanted = spread.owners;
    auto placed = [self, applied, name, first, partitions, wanted](int64_t index, int64_t) {
      log::get("node")->info("topic.placed topic={} first={} partitions={} owners={} raft_index={}", name, first,
                             partitions, owner_counts(self, name, first, partitions), index);
      auto owners = self->state.view->get();
      for (int32_t p = first; p < partitions; ++p)
        if (auto it = owners->find(cluster::topic_partition{name, p});
            it != owners->end() && it->second != wanted[static_cast<size_t>(p - first)]) {
          log::get("node")->warn("topic.placement_not_applied topic={} partition={} owner={} wanted={} "
                                 "msg=\"the log gave the partition another owner than placed (a broker "
                                 "that may not read placed entries registered meanwhile, or a racing "
                                 "growth); the balance loop or a move spreads them\"",
                                 name, p, it->second, wanted[static_cast<size_t>(p - first)]);
          break;
        }
      applied(index);
    };
    self->request(st.raft.node, std::chrono::seconds(60), propose_atom::value, create_atom::value,
                  raft::to_json(raft::entry_payload{std::move(t)}).dump(), true)
      .then(placed, on_err);
    return;
  }
  if (!spread.why_not.empty() && spread.why_not != proposer_mode)
    log::get("node")->info("topic.placed_on_proposer topic={} reason=\"{}\"", name, spread.why_not);
  if (grow)
    self->request(st.raft.node, std::chrono::seconds(60), propose_atom::value, grow_atom::value, name, partitions,
                  placement_owner(self), true)
      .then(on_ok, on_err);
  else
    self->request(st.raft.node, std::chrono::seconds(60), propose_atom::value, create_atom::value, name, partitions,
                  placement_owner(self), config, true)
      .then(on_ok, on_err);
}

caf::result<bool> raft_create_topic(self_ptr self, std::string& name, int32_t partitions, std::string& config,
                                    std::vector<std::string> owners = {}) {
  auto& st = self->state;
  if (!st.broker)
    return make_error(errc::not_ready, "no broker actor to create the local copy");
  if (!owners.empty() && !st.view->topics()->count(name)) {  // an existing topic answers "existed" below
    if (static_cast<int64_t>(owners.size()) != partitions)
      return make_error(errc::invalid_request, "one owner per partition: " + std::to_string(owners.size())
                                                 + " owners for " + std::to_string(partitions) + " partitions");
    auto members = cluster_brokers(self);
    auto standing = st.view->standing();
    for (size_t i = 0; i < owners.size(); ++i)
      if (std::find(members.begin(), members.end(), owners[i]) == members.end() || standing->removed.count(owners[i]))
        return make_error(errc::invalid_request, "owners[" + std::to_string(i) + "]: " + owners[i]
                                                   + " is not a broker of this cluster (or was removed)");
  }
  if (auto why = dataplane::check_topic_name(name); !why.empty())
    return make_error(errc::invalid_request, why);
  if (partitions < 1 || partitions > dataplane::max_partitions)
    return make_error(errc::invalid_request, "partitions must be between 1 and "
                                               + std::to_string(dataplane::max_partitions) + ", got "
                                               + std::to_string(partitions));
  if (!config.empty()) {
    dataplane::topic_config cfg;
    if (auto why = dataplane::parse_topic_config(config, cfg); !why.empty())
      return make_error(errc::invalid_request, why);
  }
  auto rp = self->make_response_promise<bool>();
  auto fail = [rp](caf::error& e) mutable { rp.deliver(std::move(e)); };
  // Answered from the image: a topic the log holds with another count is
  // refused; with this count it is "existed" once the local copy is there.
  auto finish = [self, rp, name, partitions, fail](bool created) mutable {
    auto topics = self->state.view->topics();
    auto it = topics->find(name);
    if (it != topics->end() && it->second.partitions != partitions && !created) {
      rp.deliver(make_error(errc::invalid_request, "topic " + name + " already exists with "
                                                     + std::to_string(it->second.partitions) + " partitions"));
      return;
    }
    adopt_local(self, name, [rp, created](int32_t) mutable { rp.deliver(created); }, fail);
  };
  auto topics = st.view->topics();
  if (topics->count(name) != 0) {
    finish(false);
    return rp;
  }
  propose_topic(self, name, partitions, config, false, [self, name, finish](int64_t index) mutable {
    auto now = self->state.view->topics();
    auto it = now->find(name);
    bool created = it != now->end() && it->second.created_at == index;
    if (created)
      log::get("node")->info("topic.created topic={} raft_index={}", name, index);
    finish(created);
  }, fail, true, std::move(owners));
  return rp;
}

caf::result<int32_t> raft_grow_topic(self_ptr self, std::string& name, int32_t count) {
  auto& st = self->state;
  if (!st.broker)
    return make_error(errc::not_ready, "no broker actor to grow the local copy");
  auto topics = st.view->topics();
  auto it = topics->find(name);
  if (it == topics->end())
    return make_error(errc::unknown_topic, "unknown topic " + name);
  if (count <= it->second.partitions)
    return make_error(errc::invalid_request, "count must be larger than the current "
                                               + std::to_string(it->second.partitions) + " partitions");
  if (count > dataplane::max_partitions)
    return make_error(errc::invalid_request, "count must be at most " + std::to_string(dataplane::max_partitions));
  auto rp = self->make_response_promise<int32_t>();
  auto fail = [rp](caf::error& e) mutable { rp.deliver(std::move(e)); };
  propose_topic(self, name, count, it->second.config, true, [self, rp, name, fail](int64_t index) mutable {
    log::get("node")->info("topic.grown topic={} raft_index={}", name, index);
    adopt_local(self, name, [rp](int32_t n) mutable { rp.deliver(n); }, fail);
  }, fail);
  return rp;
}

caf::result<std::string> raft_change_topic_config(self_ptr self, const std::string& name,
                                                  const dataplane::topic_config_changes& changes, bool replace) {
  auto& st = self->state;
  if (!st.broker)
    return make_error(errc::not_ready, "no broker actor to change the local copy");
  auto topics = st.view->topics();
  auto it = topics->find(name);
  if (it == topics->end())
    return make_error(errc::unknown_topic, "unknown topic " + name);
  // A replace carries the whole new config; a merge only its patch, merged
  // at apply time so that changes of other keys meanwhile stay.
  std::string text;
  auto why = replace ? dataplane::change_topic_config(it->second.config, changes, true, text)
                     : dataplane::topic_config_patch(changes, text);
  if (!why.empty())
    return make_error(errc::invalid_request, why);
  auto rp = self->make_response_promise<std::string>();
  auto fail = [rp](caf::error& e) mutable { rp.deliver(std::move(e)); };
  self->request(st.raft.node, std::chrono::seconds(60), propose_atom::value, config_atom::value, name,
                it->second.partitions, st.self_id, text, !replace, true)
    .then(
      [self, rp, name, fail](int64_t index, int64_t) mutable {
        // The answer is the config as applied here (a merge's result).
        auto now = self->state.view->topics();
        auto t = now->find(name);
        auto config = t == now->end() ? std::string{} : t->second.config;
        log::get("node")->info("topic.config_changed topic={} config={} raft_index={}", name, config, index);
        adopt_local(self, name, [rp, config](int32_t) mutable { rp.deliver(config); }, fail);
      },
      fail);
  return rp;
}

caf::result<bool> raft_delete_topic(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto topics = st.view->topics();
  auto it = topics->find(name);
  if (it == topics->end())
    return make_error(errc::unknown_topic, "unknown topic " + name);
  // Checked here for a clear answer, and again by the log in log order (a
  // move created meanwhile refuses the deletion the same way).
  auto moves = st.view->moves();  // held: a range-for over *view->moves() would free it mid-loop
  for (const auto& [id, m] : *moves)
    if (m.tp.topic == name && !raft::finished_move_state(m.state))
      return make_coded_error(fault::conflict, "topic_moving",
                              "topic " + name + " has move " + id + " of partition " + std::to_string(m.tp.partition)
                                + " in state " + m.state + "; cancel it or wait for it to end, then delete again");
  auto rp = self->make_response_promise<bool>();
  self->request(st.raft.node, std::chrono::seconds(60), propose_atom::value, delete_atom::value, name,
                it->second.partitions, st.self_id, true)
    .then(
      [rp, name](int64_t index, int64_t) mutable {
        log::get("node")->info("topic.deleted topic={} raft_index={}", name, index);
        rp.deliver(true);
      },
      [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

/// How often local topics the metadata log does not know are looked for.
constexpr std::chrono::milliseconds import_every{2000};

/// Imports, once, every local topic the metadata log does not hold (a topic
/// this broker created before its topics went through the log): a create
/// entry naming this broker owner of the partitions that have no owner row
/// yet. Rows that exist (moved partitions) are kept; of two brokers holding
/// the same legacy topic the first entry in log order wins. Runs while a
/// Raft leader is known, until nothing is left to import.
void import_local_topics(self_ptr self) {
  auto& st = self->state;
  if (!st.catalog)
    return;
  auto status = st.raft.view->get();
  auto local = st.catalog->get();
  // Only copies the log never held: not a copy of a deleted topic, nor one
  // stamped by an earlier creation (cluster/topic_sync.hpp).
  auto [topics, deleted] = st.view->topics_and_deleted();
  auto plan = cluster::plan_topic_sync(local_copies(*local), log_copies(*topics, st.view->topic_defaults().values),
                                       *deleted);
  bool missing = !plan.import.empty();
  for (const auto& name : plan.import) {
    const auto& t = local->at(name);
    if (status.leader.empty() || st.importing.count(name) != 0)
      continue;
    st.importing.insert(name);
    auto n = static_cast<int32_t>(t.partitions.size());
    log::get("node")->info("topic.importing topic={} partitions={}", name, n);
    // The whole config the copy holds: its catalogue keeps resolved values
    // only, so a key set on the topic to the built-in value (retention.ms
    // -1: keep forever) cannot be told from a default, and a cluster default
    // must never shorten what such a topic keeps.
    propose_topic(self, name, n, dataplane::topic_config_text(t.config), false,
                  [self, name](int64_t index) {
                    self->state.importing.erase(name);
                    log::get("node")->info("topic.imported topic={} raft_index={}", name, index);
                  },
                  [self, name](caf::error& e) {
                    self->state.importing.erase(name);
                    log::get("node")->warn("topic.import_retry topic={} error=\"{}\"", name, message_of(e));
                  },
                  false);  // never spread: the partitions' data is here
  }
  if (missing)
    self->delayed_send(self, import_every, tick_atom::value);
}

cluster_state_actor::behavior_type cluster_state_fn(self_ptr self, std::string self_id,
                                                    std::shared_ptr<owner_view> view, raft_link raft,
                                                    std::optional<broker_actor> broker,
                                                    std::shared_ptr<catalog_view> catalog,
                                                    std::optional<group_actor> groups,
                                                    topic_placement_settings placement) {
  auto& init = self->state;
  init.placement = std::move(placement);
  init.broker = std::move(broker);
  init.catalog = std::move(catalog);
  init.groups = std::move(groups);
  init.self_id = std::move(self_id);
  init.view = std::move(view);
  init.raft = std::move(raft);
  // Legacy topics (created before topics went through the log) are imported.
  self->delayed_send(self, import_every, tick_atom::value);
  return {
    [self](claim_atom) -> caf::result<int64_t> {
      auto& st = self->state;
      auto s = st.raft.view->get();
      if (s.is_leader)
        return s.term;
      return make_coded_error(fault::conflict, "not_controller",
                              "broker " + st.self_id + " is not the Raft leader (term " + std::to_string(s.term)
                                + ", leader " + (s.leader.empty() ? std::string("unknown") : s.leader) + ")");
    },
    [self](observe_atom, int64_t at, std::string& controller) -> caf::result<int64_t> {
      if (at <= 0)
        return make_coded_error(fault::invalid, "invalid_request", "X-Controller-Epoch must be a positive integer");
      return raft_observe(self->state.raft.view->get(), at, controller);
    },
    [self](owner_atom, std::string& topic, int32_t partition, std::string& owner, int64_t) -> caf::result<bool> {
      return raft_set_owner(self, topic, partition, owner);
    },
    [self](owner_atom, std::string& topic, int32_t partition, std::string& owner, int64_t,
           int64_t expect_epoch) -> caf::result<bool> {
      if (expect_epoch < 1)
        return make_coded_error(fault::invalid, "invalid_request", "a conditional owner change expects an epoch >= 1");
      return raft_set_owner(self, topic, partition, owner, expect_epoch);
    },
    [self](owner_atom, std::string& topic, int32_t partition, std::string& owner, int64_t, int64_t expect_epoch,
           bool forward) -> caf::result<bool> {
      if (expect_epoch < 1)
        return make_coded_error(fault::invalid, "invalid_request", "a conditional owner change expects an epoch >= 1");
      // Only the shared-storage failover proposes unforwarded owner changes:
      // they also expect the old owner still fenced (cluster_state.hpp).
      return raft_set_owner(self, topic, partition, owner, expect_epoch, forward, !forward);
    },
    [self](move_atom, std::string& payload) -> caf::result<bool> {
      auto rp = self->make_response_promise<bool>();
      self->request(self->state.raft.node, std::chrono::seconds(60), propose_atom::value, move_atom::value, payload,
                    true)
        .then([rp](int64_t, int64_t) mutable { rp.deliver(true); },
              [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
    [self](get_atom) -> caf::result<int64_t, std::string> {
      auto s = self->state.raft.view->get();
      return caf::make_result(s.term, s.leader);
    },
    [self](tick_atom) { import_local_topics(self); },
    [self](broker_atom) -> caf::result<std::string> {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& id : cluster_brokers(self))
        rows.push_back(broker_row(self, id));
      return rows.dump();
    },
    [self](broker_atom, std::string& id, std::string& change) -> caf::result<std::string> {
      return raft_change_broker(self, id, change);
    },
    [self](config_atom, std::string& patch) -> caf::result<std::string> {
      auto& st = self->state;
      auto parsed = nlohmann::json::parse(patch, nullptr, false);
      if (auto why = config::check_balancer_patch(parsed); !why.empty())
        return make_error(errc::invalid_request, why);
      auto rp = self->make_response_promise<std::string>();
      self->request(st.raft.node, std::chrono::seconds(60), propose_atom::value, config_atom::value, parsed.dump(),
                    true)
        .then(
          [self, rp](int64_t index, int64_t) mutable {
            auto merged = self->state.view->balancer();
            log::get("node")->info("balancer.settings_changed raft_index={} settings={}", index, *merged);
            rp.deliver(*merged);
          },
          [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
    [self](create_atom, std::string& name, int32_t partitions, std::string& config) -> caf::result<bool> {
      return raft_create_topic(self, name, partitions, config);
    },
    [self](create_atom, std::string& name, int32_t partitions, std::string& config,
           std::vector<std::string>& owners) -> caf::result<bool> {
      return raft_create_topic(self, name, partitions, config, std::move(owners));
    },
    [self](grow_atom, std::string& name, int32_t count) -> caf::result<int32_t> {
      return raft_grow_topic(self, name, count);
    },
    [self](delete_atom, std::string& name) -> caf::result<bool> { return raft_delete_topic(self, name); },
    [self](config_atom, std::string& name, dataplane::topic_config_changes& changes,
           bool replace) -> caf::result<std::string> {
      return raft_change_topic_config(self, name, changes, replace);
    },
    [self](status_atom) {
      auto& st = self->state;
      nlohmann::json j{{"broker_id", st.self_id}};
      auto s = st.raft.view->get();
      j["controller"] = {{"epoch", s.term}, {"id", s.leader}, {"source", "raft"}};
      nlohmann::json rows = nlohmann::json::array();
      auto owners = st.view->get();
      for (const auto& [tp, owner] : *owners)
        rows.push_back({{"topic", tp.topic}, {"partition", tp.partition}, {"owner", owner}});
      j["owners"] = rows;
      // Where a create here would place its partitions now, and what each
      // broker said of itself (docs/metadata.md "Placing a new topic's partitions").
      auto settings = nlohmann::json::parse(*st.view->balancer(), nullptr, false);
      auto look = look_at_brokers(self, settings);
      const bool readable = look.why_not.empty();
      auto now = place_spread(self, "", 0, settings, std::move(look));  // count 0: only whether a create would spread
      auto mode = config::topic_placement_with(st.placement.configured, settings);
      nlohmann::json brokers = nlohmann::json::object();
      if (st.placement.traits) {
        const auto slow = st.placement.traits->slow();
        for (const auto& [id, t] : st.placement.traits->get())
          brokers[id] = {{"rack", t.rack},
                         {"weight", t.weight},
                         {"topic_placement", t.topic_placement},
                         {"slow", slow.count(id) > 0},
                         {"age_ms", t.heard_ms < 0 ? 0 : util::monotonic_ms() - t.heard_ms}};
      }
      j["topic_placement"] = {{"mode", mode},
                              {"readable", readable},
                              {"spreads", now.why_not.empty()},
                              {"reason", now.why_not},
                              {"candidates", now.candidates},
                              {"brokers", std::move(brokers)}};
      return j.dump();
    },
  };
}

}  // namespace

std::string check_legacy_cluster_state(const std::string& data_dir) {
  std::error_code ec;
  auto path = std::filesystem::path{data_dir} / cluster::ownership_table::file_name;
  if (!std::filesystem::exists(path, ec))
    return {};
  auto owners = cluster::ownership_table::open(data_dir);
  if (!owners)
    return owners.err().message;
  if (owners->snapshot().empty())
    return {};
  return path.string() + " names " + std::to_string(owners->snapshot().size())
         + " partition owner(s) from cluster mode without Raft, which is retired: owners now live in the Raft "
           "metadata log only. Start this broker on a clean DataDir, or move every partition back to the broker "
           "that created its topic and delete the file (docs/metadata.md \"Upgrading\")";
}

cluster_state_actor spawn_cluster_state(caf::actor_system& sys, std::string self_id, std::shared_ptr<owner_view> view,
                                        registry_actor reg, raft_link raft, std::optional<broker_actor> broker,
                                        std::shared_ptr<catalog_view> catalog, std::optional<group_actor> groups,
                                        topic_placement_settings placement) {
  auto a = sys.spawn<caf::detached>(cluster_state_fn, std::move(self_id), std::move(view), std::move(raft),
                                    std::move(broker), std::move(catalog), std::move(groups), std::move(placement));
  enroll(reg, caf::actor_cast<caf::actor>(a), "cluster_state", "cluster_state");
  return a;
}

}  // namespace moonmq

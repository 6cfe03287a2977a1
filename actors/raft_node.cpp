#include "actors/raft_node.hpp"

#include <random>
#include <set>

#include "actors/cluster_state.hpp"
#include "actors/raft_node_impl.hpp"
#include "raft/core_lease.hpp"
#include "raft/messages.hpp"

namespace moonmq {

using namespace raft_node_impl;

void publish_image(owner_view& view, const raft::ownership_state& table) {
  auto map = std::make_shared<owner_map>();
  for (const auto& [tp, owner] : table.owners())
    (*map)[cluster::topic_partition{tp.topic, tp.partition}] = owner.str();
  auto topics = std::make_shared<topic_image>();
  for (const auto& [name, t] : table.topics())
    (*topics)[name] = topic_info{t.partitions, t.config, static_cast<int64_t>(t.created_at.value)};
  auto standing = std::make_shared<broker_standing>();
  for (const auto& id : table.fenced())
    standing->fenced.insert(id.str());
  for (const auto& id : table.draining())
    standing->draining.insert(id.str());
  for (const auto& id : table.removed())
    standing->removed.insert(id.str());
  for (const auto& [id, e] : table.registered())
    standing->registered[id.str()] = cluster::broker_endpoints{e.cluster, e.client, e.kafka};
  for (const auto& [id, n] : table.kafka_node_ids())
    standing->kafka_node_ids[id.str()] = n;
  auto epochs = std::make_shared<epoch_map>();
  for (const auto& [tp, epoch] : table.epochs())
    (*epochs)[cluster::topic_partition{tp.topic, tp.partition}] = static_cast<int64_t>(epoch);
  auto moves = std::make_shared<move_image>();
  for (const auto& [id, m] : table.moves())
    (*moves)[id] = move_info{{m.topic, m.partition}, m.from.str(), m.to.str(), m.state,
                             m.error, m.end, m.log_start, static_cast<int64_t>(m.epoch),
                             static_cast<int64_t>(m.updated_at.value)};
  auto deleted = std::make_shared<deleted_topic_map>();
  for (const auto& [name, at] : table.deleted_topics())
    (*deleted)[name] = static_cast<int64_t>(at.value);
  view.set(std::move(map), std::move(topics), std::make_shared<const std::string>(table.balancer()),
           std::move(standing), std::move(epochs), std::move(moves), std::move(deleted));
  // Copied only when a txn entry or a snapshot changed them since the last publish.
  if (auto at = static_cast<int64_t>(table.transactions_changed_at().value); view.transactions_changed_at() != at)
    view.set_transactions(std::make_shared<const txn_image>(table.transactions()), at);
}

namespace {

/// Feeds the core's position to the lease and publishes its deadline to the
/// gate: after every step and tick (so a lost leadership or a new term ends
/// the lease before the batch's fsync) and at the end of every drain (once
/// what it applied is published). A broken store ends it.
void update_lease(self_ptr self) {
  auto& st = self->state;
  if (!st.lease)
    return;
  if (!st.broken.empty() || !st.core)
    st.lease->end();
  else
    st.lease->update(raft::lease_position(*st.core, st.published_applied));
  st.gate->publish(st.lease->deadline());
}

void publish_status(self_ptr self) {
  auto& st = self->state;
  const auto& core = *st.core;
  raft_status s;
  s.term = static_cast<int64_t>(core.current_term().value);
  s.leader = core.leader().str();
  s.role = raft::to_string(core.current_role());
  s.is_leader = core.current_role() == raft::role::leader;
  s.commit_index = static_cast<int64_t>(core.commit_index().value);
  s.applied_index = static_cast<int64_t>(core.applied_index().value);
  if (s.is_leader)
    for (const auto& [id, peer] : st.peers)
      if (auto silent = core.silent_ticks(raft::node_id{id}))
        s.silent_ms[id] = static_cast<int64_t>(*silent) * static_cast<int64_t>(st.timing.tick.count());
  s.lease_deadline_ns = st.gate->deadline_ns();
  s.lease_ms = st.settings.lease_ms;
  if (core.current_role() == raft::role::candidate && st.last_role != raft::role::candidate) {
    ++st.elections;
    st.probe->election_started();
  }
  if (s.is_leader && st.last_role != raft::role::leader)
    logger()->info("raft.leader broker={} term={}", st.settings.broker_id, s.term);
  else if (!s.is_leader && st.last_role == raft::role::leader)
    logger()->warn("raft.stepped_down broker={} term={} leader={}", st.settings.broker_id, s.term,
                   s.leader.empty() ? "unknown" : s.leader);
  st.last_role = core.current_role();
  st.probe->status(s.term, s.is_leader, s.commit_index, st.gate->valid_now());
  st.view->set(std::move(s));
}

/// Sends one message as a one-way POST. Called only after its batch was saved.
void send(self_ptr self, raft::message& m) {
  auto& st = self->state;
  auto it = st.peers.find(m.to.str());
  if (it == st.peers.end())
    return;
  auto& p = it->second;
  // Stamped and recorded before the transport has it: an earlier send time
  // can only shorten a lease (the leader's from its requests, a follower's
  // from the answer the leader echoes back).
  if (st.lease) {
    auto now = clock_type::now();
    if (!st.lease->valid(now) || st.core->state().fenced().count(m.to))
      raft::withhold_echo(m);
    if (auto seq = raft::request_seq(m); seq != 0)
      st.lease->request_sent(seq, now);
    raft::stamp_answer(m, *st.lease, now);
  }
  if (p.in_flight->load() >= max_in_flight) {
    ++st.dropped;
    return;
  }
  ++*p.in_flight;
  ++st.sent;
  auto timeout = std::chrono::milliseconds(st.settings.election_timeout_ms);
  transport::call_peer(p.peer, "POST", raft::route_for(m), raft::to_json(m).dump(), 0, "", timeout,
                       [in_flight = p.in_flight, reachable = p.reachable, id = p.peer.id](int status, nlohmann::json,
                                                                                          std::string error) {
                         --*in_flight;
                         bool ok = status == 202;
                         if (reachable->exchange(ok) != ok) {
                           if (ok)
                             logger()->info("raft.peer_reachable peer={}", id);
                           else
                             logger()->warn("raft.peer_unreachable peer={} status={} error=\"{}\"", id, status, error);
                         }
                       });
}

/// moonmq_cluster_offline_partitions: partitions whose owner is fenced.
void count_offline(self_ptr self) {
  auto& st = self->state;
  const auto& table = st.core->state();
  size_t offline = 0;
  if (!table.fenced().empty())
    for (const auto& [tp, owner] : table.owners())
      offline += table.fenced().count(owner);
  st.probe->offline_partitions(offline);
}

/// Answers every pending proposal with unavailable raft_failed (the store failed:
/// nothing more will be applied here until a restart).
void fail_pending(self_ptr self) {
  auto& st = self->state;
  auto why = "Raft on broker " + st.settings.broker_id + " stopped: " + st.broken;
  for (auto& w : st.waiters)
    w.rp.deliver(coded(fault::unavailable, "raft_failed", why));
  st.waiters.clear();
  for (auto& [id, f] : st.forwards)
    f.rp.deliver(coded(fault::unavailable, "raft_failed", why));
  st.forwards.clear();
  for (auto& f : st.parked)
    f.rp.deliver(coded(fault::unavailable, "raft_failed", why));
  st.parked.clear();
}

/// Persists, sends and applies every pending batch (docs/raft.md
/// "Persistence contract"). A failed save stops this node's participation:
/// continuing could acknowledge state that is not durable.
void drain_ready(self_ptr self) {
  auto& st = self->state;
  bool applied = false;
  bool brokers_applied = false;
  while (st.broken.empty() && st.core->has_ready()) {
    auto rd = st.core->ready();
    if (auto saved = st.store->save(rd); !saved) {
      st.broken = saved.err().message;
      logger()->critical("raft.store_failed broker={} error=\"{}\" msg=\"this broker stops voting and "
                         "replicating until it restarts\"",
                         st.settings.broker_id, st.broken);
      fail_pending(self);
      update_lease(self);  // ends it: nothing more is applied here
      return;
    }
    for (auto& m : rd.messages)
      send(self, m);
    applied = applied || rd.snap || !rd.committed.empty();
    bool brokers_changed = rd.snap.has_value();
    for (const auto& e : rd.committed) {
      st.applied_terms.remember(e.index, e.entry_term, st.core->state().refused(e.index));
      brokers_changed = brokers_changed || std::holds_alternative<raft::broker_entry>(e.payload);
      if (const auto* b = std::get_if<raft::broker_entry>(&e.payload))
        logger()->warn("raft.broker_{} broker={} index={} term={}", raft::to_string(b->change), b->id.str(),
                       e.index.value, e.entry_term.value);
      else if (!std::holds_alternative<raft::controller_entry>(e.payload))
        logger()->info("raft.applied index={} term={} entry=\"{}\"", e.index.value, e.entry_term.value,
                       raft::describe(e.payload));
    }
    st.core->advance();
    if (brokers_changed) {
      connect_registered(self);
      brokers_applied = true;
    }
  }
  if (applied) {
    publish_image(*st.owners, st.core->state());
    count_offline(self);
    if (st.settings.on_topics)
      st.settings.on_topics(*st.owners);
    if (brokers_applied && st.settings.on_brokers)
      st.settings.on_brokers(st.owners->standing());
  }
  st.published_applied = st.core->applied_index();
  update_lease(self);
  publish_status(self);
  settle_waiters(self);
}

void expire(self_ptr self) {
  auto& st = self->state;
  auto now = clock_type::now();
  std::vector<waiter> keep;
  for (auto& w : st.waiters) {
    if (w.deadline > now) {
      keep.push_back(std::move(w));
      continue;
    }
    w.rp.deliver(coded(fault::timeout, "timeout", "the Raft entry for " + raft::describe(w.entry) + " at index "
                                         + std::to_string(w.index) + " was not applied in time; it may still commit"));
  }
  st.waiters = std::move(keep);
  for (auto it = st.forwards.begin(); it != st.forwards.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    it->second.rp.deliver(coded(fault::timeout, "timeout", "the leader did not answer the proposal for "
                                                  + raft::describe(it->second.entry) + " in time"));
    it = st.forwards.erase(it);
  }
  std::vector<forward> parked;
  for (auto& f : st.parked) {
    if (f.deadline > now) {
      parked.push_back(std::move(f));
      continue;
    }
    f.rp.deliver(coded(fault::unavailable, "no_controller", "no Raft leader was elected within "
                                               + std::to_string(st.settings.leader_wait.count()) + " ms on broker "
                                               + st.settings.broker_id + " for " + raft::describe(f.entry)));
  }
  st.parked = std::move(parked);
}

/// Waits for (index, term) to be applied here.
void wait_for(self_ptr self, int64_t index, int64_t term, raft::entry_payload entry, promise rp) {
  auto& st = self->state;
  st.waiters.push_back({index, term, std::move(entry), std::move(rp), clock_type::now() + st.settings.proposal_timeout});
  settle_waiters(self);
}

/// Appends `entry` here (the leader) or forwards it to the leader, answering
/// through `rp`. False, with `rp` untouched, while no leader is known (or
/// the one named is not a peer this broker can reach).
bool submit(self_ptr self, const raft::entry_payload& entry, promise& rp) {
  auto& st = self->state;
  auto index = st.core->propose(entry);
  if (index) {
    auto term = static_cast<int64_t>(st.core->current_term().value);
    logger()->info("raft.proposed index={} term={} entry=\"{}\"", index->value, term, raft::describe(entry));
    wait_for(self, static_cast<int64_t>(index->value), term, entry, std::move(rp));
    // Group commit: the entry is persisted by a flush behind the messages
    // already in the mailbox, so proposals that arrived together share one
    // fsync of the log (and one of the commit index).
    if (!st.flush_pending) {
      st.flush_pending = true;
      self->send(self, flush_atom::value);
    }
    return true;
  }
  auto peer = st.peers.find(index.err().leader);
  if (index.err().leader.empty() || peer == st.peers.end())
    return false;
  auto id = ++st.next_forward;
  st.forwards[id] = forward{entry, std::move(rp), clock_type::now() + st.settings.proposal_timeout};
  transport::call_peer(peer->second.peer, "POST", "/cluster/raft/propose", raft::to_json(entry).dump(), 0, "",
                       st.settings.proposal_timeout,
                       [me = caf::actor_cast<raft_actor>(self), id](int status, json answer, std::string error) {
                         caf::anon_send(me, step_atom::value, id, static_cast<int32_t>(status),
                                        answer.is_null() ? error : answer.dump());
                       });
  return true;
}

/// Sends the parked proposals on once a leader is known.
void submit_parked(self_ptr self) {
  auto& st = self->state;
  if (st.parked.empty() || st.core->leader().empty() || !st.broken.empty())
    return;
  std::vector<forward> still;
  // submit() only appends: a save happens in the flush that follows, so
  // `broken` cannot change inside this loop.
  for (auto& f : std::exchange(st.parked, {})) {
    if (!submit(self, f.entry, f.rp))
      still.push_back(std::move(f));
  }
  for (auto& f : still)
    st.parked.push_back(std::move(f));
}

caf::result<int64_t, int64_t> propose(self_ptr self, raft::entry_payload entry, bool forward_to_leader) {
  auto& st = self->state;
  if (!st.broken.empty())
    return coded(fault::unavailable, "raft_failed", "Raft on broker " + st.settings.broker_id + " stopped: " + st.broken);
  // The promise is made only on the paths that answer through it: once made
  // it owns the reply, and an error returned beside it would never reach the
  // caller (who would wait for its whole timeout instead).
  auto leader = st.core->leader();
  bool here = st.core->current_role() == raft::role::leader;
  if (here || (forward_to_leader && !leader.empty() && st.peers.count(leader.str()))) {
    auto rp = self->make_response_promise<int64_t, int64_t>();
    if (submit(self, entry, rp))
      return rp;
    rp.deliver(coded(fault::unavailable, "no_controller", "the Raft leader changed on broker " + st.settings.broker_id));
    return rp;
  }
  if (!forward_to_leader || !leader.empty())
    return coded(fault::unavailable, "no_controller",
                 leader.empty() ? "no Raft leader is known on broker " + st.settings.broker_id + " (term "
                                    + std::to_string(st.core->current_term().value) + ")"
                                : "broker " + st.settings.broker_id + " is not the Raft leader; " + leader.str()
                                    + " is");
  // During an election: wait for its outcome rather than fail a create or a
  // move step that a retry a moment later would carry (docs/raft.md).
  auto rp = self->make_response_promise<int64_t, int64_t>();
  st.parked.push_back(forward{std::move(entry), rp, clock_type::now() + st.settings.leader_wait});
  return rp;
}

/// A conditional owner proposal (docs/metadata.md "Owner epochs");
/// `expect_owner_fenced`: the shared-storage failover's condition.
caf::result<int64_t, int64_t> propose_owner(self_ptr self, const std::string& topic, int32_t partition,
                                            const std::string& owner, int64_t expect_epoch, bool forward_to_leader,
                                            bool expect_owner_fenced) {
  if (!self->state.core)
    return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
  if (expect_epoch < 1)
    return coded(fault::invalid, "invalid_request", "a conditional owner change expects an epoch >= 1");
  raft::owner_entry entry{topic, partition, raft::node_id{owner}, static_cast<uint64_t>(expect_epoch)};
  entry.expect_owner_fenced = expect_owner_fenced;
  return propose(self, std::move(entry), forward_to_leader);
}

json status_json(self_ptr self) {
  auto& st = self->state;
  auto s = st.view->get();
  json j{{"broker_id", st.settings.broker_id},
         {"term", s.term},
         {"role", s.role},
         {"leader", s.leader.empty() ? json(nullptr) : json(s.leader)},
         {"commit_index", s.commit_index},
         {"applied_index", s.applied_index},
         {"tick_ms", st.timing.tick.count()},
         {"heartbeat_ticks", st.timing.heartbeat_ticks},
         {"election_ticks", st.timing.election_ticks},
         {"elections", st.elections},
         {"messages_sent", st.sent},
         {"messages_dropped", st.dropped},
         {"messages_received", st.received},
         {"messages_refused", st.refused},
         {"pending_proposals", st.waiters.size() + st.forwards.size() + st.parked.size()}};
  auto now = clock_type::now();
  auto remaining = cluster::lease_gate::remaining_ms(s.lease_deadline_ns, now);
  j["lease"] = {{"valid", cluster::lease_gate::valid(s.lease_deadline_ns, now)},
                {"remaining_ms", remaining ? json(*remaining) : json(nullptr)},
                {"lease_ms", st.settings.lease_ms}};
  if (st.core) {
    const auto& log = st.core->log();
    j["log"] = {{"first_index", log.first_index().value},
                {"last_index", log.last_index().value},
                {"snapshot_index", log.snapshot_index().value},
                {"snapshots_installed", st.core->snapshots_installed()}};
    j["owners"] = st.core->state().owners().size();
  }
  json peers = json::array();
  for (const auto& [id, p] : st.peers)
    peers.push_back({{"id", id}, {"reachable", p.reachable->load()}, {"in_flight", p.in_flight->load()}});
  j["peers"] = peers;
  if (!st.broken.empty())
    j["error"] = st.broken;
  return j;
}

raft_actor::behavior_type raft_node_fn(self_ptr self, raft_node_settings settings, raft::raft_store* store_raw,
                                       std::shared_ptr<owner_view> owners, std::shared_ptr<raft_view> view) {
  auto& init = self->state;
  init.store.reset(store_raw);
  init.settings = std::move(settings);
  init.timing = timing_of(init.settings);
  init.owners = std::move(owners);
  init.view = std::move(view);
  raft::core_config cfg;
  cfg.self = raft::node_id{init.settings.broker_id};
  if (init.settings.voters.empty()) {
    cfg.members.push_back(cfg.self);
    for (auto& p : init.settings.peers)
      cfg.members.push_back(raft::node_id{p.id});
  } else {
    for (const auto& v : init.settings.voters)
      cfg.members.push_back(raft::node_id{v});
    if (std::find(cfg.members.begin(), cfg.members.end(), cfg.self) == cfg.members.end())
      cfg.learners.push_back(cfg.self);  // joins at runtime (docs/metadata.md "Joining")
  }
  for (auto& p : init.settings.peers)
    init.peers[p.id].peer = p;
  cfg.election_ticks = init.timing.election_ticks;
  cfg.heartbeat_ticks = init.timing.heartbeat_ticks;
  cfg.max_log_entries = static_cast<std::size_t>(init.settings.max_log_entries);
  cfg.seed = std::random_device{}() ^ static_cast<uint64_t>(clock_type::now().time_since_epoch().count());
  init.probe.emplace();  // every series exists from here, elections_total at 0
  init.gate = init.settings.lease_gate ? init.settings.lease_gate : &cluster::lease_gate::process();
  init.gate->publish(clock_type::time_point::min());
  auto core = raft::raft_core::open(cfg, init.store->state());
  if (!core) {
    // open_raft_store validated the store; only a bad membership lands here.
    init.broken = core.err().message;
    logger()->critical("raft.open_failed broker={} error=\"{}\"", init.settings.broker_id, init.broken);
  } else {
    init.core.emplace(std::move(core.value()));
    init.lease.emplace(std::chrono::milliseconds(init.settings.lease_ms));
    init.published_applied = init.core->applied_index();
    logger()->info("raft.started broker={} members={} voter={} term={} commit={} tick_ms={} election_ticks={}",
                   init.settings.broker_id, cfg.members.size(), init.core->is_voter(), init.core->current_term().value,
                   init.core->commit_index().value, init.timing.tick.count(), init.timing.election_ticks);
    connect_registered(self);
    drain_ready(self);
    // Topics of the image loaded at start (snapshot included) exist here
    // too, before the first new entry arrives; so do the registered brokers.
    if (init.settings.on_topics)
      init.settings.on_topics(*init.owners);
    if (init.settings.on_brokers)
      init.settings.on_brokers(init.owners->standing());
    self->delayed_send(self, init.timing.tick, tick_atom::value);
  }
  return {
    [self](tick_atom) {
      auto& st = self->state;
      if (!st.broken.empty())
        return;
      st.core->tick();
      update_lease(self);
      check_liveness(self);
      drain_ready(self);
      submit_parked(self);
      try_register(self);
      expire(self);
      self->delayed_send(self, st.timing.tick, tick_atom::value);
    },
    [self](flush_atom) {
      self->state.flush_pending = false;
      drain_ready(self);
    },
    [self](raft_atom, std::string& body) {
      auto& st = self->state;
      if (!st.broken.empty() || !st.core)
        return;
      auto m = raft::parse_message(body);
      if (!m) {
        ++st.refused;
        return;
      }
      ++st.received;
      auto contacts = st.core->last_leader_contact().count;
      st.core->step(*m);
      update_lease(self);
      // A leader's append renews from the send time of the answer of ours
      // it echoes (never from now: it may have waited in a socket), once
      // what it said committed is applied and published (end of the drain).
      raft::note_leader_contact(*st.core, contacts, *st.lease);
      drain_ready(self);
      submit_parked(self);
    },
    [self](propose_atom, std::string& topic, int32_t partition, std::string& owner,
           bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      return propose(self, raft::owner_entry{topic, partition, raft::node_id{owner}, 0}, forward_to_leader);
    },
    [self](propose_atom, owner_atom, std::string& topic, int32_t partition, std::string& owner, int64_t expect_epoch,
           bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      return propose_owner(self, topic, partition, owner, expect_epoch, forward_to_leader, false);
    },
    [self](propose_atom, owner_atom, std::string& topic, int32_t partition, std::string& owner, int64_t expect_epoch,
           bool forward_to_leader, bool expect_owner_fenced) -> caf::result<int64_t, int64_t> {
      return propose_owner(self, topic, partition, owner, expect_epoch, forward_to_leader, expect_owner_fenced);
    },
    [self](propose_atom, create_atom, std::string& topic, int32_t partitions, std::string& owner, std::string& config,
           bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      return propose(self, raft::topic_entry{topic, partitions, raft::node_id{owner}, config, false},
                     forward_to_leader);
    },
    [self](propose_atom, create_atom, std::string& payload, bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      auto parsed = raft::payload_from_json(json::parse(payload, nullptr, false));
      const auto* t = parsed ? std::get_if<raft::topic_entry>(&*parsed) : nullptr;
      if (!t || t->remove || t->alter || t->owners.empty())
        return coded(fault::invalid, "invalid_request", "a placed topic proposal is a create or growth topic entry with owners: "
                                               + (parsed ? std::string{"another entry"} : parsed.err().message));
      return propose(self, std::move(*parsed), forward_to_leader);
    },
    [self](propose_atom, delete_atom, std::string& topic, int32_t partitions, std::string& owner,
           bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      raft::topic_entry t{topic, partitions, raft::node_id{owner}, "", false};
      t.remove = true;
      return propose(self, std::move(t), forward_to_leader);
    },
    [self](propose_atom, config_atom, std::string& balancer, bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      return propose(self, raft::config_entry{balancer}, forward_to_leader);
    },
    [self](propose_atom, broker_atom, std::string& broker, std::string& change,
           bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      auto c = raft::broker_change_from(change);
      if (!c || *c == raft::broker_change::fence || *c == raft::broker_change::unfence
          || *c == raft::broker_change::register_broker)
        return coded(fault::invalid, "invalid_request", "a proposed broker change is drain, undrain or remove, not \"" + change
                                               + "\" (fencing is the controller's; a registration names endpoints)");
      return propose(self, raft::broker_entry{raft::node_id{broker}, *c, {}, false}, forward_to_leader);
    },
    [self](propose_atom, register_atom, std::string& broker, std::string& cluster, std::string& client,
           std::string& kafka, bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      if (!raft::valid_node_id(broker) || !reachable_address(cluster)
          || (!client.empty() && !reachable_address(client)) || (!kafka.empty() && !reachable_address(kafka)))
        return coded(fault::invalid, "invalid_request",
                     "a registration names a valid broker id and host:port addresses other brokers can reach "
                     "(not a wildcard such as 0.0.0.0); got cluster \"" + cluster + "\"");
      const auto& voters = self->state.core->config().members;
      if (std::find(voters.begin(), voters.end(), raft::node_id{broker}) != voters.end())
        return coded(fault::conflict, "broker_is_voter", "broker " + broker + " is a voter (Cluster.Raft.Voters); only other "
                                             "brokers register");
      return propose(self,
                     raft::broker_entry{raft::node_id{broker}, raft::broker_change::register_broker,
                                        raft::broker_endpoints{cluster, client, kafka}, true},
                     forward_to_leader);
    },
    [self](propose_atom, move_atom, std::string& payload, bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      auto parsed = raft::payload_from_json(json::parse(payload, nullptr, false));
      if (!parsed || !std::holds_alternative<raft::move_entry>(*parsed))
        return coded(fault::invalid, "invalid_request", "a move proposal is a move entry: "
                                               + (parsed ? std::string{"another entry type"} : parsed.err().message));
      return propose(self, std::move(*parsed), forward_to_leader);
    },
    [self](propose_atom, txn_atom, std::string& payload, bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      auto parsed = raft::payload_from_json(json::parse(payload, nullptr, false));
      if (!parsed || !std::holds_alternative<raft::txn_entry>(*parsed))
        return coded(fault::invalid, "invalid_request", "a txn proposal is a txn entry: "
                                               + (parsed ? std::string{"another entry type"} : parsed.err().message));
      return propose(self, std::move(*parsed), forward_to_leader);
    },
    [self](register_atom, std::string& cluster, std::string& client, std::string& kafka) {
      auto& st = self->state;
      st.own = raft::broker_endpoints{cluster, client, kafka};
      st.register_after = {};
      st.rejoin = st.core && st.core->state().removed().count(raft::node_id{st.settings.broker_id}) != 0;
      if (st.core && !st.core->is_voter())
        try_register(self);
    },
    [self](propose_atom, config_atom, std::string& topic, int32_t partitions, std::string& owner,
           std::string& config, bool merge, bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      raft::topic_entry t{topic, partitions, raft::node_id{owner}, config, false};
      t.alter = true;
      t.merge = merge;
      return propose(self, std::move(t), forward_to_leader);
    },
    [self](propose_atom, grow_atom, std::string& topic, int32_t partitions, std::string& owner,
           bool forward_to_leader) -> caf::result<int64_t, int64_t> {
      if (!self->state.core)
        return coded(fault::unavailable, "raft_failed", "Raft is not running: " + self->state.broken);
      return propose(self, raft::topic_entry{topic, partitions, raft::node_id{owner}, {}, true}, forward_to_leader);
    },
    [self](step_atom, int64_t id, int32_t status, std::string& body) {
      auto& st = self->state;
      auto it = st.forwards.find(id);
      if (it == st.forwards.end())
        return;
      auto f = std::move(it->second);
      st.forwards.erase(it);
      auto answer = json::parse(body, nullptr, false);
      if (status == 200 && answer.is_object() && answer.contains("index") && answer["index"].is_number_integer()
          && answer.contains("term") && answer["term"].is_number_integer()) {
        wait_for(self, answer["index"].get<int64_t>(), answer["term"].get<int64_t>(), std::move(f.entry),
                 std::move(f.rp));
        return;
      }
      auto code = answer.is_object() ? answer.value("error", std::string{"forward_failed"}) : "forward_failed";
      auto message = answer.is_object() ? answer.value("message", body) : body;
      f.rp.deliver(make_relayed_error(status, code, "proposal via the leader: " + message));
    },
    [self](status_atom) { return status_json(self).dump(); },
  };
}

}  // namespace

raft_timing timing_of(const raft_node_settings& s) {
  raft_timing t;
  auto tick = std::max(5, s.heartbeat_ms / 5);
  t.tick = std::chrono::milliseconds(tick);
  t.heartbeat_ticks = static_cast<uint32_t>(std::max(1, s.heartbeat_ms / tick));
  t.election_ticks = static_cast<uint32_t>(std::max<int>(s.election_timeout_ms / tick, t.heartbeat_ticks + 1));
  t.election_ticks = std::max<uint32_t>(t.election_ticks, 6);
  return t;
}

std::string open_raft_store(const std::string& data_dir, std::unique_ptr<raft::raft_store>& store,
                            owner_view& owners) {
  auto opened = raft::raft_store::open(data_dir);
  if (!opened)
    return opened.err().message;
  store = std::make_unique<raft::raft_store>(std::move(opened.value()));
  // What this broker knew committed when it stopped: the snapshot plus the
  // entries up to the durable commit index. Later entries wait for a leader.
  const auto& image = store->state();
  raft::ownership_state table;
  if (image.snap)
    table.load(*image.snap);
  for (const auto& e : image.entries) {
    if (e.index > image.hard.commit)
      break;
    if (e.index <= table.applied_index())
      continue;
    if (auto applied = table.apply(e); !applied)
      return std::string(raft::raft_store::log_file) + ": " + applied.err().message;
  }
  publish_image(owners, table);
  return {};
}

raft_actor spawn_raft_node(caf::actor_system& sys, raft_node_settings settings, std::unique_ptr<raft::raft_store> store,
                           std::shared_ptr<owner_view> owners, std::shared_ptr<raft_view> view, registry_actor reg) {
  auto a = sys.spawn<caf::detached>(raft_node_fn, std::move(settings), store.release(), std::move(owners),
                                    std::move(view));
  enroll(reg, caf::actor_cast<caf::actor>(a), "raft_node", "raft_node");
  return a;
}

}  // namespace moonmq

// The raft_node's view of the cluster's brokers (docs/metadata.md
// "Liveness", "Joining"): Raft clients for brokers that registered at
// runtime, fencing of a silent broker and unfencing of a returned one by
// the leader, and a learner's registration of its own endpoints.

#include <algorithm>

#include "actors/raft_node_impl.hpp"
#include "raft/messages.hpp"

namespace moonmq::raft_node_impl {

/// Gives every registered broker (other than this one) a Raft client, so
/// that the leader's appends reach a learner from the batch that applied
/// its register entry on; a broker that registered a new cluster address
/// gets a new client.
void connect_registered(self_ptr self) {
  auto& st = self->state;
  if (!st.settings.connect)
    return;
  const auto& voters = st.core->config().members;
  for (const auto& [id, e] : st.core->state().registered()) {
    // A voter keeps its configured address: an entry naming one (refused
    // when proposed) never redirects its Raft traffic.
    if (id.str() == st.settings.broker_id || st.core->state().removed().count(id)
        || std::find(voters.begin(), voters.end(), id) != voters.end())
      continue;
    auto it = st.peers.find(id.str());
    if (it != st.peers.end() && it->second.peer.address == e.cluster)
      continue;
    raft_peer p;
    p.peer = st.settings.connect(id.str(), e.cluster);
    if (!p.peer.client) {
      logger()->warn("raft.peer_unusable peer={} address={}", id.str(), e.cluster);
      continue;
    }
    logger()->info("raft.peer_learned peer={} address={}", id.str(), e.cluster);
    st.peers[id.str()] = std::move(p);
  }
}

/// On the leader, every tick: a peer silent for SessionTimeoutMs is fenced,
/// a fenced peer that answered within the last election timeout is
/// unfenced, each by one `broker` entry (docs/metadata.md "Liveness").
void check_liveness(self_ptr self) {
  auto& st = self->state;
  auto& core = *st.core;
  if (core.current_role() != raft::role::leader)
    return;
  auto applied = core.applied_index().value;
  for (auto it = st.liveness_pending.begin(); it != st.liveness_pending.end();)
    it = it->second <= applied ? st.liveness_pending.erase(it) : std::next(it);
  auto tick_ms = static_cast<uint64_t>(st.timing.tick.count());
  for (const auto& [id, p] : st.peers) {
    auto silent = core.silent_ticks(raft::node_id{id});
    if (!silent || st.liveness_pending.count(id))
      continue;
    // A removed broker is no longer part of the cluster: its silence says
    // nothing, unless it still owns a partition (handed to it by a move that
    // was running when it was removed), which then shows offline.
    if (core.state().removed().count(raft::node_id{id}) && core.state().owned_by(raft::node_id{id}) == 0)
      continue;
    bool fenced = core.state().fenced().count(raft::node_id{id}) != 0;
    auto silent_ms = static_cast<uint64_t>(*silent) * tick_ms;
    bool fence = !fenced && silent_ms >= static_cast<uint64_t>(st.settings.session_timeout_ms);
    bool unfence = fenced && *silent < st.timing.heartbeat_ticks * 2;
    if (!fence && !unfence)
      continue;
    auto index = core.propose(
      raft::broker_entry{raft::node_id{id}, fence ? raft::broker_change::fence : raft::broker_change::unfence, {}, false});
    if (!index)
      return;
    logger()->warn("raft.{} broker={} silent_ms={} index={}", fence ? "fencing" : "unfencing", id, silent_ms,
                   index->value);
    st.liveness_pending[id] = index->value;
  }
}

bool reachable_address(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= address.size())
    return false;
  auto host = address.substr(0, colon);
  return host != "0.0.0.0" && host != "::" && host != "[::]" && host != "*";
}

/// A learner registers its endpoints until the image it applied names them
/// (docs/metadata.md "Joining"): to the leader it knows, else to the voters
/// in turn (a voter that is not the leader answers 503 and the next is
/// tried), at most once per election timeout.
void try_register(self_ptr self) {
  auto& st = self->state;
  if (!st.own || !st.core || st.core->is_voter())
    return;
  raft::node_id me{st.settings.broker_id};
  bool removed = st.core->state().removed().count(me) != 0;
  if (!removed)
    st.rejoin = false;  // in (or never out): a later removal is final for this run
  // Removed while it runs: it stays out (an operator's removal is not
  // undone by the broker still running); a restart joins again.
  if (removed && !st.rejoin) {
    if (!st.told_removed)
      logger()->warn("raft.removed broker={} msg=\"removed from the cluster: stop this broker, or restart it to "
                     "join again\"",
                     st.settings.broker_id);
    st.told_removed = true;
    return;
  }
  // A leader replicates to this broker only once its registration (at the
  // address it listens on now) committed: nothing to propose again, and no
  // duplicate can land after a later removal. A broker registered before
  // Kafka node ids were given registers once more to get one.
  const auto& ids = st.core->state().kafka_node_ids();
  if (!st.core->leader().empty() && ids.count(raft::node_id{st.settings.broker_id}))
    return;
  auto now = clock_type::now();
  if (now < st.register_after)
    return;
  st.register_after = now + std::chrono::milliseconds(st.settings.election_timeout_ms);
  raft::broker_entry entry{raft::node_id{st.settings.broker_id}, raft::broker_change::register_broker, *st.own, true};
  const transport::cluster_peer* target = nullptr;
  if (auto it = st.peers.find(st.core->leader().str()); !st.core->leader().empty() && it != st.peers.end())
    target = &it->second.peer;
  else if (!st.settings.peers.empty())
    target = &st.settings.peers[st.register_turn++ % st.settings.peers.size()];
  if (!target)
    return;
  logger()->info("raft.registering broker={} via={} cluster={}", st.settings.broker_id, target->id, st.own->cluster);
  transport::call_peer(*target, "POST", "/cluster/raft/propose", raft::to_json(raft::entry_payload{entry}).dump(), 0,
                       "", std::chrono::milliseconds(st.settings.election_timeout_ms),
                       [id = target->id](int status, json answer, std::string error) {
                         if (status == 200)
                           logger()->info("raft.registered via={} index={}", id, answer.value("index", int64_t{0}));
                         else
                           logger()->info("raft.register_refused via={} status={} error=\"{}\"", id, status,
                                          answer.is_object() ? answer.value("message", error) : error);
                       });
}

}  // namespace moonmq::raft_node_impl

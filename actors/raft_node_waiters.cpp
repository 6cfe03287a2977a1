// How the raft_node answers its proposers (docs/raft.md "How a proposer
// learns that its entry committed"): a waiter is settled once its index is
// applied, from the entry's term in the log or among the entries applied
// lately, or else from the applied table.

#include "actors/raft_node_impl.hpp"

namespace moonmq::raft_node_impl {

namespace {

/// True when the applied table holds what `e` asked for (used once the
/// entry's own index is compacted away).
bool holds(const raft::ownership_state& table, const raft::entry_payload& e) {
  if (const auto* o = std::get_if<raft::owner_entry>(&e))
    return table.owner_of(raft::topic_partition{o->topic, o->partition}) == o->owner;
  if (const auto* t = std::get_if<raft::topic_entry>(&e)) {
    auto it = table.topics().find(t->topic);
    if (t->remove)
      return it == table.topics().end();
    if (t->alter)
      return it != table.topics().end() && (t->merge || it->second.config == t->config);
    return it != table.topics().end() && it->second.partitions >= t->partitions;
  }
  return true;
}

}  // namespace

/// Resolves waiters whose index is now applied: delivered when the applied
/// entry is theirs, refused when another entry took its place.
void settle_waiters(self_ptr self) {
  auto& st = self->state;
  const auto& core = *st.core;
  auto applied = static_cast<int64_t>(core.applied_index().value);
  std::vector<waiter> keep;
  for (auto& w : st.waiters) {
    if (w.index > applied) {
      keep.push_back(std::move(w));
      continue;
    }
    // The entry at w.index is still in the log, or was applied here lately
    // and kept with its term and refusal (raft/applied_terms.hpp; the
    // applied table keeps refusals for fewer entries and forgets them at a
    // snapshot install); otherwise (applied through an installed snapshot,
    // or long ago) the applied table tells whether the change holds.
    const raft::log_index at{static_cast<uint64_t>(w.index)};
    const auto kept = st.applied_terms.find(at);
    auto t = core.log().term_at(at);
    const bool in_log = t.has_value();
    if (!t && kept)
      t = kept->entry_term;
    const bool was_refused = kept ? kept->refused : core.state().refused(at);
    bool ours = t ? static_cast<int64_t>(t->value) == w.term : holds(core.state(), w.entry);
    const auto* cas = std::get_if<raft::owner_entry>(&w.entry);
    const auto* step = std::get_if<raft::move_entry>(&w.entry);
    const auto* txn = std::get_if<raft::txn_entry>(&w.entry);
    const auto* removal = std::get_if<raft::topic_entry>(&w.entry);
    const auto* alter = removal && removal->alter ? removal : nullptr;
    if (removal && !removal->remove)
      removal = nullptr;
    if (alter && !in_log && kept)  // payload gone: the applied table must show the change (an earlier-version leader)
      ours = ours && holds(core.state(), w.entry);
    if (removal && !t) {
      // Compacted before it was settled: the deleted names tell whether a
      // deletion at or after this index applied (a topic created again since
      // must not read as "lost, retry", which would delete the new one).
      auto d = core.state().deleted_topics().find(removal->topic);
      if (d != core.state().deleted_topics().end() && static_cast<int64_t>(d->second.value) >= w.index)
        w.rp.deliver(w.index, w.term);
      else
        w.rp.deliver(coded(fault::unavailable, "proposal_outcome_unknown",
                           "the deletion of " + removal->topic
                             + " was applied through a snapshot; read the image to learn its outcome"));
    } else if (txn && !t)
      w.rp.deliver(coded(fault::unavailable, "proposal_outcome_unknown",
                         "the txn entry " + raft::describe(w.entry)
                           + " was applied through a snapshot; read the image to learn its outcome"));
    else if (txn && ours && was_refused) {
      auto it = core.state().transactions().find(txn->transactional_id);
      w.rp.deliver(coded(fault::conflict, "txn_state_changed",
                         "transactional id " + txn->transactional_id + " is at version "
                           + std::to_string(it == core.state().transactions().end() ? 0 : it->second.version)
                           + ", not " + std::to_string(txn->expect_version) + ": the change was not applied"));
    } else if (step && !t)
      w.rp.deliver(coded(fault::unavailable, "proposal_outcome_unknown",
                         "the move entry " + raft::describe(w.entry)
                           + " was applied through a snapshot; read the image to learn its outcome"));
    else if (step && ours && was_refused) {
      auto it = core.state().moves().find(step->id);
      w.rp.deliver(coded(fault::conflict, "move_state_changed",
                         "move " + step->id + " is "
                           + (it == core.state().moves().end() ? std::string{"unknown"} : it->second.state)
                           + " in the metadata log (owner epoch "
                           + std::to_string(core.state().epoch_of({step->topic, step->partition}))
                           + "): the step to " + step->state + " was not applied"));
    } else if (removal && ours && was_refused) {
      if (!core.state().topics().count(removal->topic))
        w.rp.deliver(coded(fault::not_found, "unknown_topic", "unknown topic " + removal->topic));
      else
        w.rp.deliver(coded(fault::conflict, "topic_moving",
                           "topic " + removal->topic
                             + " has a move under way; cancel it or wait for it to end, then delete again"));
    } else if (alter && ours && was_refused) {
      w.rp.deliver(coded(fault::not_found, "unknown_topic", "unknown topic " + alter->topic + ": its config was not changed"));
    } else if (alter && ours && t && raft::log_index{static_cast<uint64_t>(w.index)} >= core.log().first_index()
               && !(core.log().at(raft::log_index{static_cast<uint64_t>(w.index)}).payload == w.entry)) {
      // A leader of an earlier version took the forwarded change for a
      // create of an existing topic, which changes nothing.
      w.rp.deliver(coded(fault::conflict, "config_not_applied",
                         "the leader committed another entry at index " + std::to_string(w.index) + " than the config "
                           "change of " + alter->topic + " (an earlier version?): upgrade every broker, then retry"));
    } else if (!t && cas && cas->expect_epoch != 0)
      // Compacted into a snapshot before it was settled here: whether the
      // condition held is not known any more (the caller re-reads the image).
      w.rp.deliver(coded(fault::unavailable, "proposal_outcome_unknown",
                         "the conditional owner change of " + cas->topic + "/" + std::to_string(cas->partition)
                           + " was applied through a snapshot; read the image to learn its outcome"));
    else if (ours && cas && was_refused
             && core.state().deleted_topics().count(cas->topic) && !core.state().topics().count(cas->topic))
      // Refused as an owner of a deleted topic (conditional or not).
      w.rp.deliver(coded(fault::not_found, "unknown_topic", "topic " + cas->topic + " was deleted: no owner of "
                                                 + cas->topic + "/" + std::to_string(cas->partition) + " was set"));
    else if (ours && cas && cas->expect_epoch != 0
             && was_refused)
      w.rp.deliver(coded(fault::conflict, "owner_epoch_changed",
                         cas->topic + "/" + std::to_string(cas->partition) + " is no longer at owner epoch "
                           + std::to_string(cas->expect_epoch) + " (now "
                           + std::to_string(core.state().epoch_of({cas->topic, cas->partition}))
                           + "): the conditional owner change was not applied"));
    else if (ours)
      w.rp.deliver(w.index, w.term);
    else
      w.rp.deliver(coded(fault::unavailable, "proposal_lost",
                         "the Raft entry for " + raft::describe(w.entry) + " at index " + std::to_string(w.index)
                           + " was replaced after a change of leader; retry"));
  }
  st.waiters = std::move(keep);
}

}  // namespace moonmq::raft_node_impl

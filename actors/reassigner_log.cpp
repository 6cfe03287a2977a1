// Moves in the metadata log (docs/cluster.md "Moves in the log"): every step
// of a move is a `move` entry, a compare-and-set on its state in log order.
// The source proposes its own steps; `reconcile` brings the journal and the
// log back into agreement after a crash between the two writes; and the
// Raft leader drives on the moves whose source is fenced, from the state the
// log recorded, so that a source gone for good never strands a move.

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "actors/reassigner_impl.hpp"
#include "actors/shared_mode.hpp"
#include "cluster/move_messages.hpp"
#include "raft/types.hpp"

#pragma GCC diagnostic ignored "-Wshadow"

namespace moonmq::reassigner_detail {

std::string move_payload(const std::string& id, const cluster::topic_partition& tp, const std::string& from,
                         const std::string& to, const std::string& state, const std::vector<std::string>& expect,
                         const std::string& error, int64_t end, int64_t expect_epoch, int64_t log_start) {
  raft::move_entry m;
  m.id = id;
  m.topic = tp.topic;
  m.partition = tp.partition;
  m.from = raft::node_id{from};
  m.to = raft::node_id{to};
  m.state = state;
  m.expect = expect;
  m.error = error;
  m.end = end;
  m.log_start = log_start;
  m.expect_epoch = static_cast<uint64_t>(std::max<int64_t>(expect_epoch, 0));
  return raft::to_json(raft::entry_payload{std::move(m)}).dump();
}

std::string step_payload(self_ptr self, const std::string& id, const std::string& state,
                         const std::vector<std::string>& expect, const std::string& error, int64_t end,
                         int64_t expect_epoch, int64_t log_start) {
  const auto* row = row_of(self, id);
  return move_payload(id, row->tp, row->from.value, row->to.value, state, expect, error, end, expect_epoch,
                      log_start);
}

void propose_step(self_ptr self, std::string payload, std::function<void(const caf::error*)> then) {
  self->request(self->state.cstate, local_timeout, move_atom::value, std::move(payload))
    .then([then](bool) { then(nullptr); }, [then](caf::error& e) { then(&e); });
}

bool finishes_itself(self_ptr self, const std::string& id, const move_info& m) {
  const auto* row = row_of(self, id);
  return self->state.settings.shared && m.state == "done" && run_of(self, id) && row
         && (row->state == move_state::cutover || row->state == move_state::offsets);
}

void log_step_async(self_ptr self, const std::string& id, const std::string& state,
                    const std::vector<std::string>& expect, const std::string& error, int64_t end,
                    int64_t log_start) {
  if (!row_of(self, id))
    return;
  propose_step(self, step_payload(self, id, state, expect, error, end, 0, log_start),
               [self, id, state](const caf::error* e) {
                 if (!e)
                   return;
                 if (error_code_of(*e) == "move_state_changed") {
                   auto m = logged_move(self, id);
                   if (m && raft::finished_move_state(m->state) && m->state != state && !finishes_itself(self, id, *m))
                     adopt(self, id);
                   return;
                 }
                 logger()->warn("move.log_step_failed move={} state={} error=\"{}\"", id, state, message_of(*e));
               });
}

void propose_create(self_ptr self, const std::string& id) {
  self->state.reconciling[id] = util::wall_ms();
  propose_step(self, step_payload(self, id, "queued", {}), [self, id](const caf::error* e) {
    auto& st = self->state;
    const auto* row = row_of(self, id);
    if (!row || row->state != move_state::queued)
      return;
    if (!e) {
      start_queued(self);
      return;
    }
    if (error_code_of(*e) != "move_state_changed") {
      logger()->warn("move.create_pending move={} error=\"{}\"", id, message_of(*e));
      return;  // reconcile() proposes it again
    }
    if (logged_move(self, id))  // an earlier try applied
      return start_queued(self);
    // Refused: another unfinished move of the partition is in the log, or
    // the log does not name this broker owner. A move this journal already
    // ended but whose end the log has not taken yet is waited for.
    // So is a move into this broker past its cutover, whose source has yet
    // to log its end.
    auto moves = st.owners->moves();
    for (const auto& [other, m] : *moves) {
      if (other == id || !(m.tp == row->tp) || raft::finished_move_state(m.state))
        continue;
      const auto* mine = row_of(self, other);
      bool ended_here = mine && cluster::is_terminal(mine->state);
      bool into_here = m.to == st.settings.broker_id && (m.state == "cutover" || m.state == "offsets");
      if (ended_here || into_here) {
        logger()->info("move.create_waits move={} for={}", id, other);
        return;
      }
    }
    journal_to(self, id, move_state::failed,
               "the metadata log refused the move: " + row->tp.topic + "/" + std::to_string(row->tp.partition)
                 + " has an unfinished move, or its owner is not " + st.settings.broker_id);
  });
}

bool followed_log(self_ptr self, const std::string& id, const caf::error& err, const std::string& target,
                  const std::function<void()>& proceed) {
  if (error_code_of(err) != "move_state_changed")
    return false;
  auto m = logged_move(self, id);
  if (m && m->state == target) {
    proceed();
    return true;
  }
  if (m && raft::finished_move_state(m->state)) {
    if (finishes_itself(self, id, *m))
      proceed();  // the destination's own `done`: the run goes on to complete
    else
      adopt(self, id);
    return true;
  }
  return false;
}

std::optional<move_info> logged_move(self_ptr self, const std::string& id) {
  auto moves = self->state.owners->moves();
  auto it = moves->find(id);
  if (it == moves->end())
    return std::nullopt;
  return it->second;
}

void unseal_local(self_ptr self, const std::string& id, const cluster::topic_partition& tp) {
  if (auto part = local_partition(self, tp))
    self->request(*part, local_timeout, seal_atom::value, false)
      .then([](int64_t) {}, [self, id](caf::error& e) {
        // Looked at again on the next reconcile (release_move_seal), which
        // unseals once the log shows the move ended.
        self->state.released_seals.erase(id);
        logger()->warn("move.unseal_failed move={} error=\"{}\" retry=next_reconcile", id, caf::to_string(e));
      });
}

bool topic_gone(self_ptr self, const move_info& m) {
  auto deleted = self->state.owners->deleted_topics();
  auto it = deleted->find(m.tp.topic);
  return it != deleted->end() && it->second > m.updated_at;
}

namespace {

bool finished(const std::string& state) { return raft::finished_move_state(state); }

/// Proposes a step reconcile found missing, at most once per reconcile_retry_ms.
void propose_once(self_ptr self, const std::string& id, std::string payload, const char* why) {
  auto& st = self->state;
  auto now = util::wall_ms();
  if (auto it = st.reconciling.find(id); it != st.reconciling.end() && now - it->second < reconcile_retry_ms)
    return;
  st.reconciling[id] = now;
  logger()->info("move.reconcile move={} reason=\"{}\"", id, why);
  propose_step(self, std::move(payload), [self, id](const caf::error* e) {
    if (e && error_code_of(*e) != "move_state_changed")
      logger()->warn("move.reconcile_failed move={} error=\"{}\"", id, message_of(*e));
  });
}

/// The journal's end of a move that the log still has unfinished.
void log_journal_end(self_ptr self, const std::string& id, const cluster::move_entry& row, const move_info& m) {
  if (row.state == move_state::done) {
    propose_once(self, id, step_payload(self, id, "done", {"cutover", "offsets"}, row.error), "journal done");
    return;
  }
  auto end = cluster::to_string(row.state);  // failed or cancelled
  if (m.state == "queued" || m.state == "copying")
    propose_once(self, id, step_payload(self, id, end, {m.state}, row.error), "journal ended before cutover");
  else if (m.state == "rolling_back")
    propose_once(self, id, step_payload(self, id, "failed", {"rolling_back"}, row.error), "journal rolled back");
  else  // past cutover in the log: the rollback, conditional on the destination not having confirmed
    propose_once(self, id, step_payload(self, id, "failed", {m.state}, row.error, -1, m.epoch),
                 "journal failed past cutover");
}

/// Steps the journal took that the log lacks (a proposal lost in a crash).
void log_journal_progress(self_ptr self, const std::string& id, const cluster::move_entry& row, const move_info& m) {
  if (m.state == "queued" && row.state != move_state::queued)
    propose_once(self, id, step_payload(self, id, "copying", {"queued"}), "journal copying");
  else if (m.state == "cutover" && row.state == move_state::offsets)
    if (const auto* run = run_of(self, id); run && run->final_end >= 0)
      propose_once(self, id, step_payload(self, id, "offsets", {"cutover"}, {}, run->final_end, 0, run->final_log_start),
                   "journal offsets");
}

/// Shared storage: reads `part`'s log end and calls `next` when it is the
/// sealed end `end` (`exact`) or past it (the partition may have taken
/// writes since), else `failed` with the reason (a short end, or the read's
/// error).
void when_end_reaches(self_ptr self, partition_actor part, int64_t end, bool exact, std::function<void()> next,
                      std::function<void(const std::string&)> failed) {
  self->request(part, local_timeout, bounds_atom::value)
    .then(
      [end, exact, next, failed](int64_t, int64_t log_end, int64_t) {
        if (exact ? log_end != end : log_end < end)
          failed("log end is " + std::to_string(log_end) + (exact ? ", the sealed end " : ", below the sealed end ")
                 + std::to_string(end));
        else
          next();
      },
      [failed](caf::error& e) { failed(caf::to_string(e)); });
}

/// Shared storage: lifts the seal of a move's destination whose owner entry
/// applied (the image names it owner past the cutover's epoch) over a log
/// holding every sealed record: the second half of a confirm, for a
/// confirm that stopped between its entry and its unseal. Returns false
/// when this broker does not own the partition (nothing started).
bool unseal_confirmed(self_ptr self, const move_info& m, std::function<void(const std::string&)> done) {
  auto part = local_partition(self, m.tp);
  if (!part || self->state.owners->owner_and_epoch(m.tp).first != self->state.settings.broker_id)
    return false;
  when_end_reaches(
    self, *part, m.end, false,
    [self, part = *part, done] {
      self->request(part, local_timeout, seal_atom::value, false)
        .then([done](int64_t) { done({}); }, [done](caf::error& e) { done(caf::to_string(e)); });
    },
    done);
  return true;
}

/// One decision for a move whose source is fenced, taken by the Raft leader
/// from the state the log recorded (the table in docs/cluster.md).
void drive_orphan(self_ptr self, const std::string& id, const move_info& m) {
  auto& st = self->state;
  auto& o = st.orphans[id];
  if (o.in_flight)
    return;
  auto now = util::wall_ms();
  if (o.first_seen_ms == 0) {
    o.first_seen_ms = now;
    logger()->warn("move.orphaned move={} topic={} partition={} from={} to={} state={}", id, m.tp.topic,
                   m.tp.partition, m.from, m.to, m.state);
  }
  auto by = " (ended by the controller " + st.settings.broker_id + ")";
  auto send = [self, id](std::string payload) {
    auto& o = self->state.orphans[id];
    o.in_flight = true;
    propose_step(self, std::move(payload), [self, id](const caf::error* e) {
      self->state.orphans[id].in_flight = false;
      if (e)
        logger()->warn("move.orphan_step_failed move={} error=\"{}\"", id, message_of(*e));
      else
        logger()->info("move.orphan_step move={} state={}", id, logged_move(self, id) ? logged_move(self, id)->state
                                                                                     : std::string{"?"});
    });
  };
  auto [owner, epoch] = st.owners->owner_and_epoch(m.tp);
  bool confirmed = (m.state == "cutover" || m.state == "offsets")
                   && cluster::destination_confirmed(m.to, cluster::journal_epoch(m.epoch), owner,
                                                     cluster::journal_epoch(epoch));
  if (m.state == "queued" || m.state == "copying") {
    send(move_payload(id, m.tp, m.from, m.to, "failed", {m.state},
                      "the source " + m.from + " was fenced while the move was " + m.state + by));
    return;
  }
  if (m.state == "rolling_back") {
    send(move_payload(id, m.tp, m.from, m.to, "failed", {"rolling_back"},
                      m.error.empty() ? "the source " + m.from + " was fenced while rolling back" + by : m.error));
    return;
  }
  if (confirmed) {  // the destination confirmed (its entry bumped the epoch): the move is done
    send(move_payload(id, m.tp, m.from, m.to, "done", {m.state}, "the destination confirmed; the source " + m.from
                                                                      + " was fenced" + by));
    return;
  }
  auto give_back = [&](const std::string& why) {
    // Conditional on the cutover's epoch: refused if the destination
    // confirmed meanwhile (then the next tick finds it confirmed).
    send(move_payload(id, m.tp, m.from, m.to, "failed", {m.state}, why + by, -1, m.epoch));
  };
  if ((m.state == "cutover" && !(st.settings.shared && m.end >= 0)) || m.end < 0) {
    // The drain may not have finished: only the source holds every record.
    // (Shared storage: the cutover entry carries the sealed end, and the
    // destination's chain holds every record up to it: confirmed below.)
    give_back("the source " + m.from + " was fenced before its drain finished; the partition is its again");
    return;
  }
  // `offsets`: the destination holds every record up to the sealed end the
  // log recorded. It confirms as it would for the source (fsync, check the
  // end, a conditional owner entry, unseal); a destination that cannot
  // within the confirm timeout gives the partition back.
  // MoveConfirmTimeoutSeconds 0 (a source never takes back) still bounds
  // the leader's wait for a source that is gone.
  auto limit = st.settings.confirm_timeout.count() > 0 ? st.settings.confirm_timeout.count() : orphan_confirm_default_ms;
  if (now - o.first_seen_ms >= limit) {
    give_back("the destination " + m.to + " did not confirm within " + std::to_string(limit / 1000)
              + " s of its source " + m.from + " being fenced");
    return;
  }
  auto status = st.settings.raft_status ? st.settings.raft_status->get() : raft_status{};
  // The source's sealed log start (records it deleted during the copy stay
  // deleted) and the cutover's epoch (a destination past it confirmed an
  // earlier try), when the image knows them.
  const cluster::move_confirm request{m.from, m.end, m.log_start, m.epoch};
  if (m.to == st.settings.broker_id) {
    // This broker is the destination: its own move destination actor
    // confirms, exactly as for a confirm request from the source.
    if (!st.settings.destination)
      return;
    logger()->info("move.orphan_confirm move={} to={} log_end={} log_start={}", id, m.to, m.end, m.log_start);
    o.in_flight = true;
    // The confirm is up to four requests of the destination actor, each
    // bounded by PeerTimeout: waited for whole, so that the next tick never
    // starts a second one beside it.
    const auto wait = std::max(local_timeout, 4 * st.settings.peer_timeout + std::chrono::seconds(1));
    self->request(*st.settings.destination, wait, confirm_atom::value, m.tp.topic, m.tp.partition, request,
                  static_cast<int64_t>(status.term))
      .then([self, id](cluster::move_answer&) { self->state.orphans[id].in_flight = false; },
            [self, id](caf::error& e) {
              self->state.orphans[id].in_flight = false;
              if (error_code_of(e) != "not_ready")  // the cutover not applied here yet: the next tick retries
                logger()->warn("move.orphan_confirm_failed move={} error=\"{}\"", id,
                               message_of(e).empty() ? caf::to_string(e) : message_of(e));
            });
    return;
  }
  auto peer = peer_of(self, m.to);
  if (!peer)
    return;
  o.in_flight = true;
  auto handle = caf::actor_cast<reassigner_actor>(self);
  logger()->info("move.orphan_confirm move={} to={} log_end={} log_start={}", id, m.to, m.end, m.log_start);
  auto confirm = cluster::to_json(request);
  transport::call_peer(*peer, "POST", tp_path(m.tp) + "/confirm", confirm.dump(), status.term, status.leader,
                       st.settings.peer_timeout, [handle, id](int code, json, std::string error) {
                         // Whatever the answer, the next tick decides again from the image.
                         caf::anon_send(handle, step_atom::value, id, int64_t{-1}, static_cast<int32_t>(code),
                                        std::string{}, std::move(error));
                       });
}

/// Shared storage: a move of this broker (source or destination) that the
/// log ended leaves the seal it set here with no purpose: the destination's
/// files are the chain's whatever it wrote, and the source's partition is either
/// another broker's or its own again. The step that would lift it may never
/// come or be refused: a source gone or frozen, whose move the Raft leader
/// ended, cleans up nothing, and once the controller's failover gave the
/// partition to the destination its cleanup is refused ("owns it itself");
/// a source that adopts the log's end while its partition failed over to
/// another broker keeps its seal. The partition would then refuse every
/// write here whenever it is, or comes back, this broker's. Lifted once per
/// move, once this broker's own journal row (a source's) has ended, unless
/// another move of the partition is under way (it may have sealed this
/// broker again) or the topic is gone.
void release_move_seal(self_ptr self, const std::string& id, const move_info& m, const move_image& moves) {
  auto& st = self->state;
  if (!finished(m.state) || st.released_seals.count(id) || topic_gone(self, m))
    return;
  if (m.from == st.settings.broker_id)
    if (const auto* row = row_of(self, id); row && !cluster::is_terminal(row->state))
      return;  // the source's reassigner ends the row first (adopt), unsealing as it does
  for (const auto& [other, o] : moves)
    if (other != id && o.tp == m.tp && !finished(o.state))
      return;
  st.released_seals.insert(id);
  logger()->info("move.seal_released move={} topic={} partition={} state={} role={}", id, m.tp.topic,
                 m.tp.partition, m.state, m.from == st.settings.broker_id ? "source" : "destination");
  // A destination that holds the partition open after its move ended done
  // lifts the seal only over a log holding every sealed record: its own
  // confirm checks that too, but may have stopped before its unseal.
  auto part = local_partition(self, m.tp);
  if (m.to != st.settings.broker_id || m.state != "done" || m.end < 0 || !part
      || st.owners->owner_and_epoch(m.tp).first != st.settings.broker_id) {
    unseal_local(self, id, m.tp);
    return;
  }
  when_end_reaches(
    self, *part, m.end, false, [self, id, tp = m.tp] { unseal_local(self, id, tp); },
    [self, id, tp = m.tp](const std::string& why) {
      self->state.released_seals.erase(id);  // looked at again on the next reconcile
      logger()->warn("move.seal_kept move={} topic={} partition={} error=\"{}\" retry=next_reconcile", id, tp.topic,
                     tp.partition, why);
    });
}

/// The destination's own `done` of a move it confirmed in place: the move's
/// step at the cutover's epoch, which the log applies only while the move
/// is still in cutover or offsets, so exactly one of it and a take-back
/// applies (raft/ownership_state.cpp apply_move).
void propose_own_done(self_ptr self, const std::string& id, const move_info& m) {
  // Test hook: MOONMQ_TEST_WITHHOLD_OWN_DONE=1 (read once) makes a
  // destination serve after confirming in place but never propose its
  // `done`, so that the move can end only by a take-back after it served
  // (tests/node/node_shared_move.test.cpp).
  static const bool withheld = [] {
    const char* v = std::getenv("MOONMQ_TEST_WITHHOLD_OWN_DONE");
    return v && std::string{v} == "1";
  }();
  if (withheld) {
    self->state.own_confirms[id].done_failed_ms = util::wall_ms();
    logger()->warn("move.own_done_withheld move={} reason=\"MOONMQ_TEST_WITHHOLD_OWN_DONE\"", id);
    return;
  }
  auto& own = self->state.own_confirms[id];
  own.done_in_flight = true;
  propose_step(self, move_payload(id, m.tp, m.from, m.to, "done", {"cutover", "offsets"}, {}, -1, m.epoch),
               [self, id](const caf::error* e) {
                 auto& own = self->state.own_confirms[id];
                 own.done_in_flight = false;
                 if (!e) {
                   logger()->info("move.own_done move={}", id);
                   return;
                 }
                 auto m = logged_move(self, id);
                 if (error_code_of(*e) == "move_state_changed" && m && raft::finished_move_state(m->state)) {
                   // Done already, or taken back first: then the image
                   // names the source, and this broker's worker closes the
                   // partition (the source's takeover waits out this
                   // broker's lease, docs/shared-storage.md "Take-back").
                   logger()->info("move.own_done_refused move={} log_state={}", id, m->state);
                   return;
                 }
                 own.done_failed_ms = util::wall_ms();
                 logger()->warn("move.own_done_failed move={} error=\"{}\" retry_ms={}", id, message_of(*e),
                                reconcile_retry_ms);
               });
}

/// Shared storage: the destination confirms a move to it in place, at the
/// cutover's epoch it took the partition over at: its log must end exactly
/// at the sealed end the cutover entry carries (a wrong end proposes
/// nothing and keeps the seal, so the source can still take the partition
/// back), then its `done` step is proposed and the seal lifted at once,
/// without waiting for the step to commit. Writes are acknowledged from
/// then on at the cutover's epoch; a take-back that the log orders before
/// the `done` is safe because the source's takeover waits out this
/// broker's lease (docs/shared-storage.md "Take-back"). A partition whose
/// durable seal is already gone (this broker checked and unsealed it before
/// a restart, and has taken writes since) only needs its end at or past the
/// sealed end. Returns false when this broker does not own the partition
/// at the cutover's epoch (nothing started); else `unsealed` is called
/// once, with an empty error on success.
bool confirm_in_place(self_ptr self, const std::string& id, const move_info& m,
                      std::function<void(const std::string&)> unsealed) {
  auto part = local_partition(self, m.tp);
  auto [owner, epoch] = self->state.owners->owner_and_epoch(m.tp);
  if (!part || owner != self->state.settings.broker_id || epoch != m.epoch)
    return false;
  bool sealed = true;  // the destination sealed it durably at the move's ensure
  auto topics = self->state.owners->topics();
  if (auto t = topics->find(m.tp.topic); t != topics->end() && !self->state.settings.data_dir.empty()) {
    std::error_code ec;
    sealed = std::filesystem::exists(
      shared_seal_marker(self->state.settings.data_dir, m.tp.topic, m.tp.partition, t->second.created_at), ec);
    sealed = sealed || ec;
  }
  when_end_reaches(
    self, *part, m.end, sealed,
    [self, id, m, part = *part, unsealed] {
      propose_own_done(self, id, m);
      self->request(part, local_timeout, seal_atom::value, false)
        .then([unsealed](int64_t) { unsealed({}); }, [unsealed](caf::error& e) { unsealed(caf::to_string(e)); });
    },
    unsealed);
  return true;
}

}  // namespace

void confirm_own_moves(self_ptr self) {
  auto& st = self->state;
  if (!st.settings.shared || !st.journal)
    return;
  auto moves = st.owners->moves();
  const auto& me = st.settings.broker_id;
  const auto now = util::wall_ms();
  for (const auto& [id, m] : *moves) {
    if (m.to != me || (m.state != "cutover" && m.state != "offsets") || m.end < 0 || m.epoch <= 0)
      continue;
    // At the cutover's epoch: confirm in place. Above it an owner entry
    // applied (the confirm request's, or an earlier version's own
    // confirm): only the seal is left to lift, once. Another owner: taken
    // back or failed over.
    auto [owner, epoch] = st.owners->owner_and_epoch(m.tp);
    if (owner != me || epoch < m.epoch)
      continue;
    auto& own = st.own_confirms[id];
    const bool confirmed = cluster::destination_confirmed(me, static_cast<uint64_t>(m.epoch), owner,
                                                          static_cast<uint64_t>(epoch));
    if (own.unsealed) {
      // Serving at the cutover's epoch; its `done` has not applied yet.
      if (!confirmed && !own.done_in_flight && now - own.done_failed_ms >= reconcile_retry_ms)
        propose_own_done(self, id, m);
      continue;
    }
    if (own.in_flight || (own.failed_ms > 0 && now - own.failed_ms < reconcile_retry_ms))
      continue;
    if (!confirmed)
      logger()->info("move.own_confirm move={} topic={} partition={} from={} log_end={} epoch={}", id, m.tp.topic,
                     m.tp.partition, m.from, m.end, m.epoch);
    auto done = [self, id, tp = m.tp, end = m.end, confirmed](const std::string& error) {
      auto& own = self->state.own_confirms[id];
      own.in_flight = false;
      if (error.empty()) {
        own.failed_ms = 0;
        own.unsealed = true;
        if (!confirmed)
          logger()->info("move.confirmed topic={} partition={} log_end={} copy=none own=true", tp.topic,
                         tp.partition, end);
        return;
      }
      own.failed_ms = util::wall_ms();
      logger()->warn("move.own_confirm_failed move={} error=\"{}\"", id, error);
    };
    own.in_flight = confirmed ? unseal_confirmed(self, m, done) : confirm_in_place(self, id, m, done);
  }
  for (auto it = st.own_confirms.begin(); it != st.own_confirms.end();) {
    auto m = moves->find(it->first);
    bool keep = it->second.in_flight || it->second.done_in_flight
                || (m != moves->end() && !finished(m->second.state));
    it = keep ? std::next(it) : st.own_confirms.erase(it);
  }
}

void reconcile(self_ptr self) {
  auto& st = self->state;
  if (!st.journal)
    return;
  auto moves = st.owners->moves();
  const auto& me = st.settings.broker_id;
  for (const auto& [id, m] : *moves) {  // `moves` is an immutable snapshot; rows are looked up afresh
    if (st.settings.shared && (m.to == me || m.from == me))
      release_move_seal(self, id, m, *moves);
    if (m.from != me)
      continue;
    const auto* row = row_of(self, id);
    if (!row) {
      // The log has a move of this source that its journal does not (the
      // journal was lost, or a create committed after the move was failed
      // and pruned). Before cutover the source still owns the partition.
      if (m.state == "queued" || m.state == "copying")
        propose_once(self, id, move_payload(id, m.tp, m.from, m.to, "failed", {m.state}, "the source has no journal row"),
                     "no journal row");
      continue;
    }
    bool log_done = finished(m.state);
    bool journal_done = cluster::is_terminal(row->state);
    if (log_done && !journal_done && !finishes_itself(self, id, m))
      adopt(self, id);
    else if (!log_done && journal_done)
      log_journal_end(self, id, *row, m);
    else if (!log_done)
      log_journal_progress(self, id, *row, m);
  }
  // Journaled moves the log does not have yet: their create again, for a while.
  auto now = util::wall_ms();
  std::vector<std::pair<std::string, int64_t>> unlogged;  // copies: journal writes below rewrite the rows
  for (const auto& [id, row] : st.journal->entries())
    if (row.state == move_state::queued && !moves->count(id))
      unlogged.emplace_back(id, row.started_ms);
  for (const auto& [id, started] : unlogged) {
    if (now - started > create_wait_ms) {
      journal_to(self, id, move_state::failed,
                 "the metadata log did not take the move within " + std::to_string(create_wait_ms / 1000) + " s");
      continue;
    }
    if (auto it = st.reconciling.find(id); it == st.reconciling.end() || now - it->second >= reconcile_retry_ms)
      propose_create(self, id);
  }
  for (auto it = st.reconciling.begin(); it != st.reconciling.end();) {
    const auto* row = row_of(self, it->first);
    bool pending = row && row->state == move_state::queued && !moves->count(it->first);
    bool open = moves->count(it->first) && !finished(moves->at(it->first).state);
    it = pending || open ? std::next(it) : st.reconciling.erase(it);
  }
  for (auto it = st.released_seals.begin(); it != st.released_seals.end();)
    it = moves->count(*it) ? std::next(it) : st.released_seals.erase(it);
  start_queued(self);
  confirm_own_moves(self);
  // The controller's part: moves whose source is fenced.
  auto status = st.settings.raft_status ? st.settings.raft_status->get() : raft_status{};
  if (status.leader != me) {
    st.orphans.clear();
    return;
  }
  auto standing = st.owners->standing();
  for (const auto& [id, m] : *moves)
    if (m.from != me && !finished(m.state) && standing->fenced.count(m.from))
      drive_orphan(self, id, m);
  for (auto it = st.orphans.begin(); it != st.orphans.end();) {
    auto m = moves->find(it->first);
    bool keep = m != moves->end() && !finished(m->second.state) && standing->fenced.count(m->second.from);
    it = keep || it->second.in_flight ? std::next(it) : st.orphans.erase(it);
  }
}

}  // namespace moonmq::reassigner_detail

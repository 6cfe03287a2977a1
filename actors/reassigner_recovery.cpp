// How a move ends other than `done` (docs/cluster.md): a failure before cutover
// or a cancel discards the destination's copy, a failure after it rolls the
// ownership back, and a restart resumes or aborts every unfinished move.

#include <algorithm>

#include "actors/reassigner_impl.hpp"
#include "cluster/move_messages.hpp"
#include "raft/types.hpp"

// Continuations look their move up again by id instead of capturing a
// pointer that may dangle (see reassigner.cpp); the same names are deliberate.
#pragma GCC diagnostic ignored "-Wshadow"

namespace moonmq::reassigner_detail {
namespace {

/// Exchanges a cleanup may take without an answer before it is given up.
constexpr int cleanup_attempts = 3;

/// Sends a cleanup of move `id` to `peer`, again at once after an exchange
/// without an answer (cleanup_attempts in all: the destination discards
/// only while another broker owns the partition and its copy is still the
/// move's, so a repeat is harmless). Runs its callbacks on I/O threads.
void send_cleanup(transport::cluster_peer peer, std::string target, std::string body, int64_t epoch,
                  std::string holder, std::chrono::milliseconds timeout, std::string id, int made) {
  transport::call_peer(peer, "POST", target, body, epoch, holder, timeout,
                       [=](int status, json answer, std::string error) {
                         if (status == 0 && made + 1 < cleanup_attempts) {
                           send_cleanup(peer, target, body, epoch, holder, timeout, id, made + 1);
                           return;
                         }
                         auto code = transport::answer_error_code(answer);
                         if (status == 200 || status == 404)
                           logger()->info("move.cleanup_done move={} destination={}", id, peer.id);
                         else if (code == "stale_cleanup")  // a later move's copy is there now
                           logger()->info("move.cleanup_superseded move={} destination={}", id, peer.id);
                         else
                           logger()->warn("move.cleanup_failed move={} destination={} error=\"{}\"", id, peer.id,
                                          error.empty() ? "HTTP " + std::to_string(status) : error);
                       });
}

/// Best effort: asks the destination to discard its partial copy and name
/// `owner` as the partition's owner. A destination that does not answer
/// keeps its sealed copy, owned by the source in its table; the next
/// move's ensure resets it.
void cleanup_destination(self_ptr self, const cluster::move_entry& e, const std::string& controller) {
  auto peer = peer_of(self, e.to.value);
  if (!peer)
    return;
  auto epoch = static_cast<int64_t>(e.at.value);
  auto holder = controller;
  current_controller(self, epoch, holder);
  send_cleanup(*peer, tp_path(e.tp) + "/cleanup", cluster::to_json(cluster::move_cleanup{e.from.value, e.move_id}).dump(),
               epoch, holder, self->state.settings.peer_timeout, e.move_id, 0);
}

}  // namespace

// --- failure and cancel ------------------------------------------------------

/// Ends a move that has not reached cutover: the source never gave the
/// partition up, so ending is safe; the destination's copy is discarded.
void end_before_cutover(self_ptr self, const std::string& id, move_state final_state, const std::string& why) {
  auto* run = run_of(self, id);
  std::string controller = run ? run->controller : std::string{};
  if (run)
    save_progress(self, *run, true);  // the row keeps how far the copy got
  if (!journal_to(self, id, final_state, why))
    return;
  log_step_async(self, id, cluster::to_string(final_state), {"queued", "copying"}, why);
  const auto* row = row_of(self, id);
  cleanup_destination(self, *row, controller);
  self->state.running.erase(id);
  start_queued(self);
}

void fail(self_ptr self, const std::string& id, const std::string& why) {
  const auto* row = row_of(self, id);
  if (!row)
    return;
  if (row->state == move_state::queued || row->state == move_state::copying)
    end_before_cutover(self, id, move_state::failed, why);
  else if (row->state == move_state::cutover || row->state == move_state::draining)
    rollback(self, id, why);
  else
    logger()->error("move.unexpected_failure move={} state={} error=\"{}\"", id, cluster::to_string(row->state),
                    why);
}

// --- rollback -----------------------------------------------------------------

void rollback(self_ptr self, const std::string& id, const std::string& why) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  if (!run || !row)
    return;
  if (row->state != move_state::rolling_back && !journal_to(self, id, move_state::rolling_back, why))
    return;
  row = row_of(self, id);
  auto tp = row->tp;
  auto seq = ++run->seq;
  // The log's rolling_back entry names the source owner again, then it
  // unseals; until both are done produces are refused, never misplaced.
  // Conditional on the cutover's owner epoch: a destination that confirmed
  // keeps the partition (the log then ends the move done).
  auto logged = logged_move(self, id);
  auto expect_epoch = row->owner_epoch != 0 ? static_cast<int64_t>(row->owner_epoch) : logged ? logged->epoch : 0;
  // A cutover the log never took (its proposal failed): the source still
  // owns the partition there, so the move ends before cutover instead.
  bool before_cutover = logged && (logged->state == "queued" || logged->state == "copying");
  auto rolled_back = [self, id, tp, why] {
    auto* run = run_of(self, id);
    unseal_local(self, id, tp);
    if (!journal_to(self, id, move_state::failed, why))
      return;
    log_step_async(self, id, "failed", {"rolling_back"}, why);
    cleanup_destination(self, *row_of(self, id), run->controller);
    self->state.running.erase(id);
    start_queued(self);
  };
  auto step = before_cutover ? step_payload(self, id, "failed", {"queued", "copying"}, why)
                             : step_payload(self, id, "rolling_back", {"cutover", "offsets"}, why, -1, expect_epoch);
  propose_step(self, step, [self, id, seq, why, rolled_back](const caf::error* e) {
    auto* run = run_of(self, id);
    if (!run || run->seq != seq)
      return;
    if (!e) {
      rolled_back();
      return;
    }
    if (followed_log(self, id, *e, "rolling_back", rolled_back))  // an earlier try (or one before a restart) applied
      return;
    logger()->warn("move.rollback_retry move={} in_ms=1000 error=\"{}\"", id, message_of(*e));
    schedule(self, *run, 1000, [self, id, why] { rollback(self, id, why); });
  });
}

// --- the log ended it ---------------------------------------------------------------

namespace {

/// Ends the journal row of a move whose topic is gone (topic_gone): no
/// seal, reset, unseal or destination cleanup, as the partition of that name
/// is another topic's or none. The row is copied: journal writes rewrite rows.
void end_for_deleted_topic(self_ptr self, const std::string& id, cluster::move_entry row, const std::string& log_state) {
  auto why = "topic " + row.tp.topic + " was deleted after the move ended " + log_state + " in the metadata log";
  logger()->warn("move.topic_deleted move={} journal_state={} log_state={}", id, cluster::to_string(row.state),
                 log_state);
  if (log_state == "done") {  // the journal follows the log's end where a step leads there
    if (row.state != move_state::offsets)
      (void)journal_to(self, id, move_state::offsets);
    (void)journal_to(self, id, move_state::done, why);
    return;
  }
  if (cluster::is_past_cutover(row.state)) {
    if (row.state != move_state::rolling_back)
      (void)journal_to(self, id, move_state::rolling_back, why);
    (void)journal_to(self, id, move_state::failed, why);
    return;
  }
  (void)journal_to(self, id, log_state == "cancelled" ? move_state::cancelled : move_state::failed, why);
}

}  // namespace

void adopt(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto m = logged_move(self, id);
  const auto* row = row_of(self, id);
  if (!m || !raft::finished_move_state(m->state) || !row || cluster::is_terminal(row->state))
    return;
  std::string controller = st.holders[row->at.value];
  if (auto* run = run_of(self, id)) {
    ++run->seq;  // answers still in flight are ignored from here on
    controller = run->controller;
  }
  auto why = "ended in the metadata log: " + (m->error.empty() ? m->state : m->error);
  logger()->warn("move.adopted move={} journal_state={} log_state={} error=\"{}\"", id, cluster::to_string(row->state),
                 m->state, m->error);
  auto tp = row->tp;
  if (topic_gone(self, *m)) {
    // The partition of that name, if any, belongs to another topic now.
    end_for_deleted_topic(self, id, *row, m->state);
    st.running.erase(id);
    start_queued(self);
    return;
  }
  if (m->state == "done" && row->state == move_state::rolling_back) {
    // A rollback this source journaled while the destination's own `done`
    // (shared storage, in place) reached the log first: the journal allows
    // only `failed` from here, but the partition is the destination's and
    // holds every record. The row ends failed, saying so.
    (void)journal_to(self, id, move_state::failed,
                     "the destination confirmed before this source's rollback applied; the move is done in the "
                     "metadata log and the partition is " + row->to.value + "'s");
    reclaim_source(self, id, tp, m->end);
  } else if (m->state == "done") {
    if (row->state != move_state::offsets)
      (void)journal_to(self, id, move_state::offsets);
    (void)journal_to(self, id, move_state::done, why);
    if (m->end >= 0)
      reclaim_source(self, id, tp, m->end);
  } else {
    if (cluster::is_past_cutover(row->state)) {
      if (row->state != move_state::rolling_back)
        (void)journal_to(self, id, move_state::rolling_back, why);
      (void)journal_to(self, id, move_state::failed, why);
    } else {
      (void)journal_to(self, id, m->state == "cancelled" ? move_state::cancelled : move_state::failed, why);
    }
    // A source sealed for a cutover the log never took (or took back) serves again.
    if (st.owners->route(st.settings.broker_id, tp).where == partition_route::kind::local)
      unseal_local(self, id, tp);
    if (const auto* now = row_of(self, id))
      cleanup_destination(self, *now, controller);
  }
  st.running.erase(id);
  start_queued(self);
}

// --- restart ------------------------------------------------------------------

/// Applies recovery_decision to every unfinished row left by a restart.
void recover(self_ptr self) {
  auto& st = self->state;
  for (const auto& e : st.journal->unfinished()) {
    if (auto m = logged_move(self, e.move_id); m && raft::finished_move_state(m->state) && topic_gone(self, *m)) {
      end_for_deleted_topic(self, e.move_id, e, m->state);
      continue;
    }
    auto plan = cluster::recovery_decision(e);
    logger()->warn("move.recovering move={} topic={} partition={} state={} action={}", e.move_id, e.tp.topic,
                   e.tp.partition, cluster::to_string(e.state), plan.reason);
    if (plan.action == cluster::recovery_action::abort) {
      if (journal_to(self, e.move_id, plan.next, plan.reason)) {
        log_step_async(self, e.move_id, cluster::to_string(plan.next), {"queued", "copying"}, plan.reason);
        if (plan.cleanup_destination)
          cleanup_destination(self, *row_of(self, e.move_id), st.holders[e.at.value]);
      }
      continue;
    }
    auto& run = st.running[e.move_id];
    run.id = e.move_id;
    run.controller = st.holders[e.at.value];
    run.position = e.copy_position;
    run.bytes_copied = e.bytes_copied;
    run.bytes_total = e.bytes_total;
    if (plan.action == cluster::recovery_action::finish_rollback) {
      rollback(self, e.move_id, e.error.empty() ? plan.reason : e.error);
      continue;
    }
    // Resume past cutover: seal again (a restart unsealed it) and re-assert
    // the destination as owner, then carry on where the journal says.
    auto id = e.move_id;
    auto state = e.state;
    // `draining` and `offsets` are journaled only after the flip was
    // committed to the log: proposing it again could only be a blind write
    // over a later owner (the partition may have moved on since).
    bool flip = state != move_state::draining && state != move_state::offsets;
    seal_and_flip(self, id, [self, id, state] {
      if (state == move_state::offsets) {
        // The push may have been cut off by the crash: push again (merged,
        // higher wins), then confirm.
        auto* run = run_of(self, id);
        run->position = std::min(run->position, run->final_end);
        run->offsets_since_ms = util::wall_ms();  // the confirm timeout counts from the resume
        send_offsets(self, id);
        return;
      }
      if (self->state.settings.shared) {  // nothing to drain: on to the offsets (journaled there)
        push_offsets(self, id);
        return;
      }
      if (state == move_state::cutover && !journal_to(self, id, move_state::draining))
        return;
      // Where the destination's log ends decides where the drain restarts.
      auto* run = run_of(self, id);
      const auto* row = row_of(self, id);
      call(self, *run, row->to.value, "GET", tp_path(row->tp) + "/log-end", {}, false,
           [self, id](int status, json& answer, const std::string& error) {
             auto* run = run_of(self, id);
             if (status != 200 || !answer.contains("log_end_offset")
                 || !answer["log_end_offset"].is_number_integer()) {
               rollback(self, id, "resuming the drain: " + answer_error(status, answer, error));
               return;
             }
             auto dest_end = answer["log_end_offset"].get<int64_t>();
             if (dest_end > run->final_end) {
               rollback(self, id, "the destination's log is ahead of the sealed source");
               return;
             }
             run->position = dest_end;
             run->copy_restarts = 0;
             run->copy_answered_ms = util::wall_ms();
             drain_next(self, id);
           });
    }, flip);
  }
}

}  // namespace moonmq::reassigner_detail

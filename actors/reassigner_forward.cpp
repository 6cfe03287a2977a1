// The forward path of a move, step by step (docs/cluster.md "How a move runs"):
// ensure, copy with the throttle, cutover, drain, offsets and confirm, up to
// `done`. Failures hand over to reassigner_recovery.cpp (fail, rollback).

#include <algorithm>

#include "actors/reassigner_impl.hpp"
#include "cluster/move_messages.hpp"
#include "raft/types.hpp"

// Continuations look their move up again by id instead of capturing a
// pointer that may dangle (see reassigner.cpp); the same names are deliberate.
#pragma GCC diagnostic ignored "-Wshadow"

namespace moonmq::reassigner_detail {
namespace {

}  // namespace

// Steps of this file that are called above their definition.
void cutover(self_ptr self, const std::string& id);

// --- step 1: ensure ---------------------------------------------------------

/// Refusals of an ensure that a Raft election explains: the destination has
/// moved to a newer term than this broker knows (stale_epoch,
/// epoch_conflict) or knows no leader yet (no_controller). Retried, since an
/// ensure only (re)creates the destination's sealed copy.
bool election_refusal(int status, const json& answer) {
  auto code = transport::answer_error_code(answer);
  return (status == 409 && (code == "stale_epoch" || code == "epoch_conflict"))
         || (status == 503 && code == "no_controller");
}

/// Sends `ensure` (a fresh attempt each time) and goes on to the copy on
/// its answer. Retried after an election's refusal (ensure_attempts in
/// all, 200 ms doubling), and after an exchange that got no answer while
/// the first try (at `first_ms`) is less than two PeerTimeouts old: the
/// attempt, above every earlier one and kept across restarts by the wall
/// clock, lets the destination refuse an earlier ensure that arrives late.
void send_ensure(self_ptr self, const std::string& id, cluster::move_ensure ensure, int attempt, int64_t first_ms) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  ensure.move_id = id;
  ensure.attempt = std::max(ensure.attempt + 1, util::wall_ms());
  call(self, *run, row->to.value, "POST", tp_path(row->tp) + "/ensure", cluster::to_json(ensure).dump(), true,
       [self, id, attempt, first_ms, ensure](int status, json& answer, const std::string& error) {
         auto* run = run_of(self, id);
         const bool no_answer =
           status == 0
           && util::wall_ms() - first_ms < 2 * static_cast<int64_t>(self->state.settings.peer_timeout.count());
         if (status != 200 && (election_refusal(status, answer) || no_answer) && attempt + 1 < ensure_attempts) {
           // 200, 400, 800, 1600 ms: past an election with the default timeouts.
           auto delay = finish_backoff_min_ms << attempt;
           logger()->warn("move.ensure_retry move={} in_ms={} error=\"{}\"", id, delay,
                          answer_error(status, answer, error));
           schedule(self, *run, delay, [self, id, ensure, attempt, first_ms] {
             send_ensure(self, id, ensure, attempt + 1, first_ms);
           });
           return;
         }
         if (status != 200) {
           fail(self, id, "ensure on the destination failed: " + answer_error(status, answer, error));
           return;
         }
         const int64_t log_start = ensure.log_start_offset;
         run->copy_started_ms = util::wall_ms();
         run->copied_this_run = 0;
         run->rate = effective_throttle(self);
         if (self->state.settings.shared) {
           // Shared storage: the destination only sealed its partition;
           // the data is the shared directory's, so nothing is copied.
           save_progress(self, *run, true);
           cutover(self, id);
           return;
         }
         if (answer.contains("log_end_offset") && answer["log_end_offset"] != log_start) {
           fail(self, id, "the destination did not start its copy at the source's log start");
           return;
         }
         save_progress(self, *run, true);
         copy_next(self, id);
       });
}

void begin_copy(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  if (!run || !row)
    return;
  auto tp = row->tp;
  auto part = local_partition(self, tp);
  if (!part) {
    journal_to(self, id, move_state::copying);
    fail(self, id, "the partition is not held by this broker");
    return;
  }
  if (!journal_to(self, id, move_state::copying))
    return;
  log_step_async(self, id, "copying", {"queued"});
  auto seq = ++run->seq;
  self->request(*part, local_timeout, bounds_atom::value)
    .then(
      [self, id, seq, tp](int64_t log_start, int64_t log_end, int64_t size) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        run->position = log_start;
        // Shared storage: nothing to copy, whatever the partition holds.
        const bool shared = self->state.settings.shared;
        run->bytes_total = shared ? 0 : size;
        run->initial_total = shared ? 0 : size;
        auto topics = self->state.catalog->get();
        const auto& t = topics->at(tp.topic);
        auto owners = self->state.owners->get();
        cluster::move_ensure ensure;
        ensure.from = self->state.settings.broker_id;
        ensure.partitions = static_cast<int32_t>(t.partitions.size());
        ensure.log_start_offset = log_start;
        ensure.config = {{"segment.bytes", t.config.segment_bytes},
                         {"retention.bytes", t.config.retention_bytes},
                         {"retention.ms", t.config.retention_ms}};
        for (int32_t q = 0; q < ensure.partitions; ++q) {
          auto it = owners->find(cluster::topic_partition{tp.topic, q});
          ensure.owners[q] = it == owners->end() ? self->state.settings.broker_id : it->second;
        }
        const auto* row = row_of(self, id);
        logger()->info("move.ensure move={} topic={} partition={} to={} log_start={} log_end={} bytes={} copy={}", id,
                       tp.topic, tp.partition, row->to.value, log_start, log_end, size, shared ? "none" : "bytes");
        send_ensure(self, id, std::move(ensure), 0, util::wall_ms());
      },
      [self, id, seq](caf::error& e) {
        auto* run = run_of(self, id);
        if (run && run->seq == seq)
          fail(self, id, "reading the partition's bounds failed: " + caf::to_string(e));
      });
}

// --- steps 2 and 4: copy and drain --------------------------------------------

/// The drain's one append: reads one batch group at the move's position
/// from the local partition, sends it, and calls `after(sent_end,
/// source_log_end)` once the destination appended it (with sent_end == -1
/// when there was nothing to read). A failed append schedules drain_next
/// again within allow_restart's bounds, or rolls the move back.
void send_batch(self_ptr self, const std::string& id, std::function<void(int64_t, int64_t)> after) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  if (!run || !row)
    return;
  auto part = local_partition(self, row->tp);
  if (!part) {
    fail(self, id, "the partition is no longer held by this broker");
    return;
  }
  auto seq = ++run->seq;
  auto from = run->position;
  auto max_bytes = static_cast<int32_t>(std::min<int64_t>(self->state.settings.batch_bytes, 1LL << 30));
  self->request(*part, local_timeout, read_atom::value, from, max_bytes, false)
    .then(
      [self, id, seq, from, after](std::string& batches, int64_t, int64_t log_end) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        if (batches.empty()) {
          after(-1, log_end);
          return;
        }
        auto size = static_cast<int64_t>(batches.size());
        const auto* row = row_of(self, id);
        run->unsynced_bytes += size;
        bool sync = run->unsynced_bytes >= sync_every_bytes;
        if (sync)
          run->unsynced_bytes = 0;
        call(self, *run, row->to.value, "POST",
             tp_path(row->tp) + "/append?expected_offset=" + std::to_string(from) + (sync ? "&sync=true" : "&sync=false"),
             std::move(batches), false,
             [self, id, size, log_end, after](int status, json& answer, const std::string& error) {
               auto* run = run_of(self, id);
               auto appended = cluster::move_answer_from_json(answer);
               if (status != 200 || !appended) {
                 // Drained on from the destination's end (restart_from: at
                 // most the sealed end), or rolled back.
                 auto why = "append on the destination failed: " + answer_error(status, answer, error);
                 auto from = restart_from(*run, status, answer, run->final_end);
                 // One append at a time: a refusal that allows no step
                 // forward names an end below the confirmed position, so
                 // the destination lost records it confirmed (a restart).
                 if (status != 0 && from == run->position)
                   from = -1;
                 auto delay = allow_restart(self, *run, from, "drain", why);
                 if (delay < 0) {
                   fail(self, id, why);
                   return;
                 }
                 save_progress(self, *run, false);
                 schedule(self, *run, delay, [self, id] { drain_next(self, id); });
                 return;
               }
               run->copy_restarts = 0;
               run->copy_answered_ms = util::wall_ms();
               run->position = appended->log_end_offset;
               self->state.probe.bytes_sent(row_of(self, id)->to.value, static_cast<double>(size));
               run->bytes_copied += size;
               run->copied_this_run += size;
               run->bytes_total = std::max(run->bytes_total, run->bytes_copied);
               after(run->position, log_end);
             });
      },
      [self, id, seq, from](caf::error& e) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        int64_t lo = 0, hi = 0;
        if (out_of_range_bounds(e, lo, hi) && from < lo)
          fail(self, id, "retention removed records not yet copied (next " + std::to_string(from) + ", log start "
                           + std::to_string(lo) + "); retry the move");
        else
          fail(self, id, "reading the partition failed: " + caf::to_string(e));
      });
}

// --- step 3: cutover ------------------------------------------------------------

/// Seals the source and names the destination as the owner, durably.
/// `then` runs once both are done; failures roll the move back.
/// A failed seal or flip. Before `offsets` the move rolls back. From
/// `offsets` on (a restart resuming it) the destination may already have
/// confirmed, so the move only goes forward: the step is retried with
/// backoff (a Raft leader not yet known after the restart is the usual
/// cause) and the row carries the error meanwhile.
void flip_failed(self_ptr self, const std::string& id, const std::string& why, std::function<void()> then,
                 bool flip) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  if (!run || !row)
    return;
  // Shared storage: the cutover may have committed although its proposal
  // failed here (a timeout, an election). The destination then confirms in
  // place at once (the move may be `done` already), and a rollback would
  // be refused for ever: follow the log forward instead. The seal
  // held from the start (the log only takes a cutover after it).
  if (row->state != move_state::offsets && self->state.settings.shared) {
    if (auto m = logged_move(self, id);
        m && (m->state == "cutover" || m->state == "offsets" || m->state == "done") && m->epoch > 0) {
      if (run->final_end < 0)
        run->final_end = m->end;
      if (run->final_end >= 0) {
        logger()->warn("move.cutover_committed move={} error=\"{}\"", id, why);
        then();
        return;
      }
    }
  }
  if (row->state != move_state::offsets) {
    rollback(self, id, why);
    return;
  }
  run->note = why;
  logger()->warn("move.flip_retry move={} error=\"{}\"", id, why);
  auto delay = run->backoff_ms;
  run->backoff_ms = std::min(run->backoff_ms * 2, finish_backoff_max_ms);
  schedule(self, *run, delay, [self, id, then, flip] { seal_and_flip(self, id, then, flip); });
}

void seal_and_flip(self_ptr self, const std::string& id, std::function<void()> then, bool flip) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  auto part = local_partition(self, row->tp);
  if (!part) {
    flip_failed(self, id, "the partition is no longer held by this broker", then, flip);
    return;
  }
  auto seq = ++run->seq;
  // Shared storage: durably, so that a source restarted before its cutover
  // applied there stays sealed (its own copy's tail is not drained to the
  // destination: the destination takes the files over where they end).
  self->request(*part, local_timeout, seal_atom::value, true, self->state.settings.shared)
    .then(
      [self, id, seq, then, flip, part = *part](int64_t log_end) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        if (log_end < 0) {
          // Shared storage, a source restarted after its cutover applied:
          // its image names the destination, so the partition is closed
          // here. The sealed end is the one the `offsets` entry recorded.
          auto m = logged_move(self, id);
          if (!m || m->end < 0) {
            flip_failed(self, id, "the sealed end is unknown: the partition is closed here and the log recorded none",
                        then, flip);
            return;
          }
          log_end = m->end;
        }
        run->final_end = log_end;
        // The sealed log start, for the `offsets` entry: DeleteRecords
        // refuses a sealed partition, so it can only rise by retention
        // from here, and a start recorded too low loses nothing. Read
        // beside the flip, not before it (the cutover window stays short).
        self->request(part, local_timeout, bounds_atom::value)
          .then(
            [self, id](int64_t log_start, int64_t, int64_t) {
              if (auto* run = run_of(self, id))
                run->final_log_start = log_start;
            },
            [id](caf::error& e) {
              // Recorded without it: a controller confirming in this
              // broker's place keeps the destination's own log start.
              logger()->warn("move.log_start_unread move={} error=\"{}\"", id, caf::to_string(e));
            });
        if (!flip) {
          then();
          return;
        }
        auto seq2 = ++run->seq;
        // The cutover entry names the destination owner, applied only while
        // the log has the move before cutover (a cancel or a controller's
        // verdict may have ended it: then the log is followed). Shared
        // storage: it carries the sealed end, with which the destination
        // confirms in place as soon as it applies it (confirm_own_moves).
        propose_step(self, step_payload(self, id, "cutover", {"queued", "copying"}, {},
                                        self->state.settings.shared ? log_end : -1),
                     [self, id, seq2, then](const caf::error* err) {
              auto* run = run_of(self, id);
              if (!run || run->seq != seq2)
                return;
              if (!err) {
                then();
                return;
              }
              const auto& e = *err;
              if (followed_log(self, id, e, "cutover", then))
                return;
              const auto* row = row_of(self, id);
              const auto kind = fault_of(e);
              if (row && row->state == move_state::cutover && (kind == fault::unavailable || kind == fault::timeout)
                  && ++run->flip_attempts < flip_attempts) {
                // No leader to take it right now (an election): try again.
                auto delay = finish_backoff_min_ms << (run->flip_attempts - 1);
                logger()->warn("move.flip_retry move={} in_ms={} error=\"{}\"", id, delay, message_of(e));
                schedule(self, *run, delay, [self, id, then] { seal_and_flip(self, id, then, true); });
                return;
              }
              flip_failed(self, id, "recording the new owner failed: " + message_of(e), then, true);
            });
      },
      [self, id, seq, then, flip](caf::error& e) {
        auto* run = run_of(self, id);
        if (run && run->seq == seq)
          flip_failed(self, id, "sealing the partition failed: " + caf::to_string(e), then, flip);
      });
}

void cutover(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  save_progress(self, *run, true);
  if (!journal_to(self, id, move_state::cutover))
    return;
  seal_and_flip(self, id, [self, id] {
    if (self->state.settings.shared) {  // nothing to drain: `offsets` next (push_offsets journals it)
      push_offsets(self, id);
      return;
    }
    if (!journal_to(self, id, move_state::draining))
      return;
    auto* run = run_of(self, id);  // the drain's restarts in a row count from here
    run->copy_restarts = 0;
    run->copy_answered_ms = util::wall_ms();
    drain_next(self, id);
  });
}

/// Step 4: sends the tail written during the copy, up to the sealed log end.
/// A failed append restarts at the destination's end as the copy's do
/// (allow_restart); past those bounds, or any other failure, rolls the move
/// back (the destination is sealed until the confirm).
void drain_next(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  // Shared storage: the destination reads the sealed end from the shared
  // directory itself (its takeover at the cutover's epoch).
  if (run->position >= run->final_end || self->state.settings.shared) {
    push_offsets(self, id);
    return;
  }
  send_batch(self, id, [self, id](int64_t sent_end, int64_t) {
    auto* run = run_of(self, id);
    if (sent_end < 0 && run->position < run->final_end) {
      rollback(self, id, "the sealed log ends before its recorded end");
      return;
    }
    save_progress(self, *run, false);
    drain_next(self, id);
  });
}

// --- steps 5 and 6: offsets and confirm ---------------------------------------

void push_offsets(self_ptr self, const std::string& id) {
  // With the metadata log the cutover's owner change is applied here before
  // `offsets` is journaled: the cutover's epoch, which the log recorded with
  // the move, is the one a take-back expects. Never the epoch the image
  // names the destination owner at now: with shared storage the destination
  // may have confirmed by itself already, and a take-back conditional on
  // that later epoch could apply over a destination taking writes.
  uint64_t epoch = 0;
  {
    const auto* row = row_of(self, id);
    auto m = logged_move(self, id);
    auto [owner, at] = self->state.owners->owner_and_epoch(row->tp);
    if (m && m->epoch > 0)
      epoch = static_cast<uint64_t>(m->epoch);
    else if (owner == row->to.value && at > 0)  // no move in the log (it is never missing past the cutover)
      epoch = static_cast<uint64_t>(at);
  }
  // Journaled before the push and the confirm go out, whatever it costs the
  // sealed window: a source restarted with `cutover` in its journal rolls
  // back, which is right only while no confirm was sent (a destination
  // that confirmed would refuse the take-back for ever).
  if (!journal_to(self, id, move_state::offsets, {}, epoch))
    return;
  if (auto* run = run_of(self, id)) {
    run->offsets_since_ms = util::wall_ms();
    // The sealed end and log start (read at the seal), for a controller
    // that confirms in the source's place should this broker be fenced
    // (docs/cluster.md "Moves in the log").
    log_step_async(self, id, "offsets", {"cutover"}, {}, run->final_end, run->final_log_start);
  }
  send_offsets(self, id);
}

void send_offsets(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  auto tp = row->tp;
  auto seq = ++run->seq;
  // A failed try is retried with backoff; after the last one the move goes
  // on, and the partition's groups restart per their reset policy.
  auto failed = [self, id](const std::string& why) {
    auto* run = run_of(self, id);
    if (++run->offsets_attempts < offsets_push_attempts) {
      auto delay = finish_backoff_min_ms << (run->offsets_attempts - 1);
      logger()->warn("move.offsets_retry move={} in_ms={} error=\"{}\"", id, delay, why);
      schedule(self, *run, delay, [self, id] { send_offsets(self, id); });
      return;
    }
    run->note = "group offsets not pushed (consumers restart per their reset policy): " + why;
    logger()->warn("move.offsets_failed move={} error=\"{}\"", id, run->note);
    finish(self, id);
  };
  self->request(self->state.groups, local_timeout, offsets_atom::value, tp.topic, tp.partition)
    .then(
      [self, id, seq, tp, failed](std::string& list) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        auto offsets = json::parse(list, nullptr, false);
        if (offsets.is_array() && offsets.empty()) {
          // No group committed an offset of the partition here: nothing to
          // merge, and one round trip less inside the sealed window.
          finish(self, id);
          return;
        }
        auto body = cluster::to_json(cluster::move_offsets{tp.topic, tp.partition, std::move(offsets)});
        const auto* row = row_of(self, id);
        call(self, *run, row->to.value, "POST", "/cluster/offsets", body.dump(), true,
             [self, id, failed](int status, json& answer, const std::string& error) {
               if (status != 200) {
                 failed(answer_error(status, answer, error));
                 return;
               }
               finish(self, id);
             });
      },
      [self, id, seq, failed](caf::error& e) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        failed("group offsets not read: " + caf::to_string(e));
      });
}

void retry_finish(self_ptr self, const std::string& id, const std::string& why) {
  auto* run = run_of(self, id);
  auto limit = self->state.settings.confirm_timeout.count();
  if (limit > 0 && run->offsets_since_ms > 0 && !run->confirmed_in_log
      && util::wall_ms() - run->offsets_since_ms >= limit) {
    run->note = "the destination did not confirm within " + std::to_string(limit / 1000) + " s: " + why;
    take_back(self, id);
    return;
  }
  run->note = "confirm pending, retrying: " + why;
  logger()->warn("move.confirm_retry move={} in_ms={} error=\"{}\"", id, run->backoff_ms, why);
  auto delay = run->backoff_ms;
  run->backoff_ms = std::min(run->backoff_ms * 2, finish_backoff_max_ms);
  schedule(self, *run, delay, [self, id] { finish(self, id); });
}

void take_back(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  if (!run || !row)
    return;
  auto tp = row->tp;
  auto expected = static_cast<int64_t>(row->owner_epoch);
  auto [owner, epoch] = self->state.owners->owner_and_epoch(tp);
  const auto& self_id = self->state.settings.broker_id;
  switch (cluster::take_back_decision(*row, owner, cluster::journal_epoch(epoch),
                                      run->take_back_refused)) {
    case cluster::take_back_action::rollback:
      // An earlier take-back applied (its answer was lost, or this broker
      // restarted before journaling it).
      rollback(self, id, run->note + "; the source took the partition back");
      return;
    case cluster::take_back_action::keep_confirming:
      if (row->owner_epoch == 0)
        logger()->warn("move.no_take_back move={} reason=\"no owner epoch recorded at the cutover\"", id);
      run->confirmed_in_log = true;
      retry_finish(self, id,
                   row->owner_epoch == 0 ? run->note
                                         : "the destination confirmed in the log (owner epoch " + std::to_string(epoch)
                                             + "); waiting for its answer");
      return;
    case cluster::take_back_action::done:
      complete(self, id, "the destination confirmed; the partition has moved on to "
                           + (owner.empty() ? std::string{"no owner"} : owner) + " since");
      return;
    case cluster::take_back_action::wait:
      schedule(self, *run, 100, [self, id] { take_back(self, id); });
      return;
    case cluster::take_back_action::propose:
      break;
  }
  auto seq = ++run->seq;
  logger()->warn("move.taking_back move={} topic={} partition={} epoch={} reason=\"{}\"", id, tp.topic, tp.partition,
                 expected, run->note);
  // Conditional: applied only while the destination still holds the
  // partition at the cutover's epoch, i.e. it has not confirmed (its confirm
  // bumps the epoch before it unseals). The log orders the two; exactly one
  // applies. Repeating it after a timeout is harmless: at most one applies.
  // The move's rolling_back entry names this broker owner again, in the
  // same entry and under the same condition.
  (void)self_id;
  propose_step(self, step_payload(self, id, "rolling_back", {"cutover", "offsets"}, run->note, -1, expected),
               [self, id, seq](const caf::error* e) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        if (!e) {
          rollback(self, id, run->note + "; the source took the partition back");
          return;
        }
        if (error_code_of(*e) == "move_state_changed") {
          auto m = logged_move(self, id);
          if (m && raft::finished_move_state(m->state)) {
            adopt(self, id);
            return;
          }
          run->take_back_refused = true;  // decided by the image once it shows why (above)
        } else {
          run->backoff_ms = std::min(run->backoff_ms * 2, finish_backoff_max_ms);
        }
        schedule(self, *run, run->take_back_refused ? 100 : run->backoff_ms, [self, id] { take_back(self, id); });
      });
}

/// Step 6's request: the destination confirms ownership at the sealed end
/// and takes the source's log start.
void send_confirm(self_ptr self, const std::string& id, int64_t log_start) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  // The cutover's epoch: a destination that holds the partition at a later
  // one confirmed an earlier try (its answer lost, or the controller
  // confirmed in this broker's place while it was fenced) and may have
  // taken writes since, so its end no longer matches; it answers 200.
  auto body = cluster::to_json(
    cluster::move_confirm{self->state.settings.broker_id, run->final_end, log_start, static_cast<int64_t>(row->owner_epoch)});
  call(self, *run, row->to.value, "POST", tp_path(row->tp) + "/confirm", body.dump(), true,
       [self, id](int status, json& answer, const std::string& confirm_error) {
         // A destination that is no longer owner answers
         // owner_changed: it confirmed an earlier try of this confirm
         // (whose answer was lost) and the partition has moved on
         // since, so this move ended done.
         bool moved_on = status == 409 && transport::answer_error_code(answer) == "owner_changed";
         if (status != 200 && !moved_on) {
           retry_finish(self, id, "confirm: " + answer_error(status, answer, confirm_error));
           return;
         }
         auto* run = run_of(self, id);
         const auto* row = row_of(self, id);
         if (moved_on && self->state.owners->route(self->state.settings.broker_id, row->tp).where
                           == partition_route::kind::local) {
           // The owner the destination names is this broker: the
           // source took the partition back (take_back) and died
           // before journaling it. Finish that rollback.
           rollback(self, id, "the source took the partition back before a restart; the destination never "
                              "confirmed");
           return;
         }
         auto note = run->note.rfind("confirm pending", 0) == 0 ? std::string{} : run->note;
         if (moved_on)
           note = "confirmed before; the partition has moved on since (" + answer_error(status, answer, confirm_error)
                  + ")";
         complete(self, id, note);
       });
}

/// Makes sure the destination has every record up to the sealed end, then
/// asks it to confirm ownership. Retries until it does: once a confirm was
/// sent, its fate may be unknown, and rolling back could leave two owners.
void finish(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  if (self->state.owners->owner_and_epoch(row->tp).first == self->state.settings.broker_id) {
    // The log names this broker owner again: a take-back applied before a
    // restart (or its answer was lost). The destination never confirmed.
    rollback(self, id, "the source took the partition back; the destination never confirmed");
    return;
  }
  if (self->state.settings.shared) {
    // The destination confirms in place as soon as it applies the cutover
    // (confirm_own_moves in reassigner_log.cpp): the move's `done` at the
    // cutover's epoch (or, from an earlier version, its conditional owner
    // entry) is the confirm, and this broker completes when it sees it
    // (complete_confirmed_moves). The request is sent only when the
    // log has not shown it within own_confirm_wait_ms (a destination that
    // does not confirm by itself, or whose own confirm failed). Nothing
    // was copied, so nothing can be missing at the destination, and the
    // chain's log start is already the partition's: the destination only
    // checks its end (this broker's partition is closed by now).
    const auto now = util::wall_ms();
    if (run->own_confirm_wait_since_ms == 0)
      run->own_confirm_wait_since_ms = now;
    if (confirmed_by_destination(self, *row)) {
      complete_confirmed(self, id);
      return;
    }
    if (now - run->own_confirm_wait_since_ms < own_confirm_wait_ms) {
      schedule(self, *run, own_confirm_poll_ms, [self, id] { finish(self, id); });
      return;
    }
    send_confirm(self, id, run->final_log_start);
    return;
  }
  call(self, *run, row->to.value, "GET", tp_path(row->tp) + "/log-end", {}, false,
       [self, id](int status, json& answer, const std::string& error) {
         auto* run = run_of(self, id);
         if (status != 200 || !answer.contains("log_end_offset") || !answer["log_end_offset"].is_number_integer()) {
           retry_finish(self, id, "log end of the destination: " + answer_error(status, answer, error));
           return;
         }
         auto dest_end = answer["log_end_offset"].get<int64_t>();
         if (dest_end < run->final_end) {
           // The destination lost unsynced batches (it restarted): send them again.
           run->position = dest_end;
           auto part = local_partition(self, row_of(self, id)->tp);
           if (!part) {
             retry_finish(self, id, "the sealed source partition is gone");
             return;
           }
           auto seq = ++run->seq;
           auto max_bytes = static_cast<int32_t>(std::min<int64_t>(self->state.settings.batch_bytes, 1LL << 30));
           self->request(*part, local_timeout, read_atom::value, dest_end, max_bytes, false)
             .then(
               [self, id, seq, dest_end](std::string& batches, int64_t, int64_t) {
                 auto* run = run_of(self, id);
                 if (!run || run->seq != seq)
                   return;
                 const auto* row = row_of(self, id);
                 call(self, *run, row->to.value, "POST",
                      tp_path(row->tp) + "/append?expected_offset=" + std::to_string(dest_end) + "&sync=false",
                      std::move(batches), false, [self, id](int status, json& answer, const std::string& append_error) {
                        if (status != 200)
                          retry_finish(self, id, "catch-up append: " + answer_error(status, answer, append_error));
                        else
                          finish(self, id);
                      });
               },
               [self, id, seq](caf::error& e) {
                 auto* run = run_of(self, id);
                 if (run && run->seq == seq)
                   retry_finish(self, id, "reading the sealed source: " + caf::to_string(e));
               });
           return;
         }
         // The sealed source's log start is final (DeleteRecords refuses a
         // sealed partition): the destination takes it with the confirm.
         auto part = local_partition(self, row_of(self, id)->tp);
         if (!part) {
           retry_finish(self, id, "the sealed source partition is gone");
           return;
         }
         auto seq = ++run->seq;
         self->request(*part, local_timeout, bounds_atom::value)
           .then(
             [self, id, seq](int64_t log_start, int64_t, int64_t) {
               auto* run = run_of(self, id);
               if (run && run->seq == seq)
                 send_confirm(self, id, log_start);
             },
             [self, id, seq](caf::error& e) {
               auto* run = run_of(self, id);
               if (run && run->seq == seq)
                 retry_finish(self, id, "reading the sealed source's bounds: " + caf::to_string(e));
             });
       });
}

void reclaim_source(self_ptr self, const std::string& id, const cluster::topic_partition& tp, int64_t final_end) {
  auto part = local_partition(self, tp);
  if (!part)
    return;
  if (self->state.settings.shared) {
    // Never reset: this broker's epoch directory is every later epoch's
    // history. Its worker closed the partition when the image named the
    // destination; the seal is lifted once the image no longer names this
    // broker (a later hand-over back here must take writes), never before.
    if (self->state.owners->owner_and_epoch(tp).first != self->state.settings.broker_id)
      unseal_local(self, id, tp);
    return;
  }
  // The destination holds every record durably: reclaim the
  // source's copy (it stays sealed; its table routes to the owner).
  self->request(*part, local_timeout, reset_atom::value, final_end)
    .then([](int64_t) {},
          [id](caf::error& e) {
            logger()->warn("move.source_not_reclaimed move={} error=\"{}\"", id, caf::to_string(e));
          });
}

bool confirmed_by_destination(self_ptr self, const cluster::move_entry& row) {
  auto [owner, epoch] = self->state.owners->owner_and_epoch(row.tp);
  if (cluster::destination_confirmed(row.to.value, row.owner_epoch, owner, cluster::journal_epoch(epoch)))
    return true;
  // Shared storage: the destination's own `done` at the cutover's epoch
  // (reassigner_log.cpp confirm_in_place).
  auto m = logged_move(self, row.move_id);
  return self->state.settings.shared && m && m->state == "done";
}

void complete_confirmed_moves(self_ptr self) {
  auto& st = self->state;
  if (!st.settings.shared)
    return;
  std::vector<std::string> confirmed;  // complete() erases runs
  for (const auto& [id, run] : st.running)
    if (const auto* row = row_of(self, id); row && run.own_confirm_wait_since_ms > 0
                                           && row->state == move_state::offsets && confirmed_by_destination(self, *row))
      confirmed.push_back(id);
  for (const auto& id : confirmed)
    complete_confirmed(self, id);
}

void complete_confirmed(self_ptr self, const std::string& id) {
  const auto* run = run_of(self, id);
  logger()->info("move.confirmed_in_log move={} waited_ms={}", id,
                 run ? util::wall_ms() - run->own_confirm_wait_since_ms : 0);
  complete(self, id, {});
}

void complete(self_ptr self, const std::string& id, const std::string& note) {
  auto* run = run_of(self, id);
  auto final_end = run->final_end;
  if (!journal_to(self, id, move_state::done, note))
    return;
  log_step_async(self, id, "done", {"cutover", "offsets"}, note);
  const auto* row = row_of(self, id);
  self->state.probe.move_done(row->to.value, static_cast<double>(row->updated_ms - row->started_ms) / 1000.0);
  reclaim_source(self, id, row->tp, final_end);
  self->state.running.erase(id);
  start_queued(self);
}

}  // namespace moonmq::reassigner_detail

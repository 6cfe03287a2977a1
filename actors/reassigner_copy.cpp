// Step 2 of a move, the copy (docs/cluster.md "How a move runs"): the
// partition's batches from its log start, sent to the destination with a
// window of appends in flight, under the throttle, until the copy has
// caught up with the source's log end; then the cutover
// (reassigner_forward.cpp).
//
// The window: while up to Cluster.MoveWindow appends (4 by default; the
// destination holds at most 16 ahead of its log end, actors/
// io_worker_impl.hpp max_held_copies) are on the wire or being
// appended, the source already reads the next batch list. Appends travel
// over the peer client's keep-alive pool, so they may reach the destination
// out of order; each names the offset it starts at (`expected_offset`) and
// the destination's partition applies them in offset order, holding one
// that arrives ahead of its turn (partition_actor copy_atom with
// `expected`). Any failed append fails the move, as with one in flight.
//
// No append of the window waits for an fsync: the destination starts the
// writeback of its copy every 4 MiB on its own (actors/io_worker_impl.hpp
// copy_writeback_bytes), and one synced empty append before the cutover
// makes the whole copy durable.

#include <algorithm>
#include <string_view>
#include <vector>

#include "actors/reassigner_impl.hpp"
#include "cluster/move_messages.hpp"
#include "storage/record_batch.hpp"

// Continuations look their move up again by id instead of capturing a
// pointer that may dangle (see reassigner.cpp); the same names are deliberate.
#pragma GCC diagnostic ignored "-Wshadow"

namespace moonmq::reassigner_detail {

void cutover(self_ptr self, const std::string& id);

namespace {


/// One append's share of a read: whole batches from offset `from` to `end`,
/// at bytes [pos, pos + size) of the read.
struct piece {
  int64_t from = 0;
  int64_t end = 0;
  size_t pos = 0;
  size_t size = 0;
};

/// Splits a read (whole batches, as a partition read returns them) into
/// appends of at least `target` bytes each (the last may be smaller), in
/// offset order. Empty when the framing is broken or the offsets do not
/// follow on from `from`.
std::vector<piece> split_read(std::string_view batches, int64_t from, size_t target) {
  std::vector<piece> out;
  size_t pos = 0;
  while (pos < batches.size()) {
    auto h = storage::peek_batch_header(batches.substr(pos));
    if (!h || h->size > batches.size() - pos || h->last.value < from)
      return {};
    if (out.empty() || out.back().size >= target)
      out.push_back(piece{from, from, pos, 0});
    out.back().end = h->last.value + 1;
    out.back().size += h->size;
    from = h->last.value + 1;
    pos += h->size;
  }
  return out;
}

/// Cluster.MoveWindow, at least 1.
int64_t window_size(self_ptr self) {
  return std::max(1, self->state.settings.copy_window);
}

/// The run of move `id` while it is still copying under window generation
/// `gen`, else null (the move failed, was cancelled or moved on).
move_run* copying_run(self_ptr self, const std::string& id, int64_t gen) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  if (!run || !row || row->state != move_state::copying || run->window.gen != gen)
    return nullptr;
  return run;
}

/// Ends the window (late answers are then ignored) and fails the move.
void fail_copy(self_ptr self, move_run& run, const std::string& why) {
  ++run.window.gen;
  const std::string id = run.id;  // fail() may erase the run
  fail(self, id, why);
}

/// The log end an offset_mismatch answer names, or -1 for any other answer.
int64_t mismatch_end(int status, const json& answer) {
  if (status != 409 || transport::answer_error_code(answer) != "offset_mismatch"
      || !answer.contains("log_end_offset") || !answer["log_end_offset"].is_number_integer())
    return -1;
  return answer["log_end_offset"].get<int64_t>();
}

}  // namespace

int64_t restart_from(const move_run& run, int status, const json& answer, int64_t upper) {
  if (status == 0)
    return run.position;
  auto end = mismatch_end(status, answer);
  if (end < 0 || end > upper)
    return -1;
  return std::max(end, run.position);
}

int64_t allow_restart(self_ptr self, move_run& run, int64_t from, const char* step, const std::string& why) {
  if (from < 0 || run.copy_restarts_total >= max_copy_restarts_total)
    return -1;
  const bool progress = from > run.position;
  if (progress) {
    run.copy_restarts = 0;
    run.copy_answered_ms = util::wall_ms();
  }
  auto silent_ms = util::wall_ms() - run.copy_answered_ms;
  if (run.copy_restarts >= max_copy_restarts
      || silent_ms >= 2 * static_cast<int64_t>(self->state.settings.peer_timeout.count()))
    return -1;
  run.position = from;
  int64_t delay = progress ? 0 : 100LL << run.copy_restarts;
  if (!progress)
    ++run.copy_restarts;
  ++run.copy_restarts_total;
  logger()->warn("move.{}_retry move={} from={} in_ms={} attempt={} error=\"{}\"", step, run.id, from, delay,
                 run.copy_restarts, why);
  return delay;
}

namespace {

/// Opens a new window at the position a failed append's (or sync's)
/// answer allows (restart_from, up to the furthest end any window sent)
/// after allow_restart's delay: the old window's answers, read and throttle
/// wait are stale from now on. False when allow_restart allows none (the
/// caller then fails the move).
bool restart_window(self_ptr self, move_run& run, int status, const json& answer, const std::string& why) {
  auto delay = allow_restart(self, run, restart_from(run, status, answer, run.copy_sent_end), "copy", why);
  if (delay < 0)
    return false;
  auto& w = run.window;
  w.gen = ++run.seq;
  w.in_flight.clear();
  w.reading = false;
  w.caught_up = false;
  w.read_pos = run.position;
  save_progress(self, run, false);
  w.throttled = true;  // until the delay is over: copy_throttle_over opens the window
  self->delayed_send(self, std::chrono::milliseconds(delay), copy_atom::value, run.id, w.gen);
  return true;
}

/// Makes the destination fsync the copy so far (an empty synced append),
/// then cuts over: the confirm inside the cutover window then only syncs the
/// drained tail, which keeps the produce stall short.
void sync_then_cutover(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  save_progress(self, *run, false);
  call(self, *run, row->to.value, "POST",
       tp_path(row->tp) + "/append?expected_offset=" + std::to_string(run->position) + "&sync=true", {}, false,
       [self, id](int status, json& answer, const std::string& error) {
         if (status != 200) {
           auto why = "syncing the destination's copy failed: " + answer_error(status, answer, error);
           auto* run = run_of(self, id);
           const auto* row = row_of(self, id);
           // Still copying (not cancelled meanwhile): a lost exchange, or a
           // destination whose end is not the position, copies on.
           if (run && row && row->state == move_state::copying
               && restart_window(self, *run, status, answer, why))
             return;
           fail(self, id, why);
           return;
         }
         cutover(self, id);
       });
}

/// Sends batch list `batches` (from `from` to `end`) as one append.
void send_window_append(self_ptr self, move_run& run, int64_t from, std::string batches) {
  const auto* row = row_of(self, run.id);
  auto peer = peer_of(self, row->to.value);
  if (!peer) {
    fail_copy(self, run, "broker " + row->to.value + " is not a configured peer");
    return;
  }
  auto size = static_cast<int64_t>(batches.size());
  auto& w = run.window;
  w.in_flight.emplace(from, size);
  run.copied_this_run += size;  // the throttle counts what was sent
  auto handle = caf::actor_cast<reassigner_actor>(self);
  transport::call_peer(*peer, "POST",
                       tp_path(row->tp) + "/append?expected_offset=" + std::to_string(from) + "&sync=false",
                       std::move(batches), 0, run.controller, self->state.settings.peer_timeout,
                       [handle, id = run.id, gen = w.gen, from](int status, json answer, std::string error) {
                         caf::anon_send(handle, copy_atom::value, id, gen, from, static_cast<int32_t>(status),
                                        answer.is_null() ? std::string{} : answer.dump(), std::move(error));
                       });
}

}  // namespace

void copy_next(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  if (!run)
    return;
  auto& w = run->window;
  if (w.gen == 0) {  // the copy's first step: open the window at the log start
    w.gen = ++run->seq;
    w.read_pos = run->position;
    run->copy_answered_ms = util::wall_ms();
    run->copy_sent_end = std::max(run->copy_sent_end, run->position);
  }
  if (!copying_run(self, id, w.gen))
    return;
  if (w.caught_up) {
    if (w.in_flight.empty())
      sync_then_cutover(self, id);
    return;
  }
  if (w.reading || w.throttled || static_cast<int64_t>(w.in_flight.size()) >= window_size(self))
    return;
  // The throttle in force now (PATCH /admin/balancer changes it through the
  // metadata log); a new rate starts a new window, so it holds exactly
  // from the change on.
  auto rate = effective_throttle(self);
  if (rate != run->rate) {
    run->rate = rate;
    run->copy_started_ms = util::wall_ms();
    run->copied_this_run = 0;
  }
  if (rate > 0) {
    auto delay = run->copy_started_ms + run->copied_this_run * 1000 / rate - util::wall_ms();
    if (delay > 0) {
      w.throttled = true;
      auto gen = w.gen;
      self->delayed_send(self, std::chrono::milliseconds(delay), copy_atom::value, id, gen);
      return;
    }
  }
  auto part = local_partition(self, row_of(self, id)->tp);
  if (!part) {
    fail_copy(self, *run, "the partition is no longer held by this broker");
    return;
  }
  w.reading = true;
  auto gen = w.gen;
  auto from = w.read_pos;
  // One read fills the window's free room (a read waits behind the source
  // partition's fsyncs, so fewer, larger reads keep the window full), sent
  // as at most `room` appends. The room is counted in the largest append
  // seen so far (a batch larger than BatchBytes goes alone). Under a
  // throttle, one append of BatchBytes (or one larger batch) at a time.
  const int64_t room = rate > 0 ? 1 : window_size(self) - static_cast<int64_t>(w.in_flight.size());
  const auto per_append = rate > 0 ? self->state.settings.batch_bytes
                                   : std::max(self->state.settings.batch_bytes, w.largest_append);
  auto max_bytes = static_cast<int32_t>(std::min<int64_t>(per_append * room, 1LL << 30));
  self->request(*part, local_timeout, read_atom::value, from, max_bytes, false)
    .then(
      [self, id, gen, from, room](std::string& batches, int64_t, int64_t log_end) {
        auto* run = copying_run(self, id, gen);
        if (!run)
          return;
        auto& w = run->window;
        w.reading = false;
        if (batches.empty()) {  // nothing past the copy at the moment of the read: caught up
          w.caught_up = true;
          copy_next(self, id);
          return;
        }
        // Pieces of at least 1/room of the read: never more than `room`.
        const auto target = std::max<size_t>(static_cast<size_t>(self->state.settings.batch_bytes),
                                             (batches.size() + static_cast<size_t>(room) - 1) / static_cast<size_t>(room));
        auto pieces = split_read(batches, from, target);
        if (pieces.empty()) {
          fail_copy(self, *run, "reading the partition at " + std::to_string(from) + " gave a broken batch list");
          return;
        }
        const auto end = pieces.back().end;
        w.read_pos = end;
        for (const auto& one : pieces) {
          w.largest_append = std::max(w.largest_append, static_cast<int64_t>(one.size));
          if (run->bytes_copied + w.bytes_in_flight() + static_cast<int64_t>(one.size) > run->initial_total)
            ++run->extra_batches;
          run->copy_sent_end = std::max(run->copy_sent_end, one.end);
          send_window_append(self, *run, one.from,
                             pieces.size() == 1 ? std::move(batches) : batches.substr(one.pos, one.size));
          if (!copying_run(self, id, gen))
            return;
        }
        w.caught_up = end >= log_end || run->extra_batches > max_extra_batches;
        copy_next(self, id);
      },
      [self, id, gen, from](caf::error& e) {
        auto* run = copying_run(self, id, gen);
        if (!run)
          return;
        int64_t lo = 0, hi = 0;
        if (out_of_range_bounds(e, lo, hi) && from < lo)
          fail_copy(self, *run, "retention removed records not yet copied (next " + std::to_string(from)
                                  + ", log start " + std::to_string(lo) + "); retry the move");
        else
          fail_copy(self, *run, "reading the partition failed: " + caf::to_string(e));
      });
}

void copy_throttle_over(self_ptr self, const std::string& id, int64_t gen) {
  auto* run = copying_run(self, id, gen);
  if (!run)
    return;
  run->window.throttled = false;
  copy_next(self, id);
}

void copy_answer(self_ptr self, const std::string& id, int64_t gen, int64_t from, int32_t status,
                 const std::string& body, const std::string& error) {
  auto* run = copying_run(self, id, gen);
  if (!run)
    return;
  auto& w = run->window;
  auto sent = w.in_flight.find(from);
  if (sent == w.in_flight.end())
    return;
  auto size = sent->second;
  w.in_flight.erase(sent);
  auto answer = body.empty() ? json(nullptr) : json::parse(body, nullptr, false);
  auto appended = cluster::move_answer_from_json(answer);
  if (status != 200 || !appended) {
    auto why = "append on the destination failed: " + answer_error(status, answer, error);
    if (!restart_window(self, *run, status, answer, why))
      fail_copy(self, *run, why);
    return;
  }
  run->copy_restarts = 0;
  run->copy_answered_ms = util::wall_ms();
  // Answers may arrive out of order; the destination applied the lists in
  // order, so the highest log end answered is the copy's position.
  run->position = std::max(run->position, appended->log_end_offset);
  self->state.probe.bytes_sent(row_of(self, id)->to.value, static_cast<double>(size));
  run->bytes_copied += size;
  run->bytes_total = std::max(run->bytes_total, run->bytes_copied);
  save_progress(self, *run, false);
  copy_next(self, id);
}

}  // namespace moonmq::reassigner_detail

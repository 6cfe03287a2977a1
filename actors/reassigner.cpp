#include "actors/reassigner.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "cluster/move_journal.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

// Every continuation below looks its move up again by id (`run`, `row`)
// instead of capturing the pointer of the enclosing step, which may dangle
// once the move ended; the same names are deliberate.
#pragma GCC diagnostic ignored "-Wshadow"

namespace moonmq {
namespace {

using json = nlohmann::json;
using cluster::move_state;
using std::chrono::milliseconds;

/// How long a step waits for a local actor (partition, cluster state, groups).
constexpr milliseconds local_timeout{30000};
/// Terminal journal rows are kept this long (then pruned), for
/// GET /admin/reassignments and `moonmqctl reassign verify`.
constexpr int64_t keep_finished_ms = 24LL * 3600 * 1000;
/// Copy progress is journaled at most this often (each write is an fsync);
/// a restart never resumes a copy, so the position only has to be close.
constexpr int64_t progress_every_ms = 1000;
/// Batches copied beyond the partition's size at the start before cutting
/// over anyway: a producer faster than the copy must not keep a move in
/// `copying` forever; the drain (source sealed) then takes the rest.
constexpr int64_t max_extra_batches = 64;
/// The destination fsyncs its copy every this many bytes: the page cache
/// never holds a large unsynced copy whose writeback would stall the disk
/// (and every produce fsync on it) at cutover.
constexpr int64_t sync_every_bytes = 16LL << 20;
/// Backoff of the post-confirm retries (the move only goes forward there).
constexpr int64_t finish_backoff_min_ms = 200;
constexpr int64_t finish_backoff_max_ms = 5000;

int64_t now_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

using answer_fn = std::function<void(int status, json& body, const std::string& error)>;

/// The in-memory side of an unfinished move this actor is driving.
struct move_run {
  std::string id;
  /// Bumped for every request sent; answers carrying an older number are
  /// stale (the move was cancelled, or moved on) and ignored.
  int64_t seq = 0;
  std::string controller;          ///< X-Controller-Id sent with control-plane calls
  answer_fn on_answer;             ///< continuation of the pending peer request
  std::function<void()> on_step;   ///< continuation of a scheduled step
  int64_t position = 0;            ///< next source offset to send
  int64_t bytes_copied = 0;
  int64_t bytes_total = 0;
  int64_t initial_total = 0;       ///< size of the partition when the copy began
  int64_t final_end = -1;          ///< source log end once sealed (cutover)
  int64_t copy_started_ms = 0;
  int64_t copied_this_run = 0;     ///< bytes sent since copy_started_ms (throttle)
  int64_t last_progress_ms = 0;
  int64_t extra_batches = 0;
  int64_t unsynced_bytes = 0;      ///< sent since the destination last fsynced
  int64_t backoff_ms = finish_backoff_min_ms;
  std::string note;                ///< last transient error while retrying
};

struct reassigner_state {
  reassigner_settings settings;
  std::shared_ptr<catalog_view> catalog;
  std::shared_ptr<owner_view> owners;
  cluster_state_actor cstate;
  group_actor groups;
  std::optional<cluster::move_journal> journal;
  std::string open_error;
  std::map<std::string, move_run> running;
  /// Holder of each controller epoch moves run under (X-Controller-Id).
  std::map<uint64_t, std::string> holders;
  uint64_t next_id = 0;
  static inline const char* name = "reassigner";
};

using self_ptr = reassigner_actor::stateful_pointer<reassigner_state>;

auto logger() { return log::get("reassigner"); }

json row_json(const cluster::move_entry& e, const move_run* run) {
  json j{{"move_id", e.move_id},         {"topic", e.tp.topic},
         {"partition", e.tp.partition},  {"from", e.from.value},
         {"to", e.to.value},             {"epoch", e.at.value},
         {"state", cluster::to_string(e.state)},
         {"bytes_copied", run ? std::max(run->bytes_copied, e.bytes_copied) : e.bytes_copied},
         {"bytes_total", run ? std::max(run->bytes_total, e.bytes_total) : e.bytes_total},
         {"copy_position", run ? std::max(run->position, e.copy_position) : e.copy_position},
         {"started_ms", e.started_ms},   {"updated_ms", e.updated_ms}};
  if (e.state == move_state::done)  // everything was sent: the estimate is moot
    j["bytes_total"] = j["bytes_copied"];
  if (!e.error.empty())
    j["error"] = e.error;
  else if (run && !run->note.empty())
    j["error"] = run->note;
  return j;
}

const cluster::move_entry* row_of(self_ptr self, const std::string& id) {
  return self->state.journal ? self->state.journal->find(id) : nullptr;
}

move_run* run_of(self_ptr self, const std::string& id) {
  auto it = self->state.running.find(id);
  return it == self->state.running.end() ? nullptr : &it->second;
}

const transport::cluster_peer* peer_of(self_ptr self, const std::string& id) {
  for (const auto& p : self->state.settings.peers)
    if (p.id == id)
      return &p;
  return nullptr;
}

std::optional<partition_actor> local_partition(self_ptr self, const cluster::topic_partition& tp) {
  auto topics = self->state.catalog->get();
  auto t = topics->find(tp.topic);
  if (t == topics->end() || tp.partition < 0 || static_cast<size_t>(tp.partition) >= t->second.partitions.size())
    return std::nullopt;
  return t->second.partitions[static_cast<size_t>(tp.partition)];
}

std::string tp_path(const cluster::topic_partition& tp) {
  return "/cluster/partitions/" + tp.topic + "/" + std::to_string(tp.partition);
}

/// Journals `next` for move `id`; logs and returns false when refused.
bool journal_to(self_ptr self, const std::string& id, move_state next, const std::string& error = {}) {
  auto& st = self->state;
  if (auto* run = run_of(self, id); run && st.journal->find(id)
                                     && (next == move_state::cutover || next == move_state::offsets
                                         || next == move_state::done)) {
    const auto* row = st.journal->find(id);
    if (row->state == move_state::copying || row->state == move_state::draining)
      (void)st.journal->record_progress(id, std::max(run->bytes_copied, row->bytes_copied),
                                        std::max({run->bytes_total, run->bytes_copied, row->bytes_total}),
                                        std::max(run->position, row->copy_position), now_ms());
  }
  auto r = st.journal->transition(id, next, now_ms(), error);
  if (!r) {
    logger()->error("move.journal_failed move={} state={} error=\"{}\"", id, cluster::to_string(next),
                    r.err().message);
    return false;
  }
  // The journal logs every transition (move.<state> ...).
  return true;
}

void save_progress(self_ptr self, move_run& run, bool force) {
  auto now = now_ms();
  if (!force && now - run.last_progress_ms < progress_every_ms)
    return;
  run.last_progress_ms = now;
  const auto* row = self->state.journal->find(run.id);
  if (!row || (row->state != move_state::copying && row->state != move_state::draining))
    return;
  run.bytes_total = std::max(run.bytes_total, run.bytes_copied);
  if (auto r = self->state.journal->record_progress(run.id, std::max(run.bytes_copied, row->bytes_copied),
                                                    std::max(run.bytes_total, row->bytes_total),
                                                    std::max(run.position, row->copy_position), now);
      !r)
    logger()->warn("move.progress_not_saved move={} error=\"{}\"", run.id, r.err().message);
}

/// Sends a request for move `id` to `peer`; its answer resumes `then`.
void call(self_ptr self, move_run& run, const std::string& peer_id, const std::string& method,
          const std::string& target, std::string body, bool control, answer_fn then) {
  const auto* peer = peer_of(self, peer_id);
  run.on_answer = std::move(then);
  auto seq = ++run.seq;
  if (!peer) {
    json nothing;
    auto answer = std::move(run.on_answer);
    answer(0, nothing, "broker " + peer_id + " is not a configured peer");
    return;
  }
  const auto* row = row_of(self, run.id);
  auto epoch = control && row ? static_cast<int64_t>(row->at.value) : 0;
  auto handle = caf::actor_cast<reassigner_actor>(self);
  transport::call_peer(*peer, method, target, std::move(body), epoch, run.controller,
                       self->state.settings.peer_timeout,
                       [handle, id = run.id, seq](int status, json answer, std::string error) {
                         caf::anon_send(handle, step_atom::value, id, seq, static_cast<int32_t>(status),
                                        answer.is_null() ? std::string{} : answer.dump(), std::move(error));
                       });
}

/// Without Raft only the source and the destination learn of a move from
/// the move itself; the other peers are told the new owner (best effort, at
/// the move's epoch), so a broker holding another copy of the topic does not
/// send clients (Kafka Metadata, commits) to the old owner.
void announce_owner(self_ptr self, const cluster::move_entry& row, const std::string& controller) {
  if (self->state.settings.raft)
    return;
  json body{{"topic", row.tp.topic}, {"partition", row.tp.partition}, {"owner", row.to.value}};
  for (const auto& peer : self->state.settings.peers) {
    if (peer.id == row.to.value)
      continue;
    transport::call_peer(peer, "POST", "/cluster/owners", body.dump(), static_cast<int64_t>(row.at.value),
                         controller, self->state.settings.peer_timeout,
                         [id = row.move_id, peer = peer.id](int status, json answer, std::string error) {
                           if (status != 200)
                             logger()->info("move.announce_failed move={} peer={} status={} error=\"{}\"", id, peer,
                                            status, error.empty() ? answer.dump() : error);
                         });
  }
}

/// Schedules `then` for move `id` after `delay` (0 = next message).
void schedule(self_ptr self, move_run& run, int64_t delay_ms, std::function<void()> then) {
  run.on_step = std::move(then);
  auto seq = ++run.seq;
  if (delay_ms <= 0)
    self->send(self, step_atom::value, run.id, seq);
  else
    self->delayed_send(self, milliseconds(delay_ms), step_atom::value, run.id, seq);
}

std::string answer_error(int status, const json& body, const std::string& error) {
  if (!error.empty())
    return error;
  if (body.is_object() && body.contains("message") && body["message"].is_string())
    return "HTTP " + std::to_string(status) + ": " + body["message"].get<std::string>();
  return "HTTP " + std::to_string(status);
}

void start_queued(self_ptr self);
void begin_copy(self_ptr self, const std::string& id);
void copy_next(self_ptr self, const std::string& id);
void cutover(self_ptr self, const std::string& id);
void drain_next(self_ptr self, const std::string& id);
void push_offsets(self_ptr self, const std::string& id);
void finish(self_ptr self, const std::string& id);
void rollback(self_ptr self, const std::string& id, const std::string& why);

/// Best effort: asks the destination to discard its partial copy and name
/// `owner` as the partition's owner. A destination that does not answer
/// keeps its sealed copy, owned by the source in its table; the next
/// move's ensure resets it.
void cleanup_destination(self_ptr self, const cluster::move_entry& e, const std::string& controller) {
  const auto* peer = peer_of(self, e.to.value);
  if (!peer)
    return;
  transport::call_peer(*peer, "POST", tp_path(e.tp) + "/cleanup", json{{"owner", e.from.value}}.dump(),
                       static_cast<int64_t>(e.at.value), controller, self->state.settings.peer_timeout,
                       [id = e.move_id, to = e.to.value](int status, json, std::string error) {
                         if (status == 200 || status == 404)
                           logger()->info("move.cleanup_done move={} destination={}", id, to);
                         else
                           logger()->warn("move.cleanup_failed move={} destination={} error=\"{}\"", id, to,
                                          error.empty() ? "HTTP " + std::to_string(status) : error);
                       });
}

/// Ends a move that has not reached cutover: the source never gave the
/// partition up, so ending is safe; the destination's copy is discarded.
void end_before_cutover(self_ptr self, const std::string& id, move_state final_state, const std::string& why) {
  auto* run = run_of(self, id);
  std::string controller = run ? run->controller : std::string{};
  if (run)
    save_progress(self, *run, true);  // the row keeps how far the copy got
  if (!journal_to(self, id, final_state, why))
    return;
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

// --- step 1: ensure ---------------------------------------------------------

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
  auto seq = ++run->seq;
  self->request(*part, local_timeout, bounds_atom::value)
    .then(
      [self, id, seq, tp](int64_t log_start, int64_t log_end, int64_t size) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        run->position = log_start;
        run->bytes_total = size;
        run->initial_total = size;
        auto topics = self->state.catalog->get();
        const auto& t = topics->at(tp.topic);
        auto owners = self->state.owners->get();
        json owner_list = json::array();
        for (size_t q = 0; q < t.partitions.size(); ++q) {
          auto it = owners->find(cluster::topic_partition{tp.topic, static_cast<int32_t>(q)});
          owner_list.push_back(
            json{{"partition", q}, {"owner", it == owners->end() ? self->state.settings.broker_id : it->second}});
        }
        json body{{"from", self->state.settings.broker_id},
                  {"partitions", t.partitions.size()},
                  {"config",
                   {{"segment.bytes", t.config.segment_bytes},
                    {"retention.bytes", t.config.retention_bytes},
                    {"retention.ms", t.config.retention_ms}}},
                  {"log_start_offset", log_start},
                  {"owners", owner_list}};
        const auto* row = row_of(self, id);
        logger()->info("move.ensure move={} topic={} partition={} to={} log_start={} log_end={} bytes={}", id,
                       tp.topic, tp.partition, row->to.value, log_start, log_end, size);
        call(self, *run, row->to.value, "POST", tp_path(tp) + "/ensure", body.dump(), true,
             [self, id, log_start](int status, json& answer, const std::string& error) {
               if (status != 200) {
                 fail(self, id, "ensure on the destination failed: " + answer_error(status, answer, error));
                 return;
               }
               auto* run = run_of(self, id);
               run->copy_started_ms = now_ms();
               run->copied_this_run = 0;
               if (answer.contains("log_end_offset") && answer["log_end_offset"] != log_start) {
                 fail(self, id, "the destination did not start its copy at the source's log start");
                 return;
               }
               save_progress(self, *run, true);
               copy_next(self, id);
             });
      },
      [self, id, seq](caf::error& e) {
        auto* run = run_of(self, id);
        if (run && run->seq == seq)
          fail(self, id, "reading the partition's bounds failed: " + caf::to_string(e));
      });
}

// --- steps 2 and 4: copy and drain --------------------------------------------

/// Reads one batch group at the move's position from the local partition,
/// sends it, and calls `after(sent_end, source_log_end)` once the
/// destination appended it. `after` is called with sent_end == -1 when there
/// was nothing to read.
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
               if (status != 200 || !answer.is_object() || !answer.contains("log_end_offset")
                   || !answer["log_end_offset"].is_number_integer()) {
                 fail(self, id, "append on the destination failed: " + answer_error(status, answer, error));
                 return;
               }
               run->position = answer["log_end_offset"].get<int64_t>();
               metrics::registry::global()
                 .get_counter("moonmq_reassign_bytes_total", "Bytes a move sent to its destination (copy and drain)",
                              {{"dest", row_of(self, id)->to.value}})
                 .inc(static_cast<double>(size));
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

/// Makes the destination fsync the copy so far (an empty synced append),
/// then cuts over: the confirm inside the cutover window then only syncs the
/// drained tail, which keeps the produce stall short.
void sync_then_cutover(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  call(self, *run, row->to.value, "POST",
       tp_path(row->tp) + "/append?expected_offset=" + std::to_string(run->position) + "&sync=true", {}, false,
       [self, id](int status, json& answer, const std::string& error) {
         if (status != 200) {
           fail(self, id, "syncing the destination's copy failed: " + answer_error(status, answer, error));
           return;
         }
         cutover(self, id);
       });
}

void copy_next(self_ptr self, const std::string& id) {
  send_batch(self, id, [self, id](int64_t sent_end, int64_t log_end) {
    auto* run = run_of(self, id);
    if (sent_end < 0) {  // nothing left at the moment of the read: caught up
      sync_then_cutover(self, id);
      return;
    }
    save_progress(self, *run, false);
    if (run->bytes_copied >= run->initial_total)
      ++run->extra_batches;
    if (sent_end >= log_end || run->extra_batches > max_extra_batches) {
      sync_then_cutover(self, id);
      return;
    }
    int64_t delay = 0;
    if (auto rate = self->state.settings.throttle_bytes_per_sec; rate > 0) {
      auto due = run->copy_started_ms + run->copied_this_run * 1000 / rate;
      delay = due - now_ms();
    }
    schedule(self, *run, delay, [self, id] { copy_next(self, id); });
  });
}

// --- step 3: cutover ------------------------------------------------------------

/// Seals the source and names the destination as the owner, durably.
/// `then` runs once both are done; failures roll the move back.
void seal_and_flip(self_ptr self, const std::string& id, std::function<void()> then) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  auto part = local_partition(self, row->tp);
  if (!part) {
    rollback(self, id, "the partition is no longer held by this broker");
    return;
  }
  auto seq = ++run->seq;
  auto tp = row->tp;
  auto to = row->to.value;
  auto at = static_cast<int64_t>(row->at.value);
  self->request(*part, local_timeout, seal_atom::value, true)
    .then(
      [self, id, seq, tp, to, at, then](int64_t log_end) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        run->final_end = log_end;
        auto seq2 = ++run->seq;
        self->request(self->state.cstate, local_timeout, owner_atom::value, tp.topic, tp.partition, to, at)
          .then(
            [self, id, seq2, then](bool) {
              auto* run = run_of(self, id);
              if (run && run->seq == seq2)
                then();
            },
            [self, id, seq2](caf::error& e) {
              auto* run = run_of(self, id);
              if (run && run->seq == seq2)
                rollback(self, id, "recording the new owner failed: " + message_of(e));
            });
      },
      [self, id, seq](caf::error& e) {
        auto* run = run_of(self, id);
        if (run && run->seq == seq)
          rollback(self, id, "sealing the partition failed: " + caf::to_string(e));
      });
}

void cutover(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  save_progress(self, *run, true);
  if (!journal_to(self, id, move_state::cutover))
    return;
  seal_and_flip(self, id, [self, id] {
    if (!journal_to(self, id, move_state::draining))
      return;
    drain_next(self, id);
  });
}

/// Step 4: sends the tail written during the copy, up to the sealed log end.
/// Any failure rolls the move back (the destination does not own it yet).
void drain_next(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  if (run->position >= run->final_end) {
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
  if (!journal_to(self, id, move_state::offsets))
    return;
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
  auto tp = row->tp;
  auto seq = ++run->seq;
  self->request(self->state.groups, local_timeout, offsets_atom::value, tp.topic, tp.partition)
    .then(
      [self, id, seq, tp](std::string& list) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        json body{{"topic", tp.topic}, {"partition", tp.partition}, {"offsets", json::parse(list, nullptr, false)}};
        const auto* row = row_of(self, id);
        call(self, *run, row->to.value, "POST", "/cluster/offsets", body.dump(), true,
             [self, id](int status, json& answer, const std::string& error) {
               auto* run = run_of(self, id);
               if (status != 200) {
                 run->note = "group offsets not pushed (consumers restart per their reset policy): "
                             + answer_error(status, answer, error);
                 logger()->warn("move.offsets_failed move={} error=\"{}\"", id, run->note);
               }
               finish(self, id);
             });
      },
      [self, id, seq](caf::error& e) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        run->note = "group offsets not read: " + caf::to_string(e);
        finish(self, id);
      });
}

void retry_finish(self_ptr self, const std::string& id, const std::string& why) {
  auto* run = run_of(self, id);
  run->note = "confirm pending, retrying: " + why;
  logger()->warn("move.confirm_retry move={} in_ms={} error=\"{}\"", id, run->backoff_ms, why);
  auto delay = run->backoff_ms;
  run->backoff_ms = std::min(run->backoff_ms * 2, finish_backoff_max_ms);
  schedule(self, *run, delay, [self, id] { finish(self, id); });
}

/// Makes sure the destination has every record up to the sealed end, then
/// asks it to confirm ownership. Retries until it does: once a confirm was
/// sent, its fate may be unknown, and rolling back could leave two owners.
void finish(self_ptr self, const std::string& id) {
  auto* run = run_of(self, id);
  const auto* row = row_of(self, id);
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
         const auto* row = row_of(self, id);
         json body{{"from", self->state.settings.broker_id}, {"log_end_offset", run->final_end}};
         call(self, *run, row->to.value, "POST", tp_path(row->tp) + "/confirm", body.dump(), true,
              [self, id](int status, json& answer, const std::string& confirm_error) {
                if (status != 200) {
                  retry_finish(self, id, "confirm: " + answer_error(status, answer, confirm_error));
                  return;
                }
                auto* run = run_of(self, id);
                auto note = run->note.rfind("confirm pending", 0) == 0 ? std::string{} : run->note;
                auto final_end = run->final_end;
                if (!journal_to(self, id, move_state::done, note))
                  return;
                const auto* row = row_of(self, id);
                auto& reg = metrics::registry::global();
                reg.get_counter("moonmq_reassign_partitions_total", "Partition moves finished (done) as their source",
                                {{"dest", row->to.value}})
                  .inc();
                reg.get_histogram("moonmq_reassign_duration_seconds", "Time from a move's acceptance to done",
                                  {0.1, 0.5, 1, 5, 15, 60, 300, 1800, 7200})
                  .observe(static_cast<double>(row->updated_ms - row->started_ms) / 1000.0);
                if (auto* done_run = run_of(self, id))
                  announce_owner(self, *row, done_run->controller);
                // The destination holds every record durably: reclaim the
                // source's copy (it stays sealed; its table routes to the owner).
                if (auto part = local_partition(self, row->tp))
                  self->request(*part, local_timeout, reset_atom::value, final_end)
                    .then([](int64_t) {},
                          [id](caf::error& e) {
                            logger()->warn("move.source_not_reclaimed move={} error=\"{}\"", id, caf::to_string(e));
                          });
                self->state.running.erase(id);
                start_queued(self);
              });
       });
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
  auto at = static_cast<int64_t>(row->at.value);
  auto seq = ++run->seq;
  // The source's own table names it again (it is the owner), then it
  // unseals; until both are done produces are refused, never misplaced.
  self->request(self->state.cstate, local_timeout, owner_atom::value, tp.topic, tp.partition,
                self->state.settings.broker_id, at)
    .then(
      [self, id, seq, tp, why](bool) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        if (auto part = local_partition(self, tp))
          self->request(*part, local_timeout, seal_atom::value, false)
            .then([](int64_t) {}, [id](caf::error& e) {
              logger()->error("move.unseal_failed move={} error=\"{}\"", id, caf::to_string(e));
            });
        if (!journal_to(self, id, move_state::failed, why))
          return;
        cleanup_destination(self, *row_of(self, id), run->controller);
        self->state.running.erase(id);
        start_queued(self);
      },
      [self, id, seq, why](caf::error& e) {
        auto* run = run_of(self, id);
        if (!run || run->seq != seq)
          return;
        logger()->error("move.rollback_retry move={} error=\"{}\"", id, message_of(e));
        schedule(self, *run, 1000, [self, id, why] { rollback(self, id, why); });
      });
}

// --- queue and restart ----------------------------------------------------------

void start_queued(self_ptr self) {
  auto& st = self->state;
  if (!st.journal)
    return;
  std::vector<const cluster::move_entry*> queued;
  for (const auto& [id, e] : st.journal->entries())
    if (e.state == move_state::queued && !st.running.count(id))
      queued.push_back(&e);
  std::sort(queued.begin(), queued.end(), [](const auto* a, const auto* b) {
    return std::tie(a->started_ms, a->move_id) < std::tie(b->started_ms, b->move_id);
  });
  for (const auto* e : queued) {
    if (static_cast<int>(st.running.size()) >= st.settings.max_concurrent)
      break;
    auto id = e->move_id;
    auto& run = st.running[id];
    run.id = id;
    run.controller = st.holders[e->at.value];
    begin_copy(self, id);
  }
}

/// Applies recovery_decision to every unfinished row left by a restart.
void recover(self_ptr self) {
  auto& st = self->state;
  for (const auto& e : st.journal->unfinished()) {
    auto plan = cluster::recovery_decision(e);
    logger()->warn("move.recovering move={} topic={} partition={} state={} action={}", e.move_id, e.tp.topic,
                   e.tp.partition, cluster::to_string(e.state), plan.reason);
    if (plan.action == cluster::recovery_action::abort) {
      if (journal_to(self, e.move_id, plan.next, plan.reason) && plan.cleanup_destination)
        cleanup_destination(self, *row_of(self, e.move_id), st.holders[e.at.value]);
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
    seal_and_flip(self, id, [self, id, state] {
      if (state == move_state::offsets) {
        auto* run = run_of(self, id);
        run->position = std::min(run->position, run->final_end);
        finish(self, id);
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
             drain_next(self, id);
           });
    });
  }
}

caf::error coded(int status, const std::string& code, const std::string& message) {
  return make_coded_error(status, code, message);
}

reassigner_actor::behavior_type reassigner_fn(self_ptr self, reassigner_settings settings,
                                              std::shared_ptr<catalog_view> catalog,
                                              std::shared_ptr<owner_view> owners, cluster_state_actor cstate,
                                              group_actor groups) {
  auto& init = self->state;
  init.settings = std::move(settings);
  init.catalog = std::move(catalog);
  init.owners = std::move(owners);
  init.cstate = std::move(cstate);
  init.groups = std::move(groups);
  auto journal = cluster::move_journal::open(init.settings.data_dir);
  if (journal) {
    init.journal.emplace(std::move(journal.value()));
    if (auto pruned = init.journal->prune_finished(now_ms() - keep_finished_ms); pruned && *pruned > 0)
      logger()->info("move.pruned rows={}", *pruned);
    for (const auto& [id, e] : init.journal->entries())
      init.next_id = std::max<uint64_t>(init.next_id, static_cast<uint64_t>(e.started_ms));
    // The fence's holder names the controller of moves journaled under its
    // epoch; asked once, before any move resumes.
    caf::scoped_actor fence{self->system()};
    fence->request(init.cstate, local_timeout, get_atom::value)
      .receive([&](int64_t epoch, std::string& holder) { init.holders[static_cast<uint64_t>(epoch)] = holder; },
               [&](caf::error& e) { logger()->warn("move.fence_unavailable error=\"{}\"", caf::to_string(e)); });
    recover(self);
    start_queued(self);
  } else {
    init.open_error = journal.err().message;
    logger()->error("move.journal_unavailable error=\"{}\"", init.open_error);
  }
  return {
    [self](move_atom, std::string& topic, int32_t partition, std::string& to, int64_t at,
           std::string& controller) -> caf::result<std::string> {
      auto& st = self->state;
      if (!st.journal)
        return make_error(errc::not_ready, "move journal unavailable: " + st.open_error);
      cluster::topic_partition tp{topic, partition};
      if (topic.rfind("__", 0) == 0)
        return coded(400, "internal_topic", "internal topics (" + topic + ") never move");
      if (!local_partition(self, tp))
        return coded(404, "unknown_partition", "no partition " + topic + "/" + std::to_string(partition)
                                                 + " on broker " + st.settings.broker_id);
      auto owners = st.owners->get();
      if (auto it = owners->find(tp); it != owners->end() && it->second != st.settings.broker_id)
        return coded(421, "not_owner", topic + "/" + std::to_string(partition) + " is owned by broker " + it->second);
      if (to == st.settings.broker_id)
        return coded(400, "invalid_request", "broker " + to + " already owns " + topic + "/"
                                               + std::to_string(partition));
      if (!peer_of(self, to))
        return coded(400, "unknown_broker", "broker " + to + " is not a peer of " + st.settings.broker_id);
      auto rp = self->make_response_promise<std::string>();
      // A move runs under a controller epoch; an operator's move on a
      // cluster that never had a controller claims the first one.
      auto queue = [self, rp, tp, to](int64_t epoch, std::string holder) mutable {
        auto& st = self->state;
        auto now = now_ms();
        cluster::move_entry e;
        e.move_id = st.settings.broker_id + "-" + std::to_string(std::max<uint64_t>(++st.next_id, now));
        st.next_id = std::max<uint64_t>(st.next_id, static_cast<uint64_t>(now));
        e.tp = tp;
        e.from = cluster::broker_id{st.settings.broker_id};
        e.to = cluster::broker_id{to};
        e.at = cluster::epoch{static_cast<uint64_t>(epoch)};
        e.started_ms = now;
        st.holders[static_cast<uint64_t>(epoch)] = holder;
        if (auto r = st.journal->add(e); !r) {
          rp.deliver(coded(r.err().code == cluster::errc::move_in_progress ? 409 : 400,
                           cluster::to_string(r.err().code), r.err().message));
          return;
        }
        rp.deliver(row_json(*st.journal->find(e.move_id), nullptr).dump());
        start_queued(self);
      };
      if (at > 0) {
        queue(at, controller);
        return rp;
      }
      self->request(self->state.cstate, local_timeout, get_atom::value)
        .then(
          [self, rp, queue](int64_t epoch, std::string& holder) mutable {
            if (epoch > 0) {
              queue(epoch, holder);
              return;
            }
            self->request(self->state.cstate, local_timeout, claim_atom::value)
              .then([self, queue](int64_t claimed) mutable { queue(claimed, self->state.settings.broker_id); },
                    [rp](caf::error& e) mutable { rp.deliver(e); });
          },
          [rp](caf::error& e) mutable { rp.deliver(e); });
      return rp;
    },
    [self](cancel_atom, std::string& topic, int32_t partition) -> caf::result<std::string> {
      auto& st = self->state;
      if (!st.journal)
        return make_error(errc::not_ready, "move journal unavailable: " + st.open_error);
      const auto* row = st.journal->active_for(cluster::topic_partition{topic, partition});
      if (!row)
        return coded(404, "no_move", "no unfinished move of " + topic + "/" + std::to_string(partition));
      if (cluster::is_past_cutover(row->state))
        return coded(409, "past_cutover", "move " + row->move_id + " is in " + cluster::to_string(row->state)
                                            + ": past cutover it can only finish");
      auto id = row->move_id;
      if (auto* run = run_of(self, id))
        ++run->seq;  // answers still in flight are ignored from here on
      if (row->state == move_state::queued) {
        journal_to(self, id, move_state::cancelled, "cancelled by an operator");
        st.running.erase(id);
      } else {
        end_before_cutover(self, id, move_state::cancelled, "cancelled by an operator");
      }
      return row_json(*st.journal->find(id), nullptr).dump();
    },
    [self](list_atom) -> std::string {
      auto& st = self->state;
      json rows = json::array();
      if (st.journal)
        for (const auto& [id, e] : st.journal->entries())
          rows.push_back(row_json(e, run_of(self, id)));
      return rows.dump();
    },
    [self](step_atom, std::string& id, int64_t seq) {
      auto* run = run_of(self, id);
      if (!run || run->seq != seq || !run->on_step)
        return;
      auto next = std::move(run->on_step);
      run->on_step = nullptr;
      next();
    },
    [self](step_atom, std::string& id, int64_t seq, int32_t status, std::string& body, std::string& error) {
      auto* run = run_of(self, id);
      if (!run || run->seq != seq || !run->on_answer)
        return;
      auto next = std::move(run->on_answer);
      run->on_answer = nullptr;
      auto parsed = body.empty() ? json(nullptr) : json::parse(body, nullptr, false);
      if (parsed.is_discarded())
        parsed = nullptr;
      next(status, parsed, error);
    },
    [self](status_atom) -> std::string {
      auto& st = self->state;
      json j{{"broker_id", st.settings.broker_id},
             {"running", st.running.size()},
             {"max_concurrent", st.settings.max_concurrent},
             {"batch_bytes", st.settings.batch_bytes},
             {"throttle_bytes_per_sec", st.settings.throttle_bytes_per_sec}};
      if (!st.journal) {
        j["error"] = st.open_error;
        return j.dump();
      }
      json moves = json::array();
      for (const auto& e : st.journal->unfinished())
        moves.push_back(row_json(e, run_of(self, e.move_id)));
      j["unfinished"] = moves;
      j["journal"] = st.journal->file();
      return j.dump();
    },
  };
}

}  // namespace

std::string check_move_journal(const std::string& data_dir) {
  auto journal = cluster::move_journal::open(data_dir);
  return journal ? std::string{} : journal.err().message;
}

reassigner_actor spawn_reassigner(caf::actor_system& sys, reassigner_settings settings,
                                  std::shared_ptr<catalog_view> catalog, std::shared_ptr<owner_view> owners,
                                  cluster_state_actor state, group_actor groups, registry_actor reg) {
  auto a = sys.spawn<caf::detached>(reassigner_fn, std::move(settings), std::move(catalog), std::move(owners),
                                    std::move(state), std::move(groups));
  enroll(reg, caf::actor_cast<caf::actor>(a), "reassigner", "reassigner");
  return a;
}

}  // namespace moonmq

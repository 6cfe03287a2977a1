#pragma once
// Internal to the reassigner, included only by actors/reassigner*.cpp: the
// state of the actor and of each running move, the constants the steps share,
// and the functions one of those files calls in another (docs/cluster.md).

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "actors/balancer_probe.hpp"
#include "actors/reassigner.hpp"
#include "cluster/move_journal.hpp"
#include "util/clock.hpp"
#include "util/logging.hpp"

namespace moonmq::reassigner_detail {

using json = nlohmann::json;
using cluster::move_state;
using std::chrono::milliseconds;

/// How long a step waits for a local actor (partition, cluster state, groups).
constexpr milliseconds local_timeout{30000};
/// Backoff of the post-confirm retries (the move only goes forward there).
constexpr int64_t finish_backoff_min_ms = 200;
constexpr int64_t finish_backoff_max_ms = 5000;
/// Shared storage: how long a source waits for its destination's own
/// confirm to show in the log before it sends the confirm request itself,
/// and how often it looks meanwhile (besides every applied image). A
/// destination confirms within tens of milliseconds of the cutover.
constexpr int64_t own_confirm_wait_ms = 1000;
constexpr int64_t own_confirm_poll_ms = 100;
/// How often a control-plane request waiting for a known leader looks again.
constexpr int64_t leader_poll_ms = 200;
/// Tries of the group-offsets push before the move goes on without it
/// (200 + 400 + 800 + 1600 ms of backoff between them: longer than a Raft
/// election with the default ElectionTimeoutMs, during which a push
/// carrying the old term is refused).
constexpr int offsets_push_attempts = 5;
/// Tries of a move's ensure refused because a Raft election is under way
/// (the same backoff), before the move fails.
constexpr int ensure_attempts = 5;
// An ensure whose exchange got no answer (a lost request or answer, a
// timeout, a refused connection) is among those tries only while its first
// try was sent less than two PeerTimeouts ago, as the copy's restarts are
// bounded: a short cut or one lost message is outlasted, a destination
// that stays down fails the move. Each retry carries a higher attempt, so
// the destination refuses the earlier one should it still arrive
// (cluster::move_ensure).
/// Tries of the cutover's owner change refused for want of a Raft leader
/// (unavailable / timeout: no leader known, the forward to a dead leader refused, the
/// entry lost or not applied in time) before the move rolls back. Safe to
/// repeat: the same owner again, and a later rollback's entry follows it in
/// log order.
constexpr int flip_attempts = 5;

using answer_fn = std::function<void(int status, json& body, const std::string& error)>;

/// The drain (step 4, one append at a time) asks the destination to fsync
/// every this many bytes. The copy (step 2) never does: the destination
/// starts its writeback as it goes (io_worker_impl.hpp copy_writeback_bytes).
constexpr int64_t sync_every_bytes = 16LL << 20;
/// Batch lists copied beyond the partition's size at the start before
/// cutting over anyway: a producer faster than the copy must not keep a
/// move in `copying` forever; the drain (source sealed) then takes the rest.
constexpr int64_t max_extra_batches = 64;

/// Failed appends in a row (a lost request or answer, or the destination's
/// offset_mismatch after one) that restart the copy's window, or the
/// drain, at the destination's end before the move fails (rolls back, in
/// the drain), with a backoff of 100 ms doubling; and only while the
/// destination answered an append within the last two PeerTimeouts, so
/// that one timed-out exchange is retried and a destination that stays
/// down or stopped ends the move.
constexpr int max_copy_restarts = 5;
/// Restarts of one move's copy and drain in all, progress or not: a move
/// that keeps restarting ends (a move always ends).
constexpr int max_copy_restarts_total = 32;
/// Submission tokens remembered (reassigner_state::submissions): far more
/// than the moves one broker runs at once, so that a retry, sent within
/// seconds, always finds its own.
constexpr size_t max_submissions = 1024;

/// Step 2's window of appends in flight (reassigner_copy.cpp).
struct copy_window_state {
  int64_t gen = 0;           ///< answers and reads of another generation are stale (0 = not opened)
  int64_t read_pos = 0;      ///< next source offset to read
  bool reading = false;      ///< a read of the source is pending
  bool throttled = false;    ///< waiting for the throttle's next slot
  bool caught_up = false;    ///< nothing more to send before the cutover
  int64_t largest_append = 0;  ///< bytes of the largest append sent (sizes the reads)
  std::map<int64_t, int64_t> in_flight;  ///< appends sent, not answered: first offset -> bytes

  int64_t bytes_in_flight() const {
    int64_t n = 0;
    for (const auto& [from, bytes] : in_flight)
      n += bytes;
    return n;
  }
};

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
  int64_t final_log_start = -1;    ///< source log start once sealed, read at `offsets` (-1 = not read)
  int64_t copy_started_ms = 0;
  int64_t copied_this_run = 0;     ///< bytes sent since copy_started_ms (throttle)
  int64_t rate = -1;               ///< throttle the current window runs at (-1 = none yet)
  int64_t last_progress_ms = 0;
  int64_t extra_batches = 0;
  int64_t unsynced_bytes = 0;      ///< drained since the destination last fsynced
  copy_window_state window;        ///< step 2 (copy)
  int64_t backoff_ms = finish_backoff_min_ms;
  int offsets_attempts = 0;        ///< tries of the group-offsets push so far
  int flip_attempts = 0;           ///< tries of the cutover's owner change so far
  int copy_restarts = 0;           ///< restarts of the copy or drain since the last answered append
  int copy_restarts_total = 0;     ///< restarts of the copy and drain in all
  int64_t copy_answered_ms = 0;    ///< when the destination last answered an append (or the copy or drain began)
  int64_t copy_sent_end = 0;       ///< end of the furthest append any window of the copy sent
  int64_t offsets_since_ms = 0;    ///< when this run entered (or resumed) `offsets`
  /// Shared storage: since when the source has waited for the destination's
  /// own confirm to show in the log (0 = not waiting; finish in
  /// reassigner_forward.cpp).
  int64_t own_confirm_wait_since_ms = 0;
  /// The destination's epoch moved past the row's owner_epoch with the
  /// destination still owner: it confirmed, so the move is never taken back.
  bool confirmed_in_log = false;
  /// A take-back was refused: wait for the image to show the entry that
  /// moved the epoch instead of proposing again.
  bool take_back_refused = false;
  std::string note;                ///< last transient error while retrying
  /// When a control-plane request first found no controller to name (0 = it did not).
  int64_t leaderless_since_ms = 0;
};

/// A move of another source that this broker, as Raft leader, drives on
/// because its source is fenced (docs/cluster.md "Moves in the log").
struct orphan_run {
  int64_t first_seen_ms = 0;  ///< when this leader first found the source fenced
  bool in_flight = false;     ///< a proposal or the destination's confirm is pending
};

/// A destination's own confirm of a move (shared storage).
struct own_confirm {
  bool in_flight = false;
  bool unsealed = false;  ///< the end checked and the seal lifted here
  bool done_in_flight = false;  ///< its `done` step is being proposed
  int64_t done_failed_ms = 0;   ///< when the last `done` proposal failed: proposed again reconcile_retry_ms later
  int64_t failed_ms = 0;  ///< when the last try failed (0 = none did): retried reconcile_retry_ms later
};

struct reassigner_state {
  reassigner_settings settings;
  reassigner_probe probe;  ///< the reassigner's metrics
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
  /// The submission tokens of the moves queued here (token -> move id), so
  /// that a retried POST /cluster/moves answers the move it queued; the
  /// oldest go past max_submissions (in memory: a restart forgets them).
  std::map<std::string, std::string> submissions;
  std::deque<std::string> submission_order;
  /// When each move's step was last proposed by reconcile (id -> ms), so a
  /// slow commit is not proposed again on every tick.
  std::map<std::string, int64_t> reconciling;
  std::map<std::string, orphan_run> orphans;
  /// Shared storage: moves of this broker that the log ended and whose
  /// seal here was lifted (release_move_seal in reassigner_log.cpp).
  std::set<std::string> released_seals;
  /// Shared storage: this broker's own confirms of the moves to it
  /// (confirm_own_moves in reassigner_log.cpp), by move id.
  std::map<std::string, own_confirm> own_confirms;
  static inline const char* name = "reassigner";
};

using self_ptr = reassigner_actor::stateful_pointer<reassigner_state>;

inline auto logger() { return log::get("reassigner"); }

// Defined in reassigner.cpp: lookups, the journal, peer calls, the queue.

json row_json(const cluster::move_entry& e, const move_run* run, bool shared);
const cluster::move_entry* row_of(self_ptr self, const std::string& id);
move_run* run_of(self_ptr self, const std::string& id);
/// The peer `id` from the directory (configured or registered), if known.
std::optional<transport::cluster_peer> peer_of(self_ptr self, const std::string& id);
std::optional<partition_actor> local_partition(self_ptr self, const cluster::topic_partition& tp);
std::string tp_path(const cluster::topic_partition& tp);
/// `owner_epoch` (non-zero) is recorded in the same write (move_entry::owner_epoch).
bool journal_to(self_ptr self, const std::string& id, move_state next, const std::string& error = {},
                uint64_t owner_epoch = 0);
void save_progress(self_ptr self, move_run& run, bool force);
/// The move throttle in force (bytes/s, 0 = none): the metadata log's
/// MoveThrottleBytesPerSec when set, else Cluster.MoveThrottleBytesPerSec.
int64_t effective_throttle(self_ptr self);
/// Raises (epoch, controller) of a control-plane request to the current Raft
/// term and leader when Raft is on and the term is newer.
void current_controller(self_ptr self, int64_t& epoch, std::string& controller);
void call(self_ptr self, move_run& run, const std::string& peer_id, const std::string& method,
          const std::string& target, std::string body, bool control, answer_fn then);
void schedule(self_ptr self, move_run& run, int64_t delay_ms, std::function<void()> then);
std::string answer_error(int status, const json& body, const std::string& error);
void start_queued(self_ptr self);

// Moves in the metadata log (reassigner.cpp; docs/cluster.md "Moves in the log").

/// How often the journal and the log are compared, and orphans driven.
constexpr milliseconds reconcile_every{500};
/// A step reconcile proposed is not proposed again sooner than this.
constexpr int64_t reconcile_retry_ms = 2000;
/// The JSON payload of a `move` entry: step `state` of move `id`, applied
/// only from one of `expect` (empty = create) and, with `expect_epoch`,
/// while the partition is at that owner epoch. `end` and `log_start`
/// (-1 = none): the sealed source's log end and log start, which the
/// `offsets` step records.
std::string move_payload(const std::string& id, const cluster::topic_partition& tp, const std::string& from,
                         const std::string& to, const std::string& state, const std::vector<std::string>& expect,
                         const std::string& error, int64_t end = -1, int64_t expect_epoch = 0,
                         int64_t log_start = -1);
/// The same for a move of this broker's journal.
std::string step_payload(self_ptr self, const std::string& id, const std::string& state,
                         const std::vector<std::string>& expect, const std::string& error = {}, int64_t end = -1,
                         int64_t expect_epoch = 0, int64_t log_start = -1);
/// Proposes `payload` through the cluster state; `then(nullptr)` once
/// applied here, else `then(&error)` (conflict move_state_changed: a no-op).
void propose_step(self_ptr self, std::string payload, std::function<void(const caf::error*)> then);
/// Shared storage: the log shows move `id` done by its destination (in
/// place, reassigner_log.cpp confirm_in_place) while this source still runs
/// it past its cutover. Its run goes on to push the group offsets and then
/// completes by itself (finish sees the move confirmed), so it is not
/// adopted: adopting would drop the offsets push.
bool finishes_itself(self_ptr self, const std::string& id, const move_info& m);
/// Proposes a step the move does not wait for; a refusal because the log
/// has ended the move hands over to adopt(), other failures to reconcile().
void log_step_async(self_ptr self, const std::string& id, const std::string& state,
                    const std::vector<std::string>& expect, const std::string& error = {}, int64_t end = -1,
                    int64_t log_start = -1);
/// Proposes the creation of journaled move `id` in the log. Applied: the
/// move may start. Refused: the move fails, unless the partition's unfinished
/// move in the log is one this journal has ended (its end is proposed and
/// reconcile() tries again). Not answered: reconcile() tries again until
/// create_wait_ms after the move was journaled, then the move fails.
void propose_create(self_ptr self, const std::string& id);
constexpr int64_t create_wait_ms = 30000;
/// How long the Raft leader asks the destination of a fenced source's move
/// in `offsets` to confirm, when Cluster.MoveConfirmTimeoutSeconds is 0.
constexpr int64_t orphan_confirm_default_ms = 120000;
/// After a step that waits for the log was answered `err`: true when that
/// was a refusal the log explains — it has `target` already (an earlier try
/// applied: `proceed` runs) or has ended the move (adopt() runs).
bool followed_log(self_ptr self, const std::string& id, const caf::error& err, const std::string& target,
                  const std::function<void()>& proceed);
/// The move as the applied image records it, if it does.
std::optional<move_info> logged_move(self_ptr self, const std::string& id);
/// Unseals this broker's copy of `tp`, if it has one, after move `id` ended
/// with this broker as owner; a failure is logged (move.unseal_failed).
void unseal_local(self_ptr self, const std::string& id, const cluster::topic_partition& tp);
/// True when the topic a finished move of the log moved is gone: the log
/// deleted the name after the move's last step (perhaps creating it again
/// since). A deletion waits for every move of its topic to end, so a topic
/// not deleted since that step is the move's own (a topic the log never
/// held, e.g. one not imported yet, is not gone). Nothing of such a move may
/// touch the partition of that name (docs/metadata.md "Deleting a topic").
bool topic_gone(self_ptr self, const move_info& m);
/// Compares every move of this source in the image with the journal, and
/// (on the Raft leader) drives the moves of fenced sources.
void reconcile(self_ptr self);
/// Shared storage: confirms, on this broker, every move to it whose cutover
/// applied here (the image names it owner at the cutover's epoch and holds
/// the sealed end), without waiting for the source's confirm request.
/// Called when a new image is applied and on every reconcile.
void confirm_own_moves(self_ptr self);
/// Shared storage, on a source: completes every move waiting in `finish`
/// whose destination's own confirm the image now shows (called when a new
/// image is applied).
void complete_confirmed_moves(self_ptr self);
/// Completes move `id`, whose destination's own confirm the log shows.
void complete_confirmed(self_ptr self, const std::string& id);

// Defined in reassigner_forward.cpp: ensure, cutover, drain, offsets, confirm.

void begin_copy(self_ptr self, const std::string& id);
/// Seals the source, then (with `flip`) records the destination as owner.
void seal_and_flip(self_ptr self, const std::string& id, std::function<void()> then, bool flip = true);
void drain_next(self_ptr self, const std::string& id);

// Defined in reassigner_copy.cpp: restarts after a failed append of the
// copy or the drain (docs/cluster.md "Moves under network faults").

/// The position a failed append's answer allows the copy or the drain to
/// go on from, or -1 when it allows none:
///  - a failed exchange (`status` 0): the confirmed position (the append
///    may or may not have been applied: the next one finds out);
///  - an offset_mismatch naming an end between the confirmed position and
///    `upper`, the furthest end the destination can rightly hold (what any
///    window of the copy sent; the sealed end for the drain): that end (an
///    answer was lost, or appends of an earlier window landed after it);
///  - one naming an end below the confirmed position (an answer overtaken
///    by a later one, or a refusal of a held append): the confirmed position.
/// A destination claiming more than `upper` allows none.
int64_t restart_from(const move_run& run, int status, const json& answer, int64_t upper);
/// Counts a restart of step `step` ("copy" or "drain") at `from` and moves
/// the run's position there: the delay before the next append in ms (0
/// after progress, i.e. `from` past the confirmed position; else 100 ms
/// doubling), or -1 when none is allowed: `from` < 0, max_copy_restarts in
/// a row without progress or max_copy_restarts_total in all, or a
/// destination silent for two PeerTimeouts (one timed-out exchange is
/// retried, a destination that stays silent is not).
int64_t allow_restart(self_ptr self, move_run& run, int64_t from, const char* step, const std::string& why);
/// Step 5: journals `offsets` (with the cutover's owner epoch), records the
/// sealed end in the log, pushes the group offsets, then confirms.
void push_offsets(self_ptr self, const std::string& id);
void finish(self_ptr self, const std::string& id);
/// With Raft, after Cluster.MoveConfirmTimeoutSeconds in `offsets`: takes
/// the partition back by a conditional owner change at the epoch the
/// destination holds it at, then rolls back; refused (the epoch moved on:
/// the destination confirmed) the move is done.
void take_back(self_ptr self, const std::string& id);
/// The move is done: journals it (with `note`), reclaims the source's copy
/// and starts the next queued move.
void complete(self_ptr self, const std::string& id, const std::string& note);
/// The log shows the destination's confirm of the move: its conditional
/// owner entry moved the epoch past the cutover's (row.owner_epoch).
bool confirmed_by_destination(self_ptr self, const cluster::move_entry& row);
/// After `done`: resets the source's copy to an empty log at `final_end`.
/// Shared storage: never resets (later epochs read its files); lifts the
/// seal once the image no longer names this broker owner.
void reclaim_source(self_ptr self, const std::string& id, const cluster::topic_partition& tp, int64_t final_end);
/// Step 5 without its journal write: pushes the partition's committed group
/// offsets to the destination (merged there, higher wins, so a repeat is
/// harmless), retried up to offsets_push_attempts times, then finish().
/// Recovery in `offsets` calls it too: a push the crash cut off is redone.
void send_offsets(self_ptr self, const std::string& id);

// Defined in reassigner_copy.cpp: step 2 with a window of appends in flight.

/// Reads and sends the next batch lists while the window has room, the
/// throttle allows and the copy has not caught up; once it has and every
/// append is answered, syncs the destination and cuts over.
void copy_next(self_ptr self, const std::string& id);
/// The throttle's wait of window generation `gen` is over.
void copy_throttle_over(self_ptr self, const std::string& id, int64_t gen);
/// The destination's answer to the append of window generation `gen` that
/// starts at `from`.
void copy_answer(self_ptr self, const std::string& id, int64_t gen, int64_t from, int32_t status,
                 const std::string& body, const std::string& error);

// Defined in reassigner_recovery.cpp: failure, cancel, rollback, restart.

void end_before_cutover(self_ptr self, const std::string& id, move_state final_state, const std::string& why);
void fail(self_ptr self, const std::string& id, const std::string& why);
void rollback(self_ptr self, const std::string& id, const std::string& why);
void recover(self_ptr self);
/// The log ended move `id` (done, failed or cancelled) while this broker's
/// journal has it unfinished: the journal follows, the source unseals when
/// the log names it owner, and the destination's copy is cleaned up.
void adopt(self_ptr self, const std::string& id);

}  // namespace moonmq::reassigner_detail

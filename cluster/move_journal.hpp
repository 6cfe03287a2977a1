#pragma once
// The source-side journal of partition moves (DESIGN §3, MOVE steps 1–6):
// one row per move with its state and copy progress, made durable before the
// step it names starts, so that a restarted source knows, per move, whether
// to abort it or carry it forward (recovery_decision below; the protocol and
// the rules are in docs/cluster.md).
//
// States (CONTRACT §4, plus `rolling_back`):
//   queued → copying → cutover → draining → offsets → done
//   queued | copying            → failed | cancelled   (owner is still the source)
//   cutover | draining          → rolling_back → failed (owner restored to the source)
// Ordering contract with the ownership table: `cutover` is journaled BEFORE
// the source flips ownership to the destination, and `rolling_back` BEFORE it
// flips it back. Hence: in queued/copying the source still owns the
// partition; from cutover on (until rolling_back) the owner is the
// destination or about to be — re-applying the flip is idempotent.
//
// On disk: `<data_dir>/reassign-journal.json`, rewritten whole on every change
// with util::write_file_atomic:
//   {"version":1,"moves":[{"move_id":"m-1","topic":"orders","partition":3,
//     "from":"b1","to":"b2","epoch":4,"state":"copying","bytes_copied":262144,
//     "bytes_total":1048576,"copy_position":812,"error":"",
//     "started_ms":1700000000000,"updated_ms":1700000001000}]}
// A corrupt file is refused with corrupt_state naming the file; a left-over
// `.tmp` is ignored. Not thread-safe: the source's reassigner owns it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/types.hpp"

namespace moonmq::cluster {

/// Where a move is. Names as in CONTRACT §4 (`rolling_back` is an addition).
enum class move_state {
  queued,        ///< accepted, nothing sent to the destination yet
  copying,       ///< steps 1–2: ensure the topic on the destination, stream batches
  cutover,       ///< step 3: ownership flips to the destination (journaled before the flip)
  draining,      ///< step 4: the tail written on the source during the copy goes across
  offsets,       ///< steps 5–6: group offsets pushed, the destination confirms ownership
  rolling_back,  ///< a post-cutover step failed: ownership goes back to the source
  done,          ///< finished: the destination owns the partition
  failed,        ///< ended without moving; the destination's partial copy is removed
  cancelled,     ///< cancelled by an operator before cutover
};

/// "queued", "copying", ..., "rolling_back".
const char* to_string(move_state s);
/// Inverse of to_string; nullopt for an unknown name.
std::optional<move_state> parse_move_state(std::string_view name);
/// done, failed or cancelled.
bool is_terminal(move_state s);
/// True when cancelling must be refused (409): cutover and every later state.
bool is_past_cutover(move_state s);
/// True when `from` → `to` is an edge of the state machine above.
bool allowed_transition(move_state from, move_state to);

/// One journal row.
struct move_entry {
  std::string move_id;     ///< unique in the journal; [A-Za-z0-9._-]{1,128}
  topic_partition tp;
  broker_id from;          ///< the source (this broker)
  broker_id to;            ///< the destination
  epoch at;                ///< controller epoch under which the move runs (stamps ownership changes)
  move_state state = move_state::queued;
  int64_t bytes_copied = 0;   ///< bytes acknowledged by the destination (copy + drain)
  int64_t bytes_total = 0;    ///< bytes to send as last estimated (grows while writes continue)
  int64_t copy_position = 0;  ///< next source offset to send (records below it are on the destination)
  std::string error;          ///< why it failed / was cancelled, or a warning on a done move
  int64_t started_ms = 0;     ///< ms since the epoch
  int64_t updated_ms = 0;     ///< ms since the epoch, last change
  /// Who asked for the move: "operator" (POST /admin/reassignments),
  /// "balancer" (the balance loop), or "" in rows written before origins.
  /// A move an operator made is in the balancer's cooldown for
  /// Autobalance.ManualMoveCooldownSeconds (docs/balancer.md).
  std::string origin;
  /// Why the move exists, one line: what an operator wrote
  /// (POST /admin/reassignments "reason"), or the balancer's goal and its
  /// reason ("NW_IN: b1 is at 1.42x the mean ..."; "drain: ..." for a
  /// draining broker's partition). "" when none was given, and in rows
  /// written before reasons. valid_move_reason holds for it.
  std::string reason;
  /// With the metadata log: the destination's owner epoch when the move
  /// entered `offsets` (after the cutover, before any confirm), the epoch a
  /// take-back expects (docs/metadata.md "Owner epochs"); 0 = unknown (rows
  /// written before epochs, moves without Raft): never taken back.
  uint64_t owner_epoch = 0;
};

/// True for a move origin a journal row may hold ("operator", "balancer", "").
inline bool valid_move_origin(const std::string& o) { return o.empty() || o == "operator" || o == "balancer"; }

/// Most bytes a move's reason holds.
inline constexpr std::size_t max_move_reason_bytes = 256;
/// True for a reason a journal row may hold: valid UTF-8, one line (no
/// control character, C0, DEL or C1, and no U+2028 or U+2029), at most
/// max_move_reason_bytes bytes.
bool valid_move_reason(std::string_view r);
/// `text` made a valid reason: control characters and bytes that are not
/// UTF-8 become spaces and '?', and it is cut at a character boundary to
/// at most max_move_reason_bytes bytes ("..." ending a cut one). For
/// reasons this broker writes itself (a goal plugin's text is untrusted).
std::string clip_move_reason(std::string_view text);

/// What a restarted source does with a journal row (see docs/cluster.md).
enum class recovery_action {
  none,             ///< terminal: nothing to do
  abort,            ///< before cutover: end as failed; owner stays the source
  resume,           ///< past cutover: re-assert the destination as owner, rerun `resume_at` onwards
  finish_rollback,  ///< rolling back: restore the source as owner, remove the copy, end as failed
};

struct recovery_plan {
  recovery_action action = recovery_action::none;
  /// Step to rerun (resume) or the final state to journal (abort, finish_rollback).
  move_state next = move_state::done;
  /// Remove the destination's partial copy (so that a retry starts clean).
  bool cleanup_destination = false;
  /// set_owner(tp, to, at) again before continuing (idempotent).
  bool reassert_destination_owner = false;
  /// clear(tp, at) on the source's table: the source owns it again.
  bool restore_source_owner = false;
  /// Text for the journal's `error` field and the log.
  std::string reason;
};

/// The recovery rule for `e` after a restart of the source (pure):
///   queued        → abort to failed (nothing was sent; no cleanup)
///   copying       → abort to failed, cleanup_destination
///   cutover       → resume at cutover (re-assert owner, drain from copy_position)
///   draining      → resume at draining (re-assert owner, drain from copy_position)
///   offsets       → resume at offsets (re-assert owner, push offsets, confirm)
///   rolling_back  → finish_rollback to failed (restore source owner, cleanup)
///   done/failed/cancelled → none
recovery_plan recovery_decision(const move_entry& e);

/// An owner epoch as the applied image holds it (signed; below 0 means
/// none) in the journal's unsigned terms: 0, "not known", for none.
inline uint64_t journal_epoch(int64_t image_epoch) {
  return image_epoch > 0 ? static_cast<uint64_t>(image_epoch) : 0;
}

/// True when the log shows that a move's destination confirmed it: `to`
/// still owns the partition (`owner`) at an epoch above the cutover's
/// (`cutover_epoch`, 0 = not known: never confirmed by this rule). A
/// confirm by request (its answer to the source's, or one in a fenced
/// source's place) is a conditional owner entry that moves the epoch past
/// the cutover's before the destination unseals, and a take-back expects
/// the cutover's epoch, so the log applies exactly one of them
/// (docs/cluster.md "Moves in the log"). A shared-storage destination's
/// own confirm is a `done` at the cutover's epoch instead, which this rule
/// does not see: its callers also read the move's state. Used by the source (to
/// complete, and never to take back), the controller for a fenced source's
/// move, and take_back_decision.
bool destination_confirmed(const std::string& to, uint64_t cutover_epoch, const std::string& owner, uint64_t epoch);

/// What a source does about a move in `offsets` whose destination has not
/// confirmed within Cluster.MoveConfirmTimeoutSeconds (docs/metadata.md
/// "Owner epochs"), from its applied image.
enum class take_back_action {
  propose,          ///< propose owner = source, expect_epoch = the row's owner_epoch
  wait,             ///< a take-back was refused; the image has not shown why yet: read it again soon
  rollback,         ///< the image names the source owner: a take-back applied; finish the rollback
  keep_confirming,  ///< the destination confirmed in the log (or no epoch is known): only its answer ends the move
  done,             ///< the destination confirmed and the partition moved on since: the move is over
};
const char* to_string(take_back_action a);

/// `owner` / `epoch`: the partition as the source's image names it now;
/// `e.owner_epoch`: the destination's epoch when the move entered
/// `offsets` (0 = unknown); `refused`: a take-back of this run was refused.
/// The destination bumps the epoch (with a conditional entry) before it
/// unseals, so an epoch above the row's with the destination still owner
/// proves it confirmed, and nothing may be taken back from it.
take_back_action take_back_decision(const move_entry& e, const std::string& owner, uint64_t epoch, bool refused);

class move_journal {
 public:
  /// File name under the data directory.
  static constexpr const char* file_name = "reassign-journal.json";

  /// Loads `<data_dir>/reassign-journal.json` (creating `data_dir` when
  /// missing). Errors: io_error, corrupt_state (names the file and field).
  static result<move_journal> open(const std::string& data_dir);

  /// Adds a queued move, durably. `e.state` must be queued; updated_ms is set
  /// to started_ms. Errors: invalid_argument (bad id/topic/partition/broker,
  /// from == to, negative numbers, a move id already in the journal),
  /// move_in_progress (an unfinished move of the same partition), io_error.
  status add(move_entry e);

  /// Moves `move_id` to `next` at `now_ms`, durably. `error` (required for
  /// failed, cancelled and rolling_back; optional note otherwise) replaces
  /// the row's error when non-empty. Errors: unknown_move,
  /// invalid_transition (names both states), invalid_argument, io_error.
  status transition(const std::string& move_id, move_state next, int64_t now_ms, const std::string& error = {},
                    uint64_t owner_epoch = 0);

  /// Records copy progress in copying or draining, durably. `bytes_copied`
  /// and `copy_position` never go back; bytes_copied <= bytes_total.
  /// Errors: unknown_move, invalid_transition (another state),
  /// invalid_argument, io_error.
  status record_progress(const std::string& move_id, int64_t bytes_copied, int64_t bytes_total,
                         int64_t copy_position, int64_t now_ms);

  /// Drops terminal rows last updated before `before_ms`. Returns how many.
  /// Errors: io_error (nothing dropped).
  result<size_t> prune_finished(int64_t before_ms);

  /// The row of `move_id`, or nullptr.
  const move_entry* find(const std::string& move_id) const;
  /// The unfinished move of `tp`, or nullptr.
  const move_entry* active_for(const topic_partition& tp) const;
  /// Every row, by move id.
  const std::map<std::string, move_entry>& entries() const { return moves_; }
  /// Rows not in a terminal state, by move id.
  std::vector<move_entry> unfinished() const;
  /// The most recent row of `tp` (largest started_ms, then move id), or nullptr.
  const move_entry* latest_for(const topic_partition& tp) const;
  /// Path of the journal's file.
  const std::string& file() const { return file_; }

 private:
  explicit move_journal(std::string file) : file_(std::move(file)) {}
  status write(const std::map<std::string, move_entry>& moves) const;
  status replace_row(const move_entry& row);

  std::string file_;
  std::map<std::string, move_entry> moves_;
};

}  // namespace moonmq::cluster

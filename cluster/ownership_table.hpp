#pragma once
// The durable ownership table of one broker (DESIGN §3, without Raft):
// topic-partition -> owner broker id. An absent entry means the partition is
// owned by the broker that holds it locally; an entry names the owner.
//
// Every entry records the controller epoch of the change that wrote it, and a
// change carrying a lower epoch than the entry is refused (stale_epoch): a
// superseded controller cannot undo a newer controller's move. Equal epochs
// are accepted (one controller may move a partition and roll it back within
// its epoch). `clear` leaves a tombstone (owner = none, epoch kept) so the
// fence survives the clear; replace_all raises a table-wide floor epoch.
//
// On disk: `<data_dir>/cluster-assignments.json`, rewritten whole on every
// change with util::write_file_atomic:
//   {"version":1,"floor_epoch":0,
//    "entries":[{"topic":"orders","partition":3,"owner":"b2","epoch":5},
//               {"topic":"orders","partition":4,"owner":null,"epoch":6}]}
// A file that does not parse or has a wrong field is refused with
// corrupt_state naming the file: the table never silently resets (that would
// send produces to the wrong broker). A left-over `.tmp` is ignored.
//
// Not thread-safe: one owner (the broker's ownership actor) calls it.

#include <map>
#include <optional>
#include <string>

#include "cluster/types.hpp"

namespace moonmq::cluster {

/// One row of the table.
struct ownership_entry {
  /// The owner; nullopt = cleared (a tombstone: owned by the local holder).
  std::optional<broker_id> owner;
  /// Controller epoch of the change that wrote this row.
  epoch changed_at;

  friend bool operator==(const ownership_entry& a, const ownership_entry& b) {
    return a.owner == b.owner && a.changed_at == b.changed_at;
  }
};

class ownership_table {
 public:
  /// File name under the data directory.
  static constexpr const char* file_name = "cluster-assignments.json";

  /// Loads `<data_dir>/cluster-assignments.json` (creating `data_dir` when
  /// missing; an absent file is an empty table). Errors: io_error (names the
  /// path), corrupt_state (names the file and the bad field).
  static result<ownership_table> open(const std::string& data_dir);

  /// The owner an entry names, or nullopt (absent or cleared: owned by the
  /// broker holding the partition locally).
  std::optional<broker_id> owner_of(const topic_partition& tp) const;

  /// owner_of(tp), else `local` (the broker asking, when it holds tp).
  broker_id owner_or(const topic_partition& tp, const broker_id& local) const;

  /// Records `owner` for `tp` at epoch `at`, durably before returning.
  /// Errors: invalid_argument (bad topic, partition < 0, bad broker id),
  /// stale_epoch (`at` below the row's epoch or the floor; error::highest is
  /// that epoch), io_error (nothing changed, in memory or on disk).
  status set_owner(const topic_partition& tp, const broker_id& owner, epoch at);

  /// Clears `tp` (owned locally again) at epoch `at`, keeping a tombstone with
  /// the epoch. Clearing an absent row writes the tombstone too. Errors: as
  /// set_owner.
  status clear(const topic_partition& tp, epoch at);

  /// Replaces every row with `owners`, each stamped with `at`; rows not in
  /// `owners` are dropped and `at` becomes the floor epoch below which any
  /// later change is stale (e.g. installing a Raft snapshot or an operator's
  /// table). Errors: invalid_argument (a bad row), stale_epoch (`at` below the
  /// highest epoch in the table), io_error (nothing changed).
  status replace_all(const std::map<topic_partition, broker_id>& owners, epoch at);

  /// Every partition whose row names an owner, sorted.
  std::map<topic_partition, broker_id> snapshot() const;
  /// Every row, tombstones included, sorted.
  const std::map<topic_partition, ownership_entry>& entries() const { return rows_; }
  /// Epoch below which every change is stale (0 until a replace_all).
  epoch floor() const { return floor_; }
  /// Path of the table's file.
  const std::string& file() const { return file_; }

 private:
  explicit ownership_table(std::string file) : file_(std::move(file)) {}
  status check_change(const topic_partition& tp, epoch at) const;
  status write(const std::map<topic_partition, ownership_entry>& rows, epoch floor) const;

  std::string file_;
  std::map<topic_partition, ownership_entry> rows_;
  epoch floor_;
};

}  // namespace moonmq::cluster

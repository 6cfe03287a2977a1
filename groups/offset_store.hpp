#pragma once
// Durable committed offsets per (group, topic, partition), kept apart from
// membership: fencing by generation takes the group's current generation as
// an argument (from group_state), so the store knows nothing of members.
//
// On disk (one file per group, rewritten whole on every change):
//   <data_dir>/__groups/<group>/offsets.json
//   {"version":1,"group":"<group>","offsets":[{"topic":"t","partition":0,"offset":42}, ...]}
// An entry carries "metadata":"<string>" when its commit attached a
// non-empty one (files written before metadata was kept read as "").
// written with util::write_file_atomic (offsets.json.tmp, fsync, rename,
// fsync of the directory). A crash at any moment leaves offsets.json holding
// either the previous or the new contents, never a mix; a left-over
// offsets.json.tmp belongs to a write that was never acknowledged and is
// discarded by open(). A group is a directory (not <group>.json) so that the
// longest group id (249 characters) plus ".json.tmp" still fits NAME_MAX (255).
//
// Not thread-safe: one owner (the group coordinator) calls it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "groups/types.hpp"

namespace moonmq::groups {

/// Generation fencing of a commit (Kafka's OffsetCommit generationId check).
struct commit_fence {
  /// The generation the committing client sent; nullopt = no fencing.
  std::optional<generation> request;
  /// The group's current generation (group_state::current_generation()).
  generation current;
};

class offset_store {
 public:
  /// Opens (creating when missing) `<data_dir>/__groups` and loads every
  /// group's offsets. Errors: io_error (the directory cannot be created or a
  /// file read; message names the path), corrupt_state (a group's
  /// offsets.json does not parse or has the wrong shape; message names the
  /// file and the field — the store refuses to open rather than forget
  /// acknowledged commits). Entries under __groups whose name is not a valid
  /// group id, and group directories without offsets.json, are skipped.
  static result<offset_store> open(const std::string& data_dir);

  /// Loads `<data_dir>/__groups` as open() does without writing anything:
  /// a missing directory is an empty store, a left-over offsets.json.tmp is
  /// ignored, not removed. Every later change is refused with io_error.
  /// For offsets another writer may still hold (groups/epoch_offsets.hpp).
  /// Errors: as open().
  static result<offset_store> open_read_only(const std::string& data_dir);

  /// Commits `offsets` (each the next offset to read; partition >= 0,
  /// offset >= 0, non-empty topic) for `group` as one durable write: when it
  /// returns ok, every entry survives a crash; on error nothing changed.
  /// A later entry for the same partition in `offsets` wins.
  /// Errors: invalid_group_id, invalid_argument, illegal_generation
  /// (fence.request given and != fence.current), io_error.
  status commit(const std::string& group, const std::vector<partition_offset>& offsets,
                const commit_fence& fence = {});

  /// Committed offsets of `group`, optionally only of `topic`, sorted by
  /// (topic, partition). A valid group with no commits gives an empty list.
  /// Errors: invalid_group_id.
  result<std::vector<partition_offset>> fetch(const std::string& group,
                                              const std::optional<std::string>& topic = std::nullopt) const;

  /// One committed offset, or nullopt when none (Kafka answers -1).
  std::optional<int64_t> committed(const std::string& group, const std::string& topic, int32_t partition) const;

  /// Stores `offset` only when it is higher than the committed one (or none
  /// is committed): used when a moved partition's offsets arrive from the
  /// source broker (DESIGN §3 step 5, higher wins). Returns whether it was
  /// stored. Errors: invalid_group_id, invalid_argument, io_error.
  result<bool> set_if_higher(const std::string& group, const std::string& topic, int32_t partition,
                             int64_t offset, const std::string& metadata = {});

  /// Every group's committed offset for (topic, partition), sorted by group:
  /// what the source of a move pushes to the destination.
  std::vector<group_offset> offsets_for_partition(const std::string& topic, int32_t partition) const;

  /// Forgets (topic, partition) in every group (e.g. after a move, on the
  /// source). Returns how many groups changed. Errors: io_error (groups
  /// written before the failing one keep the removal).
  result<size_t> remove_partition(const std::string& topic, int32_t partition);

  /// Deletes the committed offsets of `group` for `partitions` of `topic`
  /// (Kafka OffsetDelete) as one durable write. Returns how many it held;
  /// partitions without a committed offset are skipped; a group left with
  /// no offset goes as with remove_group. Errors: invalid_group_id,
  /// io_error (nothing changed).
  result<size_t> remove_offsets(const std::string& group, const std::string& topic,
                                const std::vector<int32_t>& partitions);

  /// Deletes every committed offset of `group` (Kafka DeleteGroups): its
  /// file and directory go, durably (the directory `__groups` is fsynced),
  /// before this returns true; false when the store holds nothing for it.
  /// Errors: invalid_group_id, io_error (the offsets may remain on disk and
  /// come back at the next open; the table keeps them too).
  result<bool> remove_group(const std::string& group);

  /// Ids of the groups with a file, sorted.
  std::vector<std::string> list_groups() const;
  bool has_group(const std::string& group) const { return groups_.count(group) != 0; }

  /// `<data_dir>/__groups`.
  const std::string& dir() const { return dir_; }
  /// The file holding `group`'s offsets.
  std::string file_of(const std::string& group) const;

 private:
  struct stored {
    int64_t offset = 0;
    std::string metadata;
  };
  using table = std::map<std::pair<std::string, int32_t>, stored>;

  offset_store(std::string dir, bool writable) : dir_(std::move(dir)), writable_(writable) {}
  static result<offset_store> load(const std::string& data_dir, bool writable);
  status write_group(const std::string& group, const table& offsets);

  std::string dir_;
  bool writable_ = true;
  std::map<std::string, table> groups_;
};

}  // namespace moonmq::groups

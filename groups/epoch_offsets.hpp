#pragma once
// Committed offsets of a partition on shared storage (docs/shared-storage.md
// "Committed group offsets"): one offset_store per owner epoch, in the
// partition's shared directory,
//
//   <partition root>/offsets/<epoch, 20 digits>/__groups/<group>/offsets.json
//
// written only by the owner of that epoch, as the log's e<epoch>/ is. The
// first time an owner opens its epoch, the newest earlier epoch's offsets
// are read read-only (a stopped owner may still be writing there) and
// carried forward: written into <epoch>.tmp/, which is renamed into place
// and made durable. An epoch's directory, once it exists, therefore holds
// every offset acknowledged before that epoch began (the lease argument of
// docs/shared-storage.md: the owner of an earlier epoch acknowledged each
// commit after its fsync, while its lease held, so before the takeover).

#include <cstdint>
#include <climits>
#include <optional>
#include <string>

#include "groups/offset_store.hpp"

namespace moonmq::groups {

/// `<root>/offsets/<epoch, 20 digits>`: the directory an epoch's store opens.
std::string epoch_offsets_dir(const std::string& partition_root, int64_t epoch);

/// Opens the offsets of the partition at `partition_root` for the owner of
/// `epoch` (> 0), carrying the newest earlier epoch's forward first when
/// this epoch has none yet. A left-over `<epoch>.tmp/` (a carry that never
/// reached its rename) is discarded and the carry redone.
/// Errors: io_error (naming the path), corrupt_state (an offsets file of
/// the earlier epoch or of this one does not decode; nothing is written).
result<offset_store> open_epoch_offsets(const std::string& partition_root, int64_t epoch);

/// The offsets of the newest epoch below `below` that has any, read-only,
/// or nullopt when none has: what an owner reads before its first write
/// in its epoch (a read never writes), and what a former owner still
/// reports after handing the partition on (a move's offset push).
/// Errors: as open_epoch_offsets.
result<std::optional<offset_store>> read_newest_offsets(const std::string& partition_root,
                                                        int64_t below = INT64_MAX);

}  // namespace moonmq::groups

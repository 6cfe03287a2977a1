#pragma once
// Shared storage (docs/shared-storage.md): what a broker reads to know
// whether it may open, write and acknowledge a partition of the shared
// directory. Read by the I/O workers (logs) and the group coordinator
// (committed offsets), each on its own thread: the image is read
// lock-free of any actor and lease_valid is thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "actors/image.hpp"
#include "storage/partition_log.hpp"

namespace moonmq {

struct shared_mode {
  std::shared_ptr<const owner_view> image;
  std::string broker_id;
  std::function<bool()> lease_valid;  ///< null: always valid

  /// The owner epoch at which the applied image names this broker owner of
  /// the partition; 0 when it names another broker or none.
  int64_t epoch_of(const std::string& topic, int32_t partition) const {
    auto [owner, epoch] = image->owner_and_epoch({topic, partition});
    return owner == broker_id ? epoch : 0;
  }
  /// A write made durable at `epoch` may be acknowledged now: the lease is
  /// valid and the image still names this broker owner at `epoch`.
  bool holds(const std::string& topic, int32_t partition, int64_t epoch) const {
    return epoch > 0 && (!lease_valid || lease_valid()) && epoch_of(topic, partition) == epoch;
  }
};

/// The directory of a partition in the shared directory `shared_dir`:
/// `<shared_dir>/<topic>-<partition>~<created_at>` (created_at: the index of
/// the metadata-log entry that created the topic, so a re-created topic
/// never reads the old one's files).
inline std::string shared_partition_root(const std::string& shared_dir, const std::string& topic, int32_t partition,
                                         int64_t created_at) {
  return storage::partition_dir(shared_dir, topic, partition) + "~" + std::to_string(created_at);
}

}  // namespace moonmq

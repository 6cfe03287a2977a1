#pragma once
// Shared storage (docs/shared-storage.md): what a broker reads to know
// whether it may open, write and acknowledge a partition of the shared
// directory. Read by the I/O workers (logs) and the group coordinator
// (committed offsets), each on its own thread: the image is read
// lock-free of any actor and lease_valid is thread-safe.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "actors/image.hpp"
#include "cluster/takeover_hold.hpp"
#include "storage/partition_log.hpp"
#include "util/clock.hpp"

namespace moonmq {

struct shared_mode {
  std::shared_ptr<const owner_view> image;
  std::string broker_id;
  std::function<bool()> lease_valid;  ///< null: always valid
  /// Takeovers of partitions a move's source took back wait here (null:
  /// never; cluster/takeover_hold.hpp). LeaseMs + LeaseMarginMs.
  std::shared_ptr<cluster::takeover_hold> hold;

  /// The owner epoch at which the applied image names this broker owner of
  /// the partition; 0 when it names another broker or none, and while a
  /// take-back at that epoch is held (the destination may still acknowledge
  /// writes at the epoch before it: nothing may be opened, read or written
  /// here yet; docs/shared-storage.md "Take-back").
  int64_t epoch_of(const std::string& topic, int32_t partition) const {
    auto [owner, epoch] = image->owner_and_epoch({topic, partition});
    if (owner != broker_id)
      return 0;
    if (hold && after_take_back(topic, partition, epoch) && hold->holding(topic, partition, epoch, util::monotonic_ms()))
      return 0;
    return epoch;
  }
  /// `epoch` is the one a move's take-back gave its source: the
  /// destination may have acknowledged writes at the epoch before it until
  /// its lease ran out. (The controller's failover of a fenced source's
  /// partition at that epoch waits for the same hold before it proposes
  /// the next owner: balancer_failover.cpp.)
  bool after_take_back(const std::string& topic, int32_t partition, int64_t epoch) const {
    const int64_t back = image->taken_back_epoch({topic, partition});
    return back > 0 && epoch == back;
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

/// The durable seal marker of a shared partition, kept in a broker's own
/// data directory `data_dir` (never in the shared one: a seal is one
/// broker's state): `<data_dir>/shared-seals/<topic>-<partition>~<created_at>`.
inline std::string shared_seal_marker(const std::string& data_dir, const std::string& topic, int32_t partition,
                                      int64_t created_at) {
  return data_dir + "/shared-seals/"
         + std::filesystem::path(shared_partition_root("/", topic, partition, created_at)).filename().string();
}

}  // namespace moonmq

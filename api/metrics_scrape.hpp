#pragma once
// The GET /metrics series computed at each scrape from live state rather
// than kept in the metrics registry (docs/admin-api.md "Metrics"): the
// partitions this broker owns (log bounds and size), the lag of the groups
// whose committed offsets it stores, the moves of its journal by state, and
// the brokers of the metadata image by standing. Computed afresh each time,
// a partition deleted or moved away, or a move forgotten, has no series in
// the next scrape.
//
// Cost per scrape: one request per I/O worker for every owned partition
// (read_loads, as GET /cluster/loads), one to the group coordinator, one to
// the reassigner, in parallel, each bounded by `timeout`; the brokers come
// from the image without a request.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/catalog_view.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/image.hpp"
#include "actors/reassigner.hpp"
#include "util/metrics.hpp"

namespace moonmq::transport {

/// One online partition this broker owns: offsets, size in bytes.
struct owned_partition_stats {
  std::string topic;
  int32_t partition = 0;
  int64_t log_start = 0;
  int64_t log_end = 0;
  int64_t size_bytes = 0;
};

/// One committed offset this broker stores (the next offset to read).
struct committed_offset {
  std::string group;
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
};

/// The brokers of the metadata image (owner_view::members) and their standing.
struct broker_census {
  std::vector<std::string> members;
  std::shared_ptr<const broker_standing> standing;
};

/// What one scrape gathered. A nullopt part is left out of the text (not
/// answered in time, or no such part on this broker) rather than shown as
/// zero.
struct scrape_input {
  std::vector<owned_partition_stats> partitions;
  std::optional<std::vector<committed_offset>> committed;
  /// The state of each row of this broker's move journal.
  std::optional<std::vector<std::string>> move_states;
  std::optional<broker_census> brokers;
};

/// The families of one scrape, in this order: moonmq_partition_log_start_offset,
/// moonmq_partition_log_end_offset, moonmq_partition_size_bytes
/// {topic,partition}; moonmq_group_lag{group,topic,partition} and
/// moonmq_group_total_lag{group} (log end − committed, never below 0, only
/// for partitions in `partitions`); moonmq_reassignments{state} (every
/// cluster::move_state, 0 included) and moonmq_reassignments_in_progress;
/// moonmq_brokers{state="active|draining|removed"} and
/// moonmq_fenced_brokers (fenced and not removed). Pure.
std::vector<metrics::sample_family> scrape_families(const scrape_input& in);

struct scrape_context {
  caf::actor_system* system = nullptr;
  std::string broker_id;
  std::shared_ptr<catalog_view> catalog;
  /// The metadata image; null on a standalone broker (it owns every
  /// partition, and has no broker families).
  std::shared_ptr<owner_view> owners;
  std::optional<group_actor> groups;
  /// This broker's moves; none on a standalone broker.
  std::optional<reassigner_actor> reassigner;
  std::chrono::milliseconds timeout{1000};
};

/// Gathers one scrape_input and calls `done` once with the text of
/// scrape_families, on a CAF thread (or at once on this one when there is
/// nothing to ask). `done` must not block.
void collect_scrape_metrics(const scrape_context& ctx, std::function<void(std::string)> done);

}  // namespace moonmq::transport

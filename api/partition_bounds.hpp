#pragma once
// The log bounds of some partitions, each asked of the broker that owns it:
// the local partition actor, or a peer's GET
// /cluster/partitions/{t}/{p}/log-end. What GET /v1/topics/{t} and a
// group's lag (GET /v1/groups/{g}) are made of.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/types.hpp"
#include "api/client_routes.hpp"

namespace moonmq::transport {

struct partition_bounds {
  std::optional<std::string> owner;  ///< nullopt: the metadata log names none
  int64_t log_start_offset = -1;
  int64_t log_end_offset = -1;
  int64_t size_bytes = -1;
  /// "" when the bounds are known, else why not: partition_offline (no
  /// owner, or owned here without a local copy), owner_unreachable, or the
  /// local actor's error code.
  std::string error;
};

/// Asks every one of `parts` (all at once) and calls `done` once, on some
/// thread, with one entry per part in the same order. Owners come from the
/// applied metadata image (this broker without one).
void gather_bounds(const client_context& ctx, std::vector<cluster::topic_partition> parts,
                   std::function<void(std::vector<partition_bounds>)> done);

}  // namespace moonmq::transport

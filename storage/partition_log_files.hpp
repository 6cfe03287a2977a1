#pragma once
// Internal to partition_log (partition_log.cpp, partition_log_recovery.cpp):
// file helpers of a log directory. Not part of the public surface.

#include <string>
#include <vector>

#include "storage/partition_log.hpp"
#include "storage/types.hpp"

namespace moonmq::storage::detail {

/// The directory holding `dir` ("." for a relative name without one).
std::string parent_dir(const std::string& dir);

/// unlink(2) that treats a missing file as done. Errors: io_error.
status unlink_if_present(const std::string& path);

/// invalid_argument for a config no log accepts (segment.bytes 0).
status check_config(const log_config& config);

/// The config with segment.bytes capped at max_segment_bytes.
log_config clamp(log_config config);

/// Base offsets of the segment log files in `dir`, sorted; removes
/// leftovers of interrupted writes (*.tmp, *.deleted) and index files whose
/// log is gone. Errors: io_error.
result<std::vector<offset>> list_segments(const std::string& dir);

}  // namespace moonmq::storage::detail

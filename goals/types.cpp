#include "goals/types.hpp"

namespace moonmq::goals {

std::string_view resource_name(resource r) {
  switch (r) {
    case resource::nw_in: return "NW_IN";
    case resource::nw_out: return "NW_OUT";
    case resource::disk: return "DISK";
    case resource::partition_count: return "PARTITION_COUNT";
  }
  return "UNKNOWN";
}

std::string_view resource_key(resource r) {
  switch (r) {
    case resource::nw_in: return "nw_in";
    case resource::nw_out: return "nw_out";
    case resource::disk: return "disk";
    case resource::partition_count: return "partitions";
  }
  return "unknown";
}

goal_config goal_overrides::apply_to(goal_config base) const {
  if (enabled) base.enabled = *enabled;
  if (avg_deviation) base.avg_deviation = *avg_deviation;
  if (detect_threshold) base.detect_threshold = *detect_threshold;
  if (priority) base.priority = *priority;
  if (capacity_threshold) base.capacity_threshold = *capacity_threshold;
  return base;
}

}  // namespace moonmq::goals

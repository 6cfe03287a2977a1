#include "groups/range_assignor.hpp"

#include <algorithm>
#include <vector>

namespace moonmq::groups {

group_assignment assign_range(const subscriptions& subs, const partition_counts& counts) {
  group_assignment out;
  // topic → subscribed members; std::map iteration already orders member ids.
  std::map<std::string, std::vector<std::string>> members_of;
  for (const auto& [member, topics] : subs) {
    auto& mine = out[member];
    for (const auto& topic : topics) {
      mine[topic];  // every subscribed topic is listed, even when nothing is assigned
      members_of[topic].push_back(member);
    }
  }
  for (const auto& [topic, members] : members_of) {
    auto it = counts.find(topic);
    if (it == counts.end() || it->second <= 0)
      continue;
    const int64_t n = it->second;
    const int64_t m = static_cast<int64_t>(members.size());
    const int64_t per_member = n / m;
    const int64_t extra = n % m;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t start = i * per_member + std::min(i, extra);
      const int64_t length = per_member + (i < extra ? 1 : 0);
      auto& parts = out[members[static_cast<size_t>(i)]][topic];
      for (int64_t p = start; p < start + length; ++p)
        parts.push_back(static_cast<int32_t>(p));
    }
  }
  return out;
}

}  // namespace moonmq::groups

#include "cluster/topic_sync.hpp"

#include <algorithm>

namespace moonmq::cluster {

topic_sync_plan plan_topic_sync(const std::map<std::string, topic_copy>& local,
                                const std::map<std::string, topic_copy>& topics,
                                const std::map<std::string, int64_t>& deleted) {
  topic_sync_plan plan;
  for (const auto& [name, copy] : local) {
    auto in_log = topics.find(name);
    bool was_deleted = deleted.count(name) != 0;
    bool stale = copy.created_at != 0 ? in_log == topics.end() || in_log->second.created_at != copy.created_at
                                      : was_deleted;
    if (stale)
      plan.remove.emplace_back(name, copy.created_at);
    else if (in_log == topics.end())
      plan.import.push_back(name);
  }
  for (const auto& [name, t] : topics) {
    auto it = local.find(name);
    bool removed = it != local.end() && !plan.remove.empty()
                   && std::binary_search(plan.remove.begin(), plan.remove.end(), std::pair{name, it->second.created_at});
    if (it == local.end() || removed || it->second.partitions < t.partitions || it->second.created_at == 0
        || it->second.config != t.config)
      plan.adopt.push_back(name);
  }
  return plan;
}

}  // namespace moonmq::cluster

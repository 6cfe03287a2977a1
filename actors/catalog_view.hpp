#pragma once
// A read-mostly snapshot of the broker's topics and their partition actors,
// published by the broker actor after every change and read by the client
// API bridge without a round trip to the broker. Readers get an immutable
// snapshot; the broker swaps in a new one.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/partition.hpp"
#include "cluster/topic_sync.hpp"
#include "dataplane/topic_catalog.hpp"

namespace moonmq {

struct topic_handles {
  std::string name;
  dataplane::topic_config config;
  std::vector<partition_actor> partitions;  ///< index = partition number
  int64_t created_at = 0;                   ///< the metadata-log identity (dataplane::topic_entry)
};

using topic_map = std::map<std::string, topic_handles>;

/// The local copies as cluster::plan_topic_sync reads them.
inline std::map<std::string, cluster::topic_copy> local_copies(const topic_map& topics) {
  std::map<std::string, cluster::topic_copy> out;
  for (const auto& [name, t] : topics)
    out[name] = {static_cast<int32_t>(t.partitions.size()), t.created_at, dataplane::topic_config_text(t.config)};
  return out;
}

class catalog_view {
public:
  std::shared_ptr<const topic_map> get() const {
    std::lock_guard<std::mutex> g{mtx_};
    return current_;
  }
  void set(std::shared_ptr<const topic_map> next) {
    std::lock_guard<std::mutex> g{mtx_};
    current_ = std::move(next);
  }

private:
  mutable std::mutex mtx_;
  std::shared_ptr<const topic_map> current_ = std::make_shared<topic_map>();
};

}  // namespace moonmq

#include "api/local_loads.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/direct_append.hpp"
#include "cluster/topic_placement.hpp"
#include "storage/disk_latency.hpp"
#include "util/clock.hpp"

namespace moonmq::transport {
namespace {

using json = nlohmann::json;

/// This broker's latency windows (storage/disk_latency.hpp), as the
/// balancer's slow-broker check reads them (goals/slow_brokers.hpp).
json latency_report() {
  auto now = util::monotonic_ms();
  auto one = [](const util::latency_summary& s) {
    return json{{"count", s.count},
                {"p50_ms", s.p50_ms},
                {"p90_ms", s.p90_ms},
                {"p99_ms", s.p99_ms},
                {"max_ms", s.max_ms}};
  };
  auto& windows = storage::process_latency();
  return json{{"window_seconds", storage::kLatencyWindowSeconds},
              {"sync", one(windows.sync.summary(now))},
              {"produce", one(windows.produce.summary(now))}};
}

}  // namespace

void collect_local_loads(caf::actor_system& sys, std::shared_ptr<const topic_map> topics,
                         std::shared_ptr<const owner_map> owners, std::string broker_id,
                         std::chrono::milliseconds timeout, std::function<void(json)> done,
                         const broker_traits& traits) {
  std::vector<partition_actor> partitions;
  json rows = json::array();
  json topic_list = json::array();
  for (const auto& [name, t] : *topics) {
    topic_list.push_back(json{{"name", name}, {"partitions", t.partitions.size()}});
    for (size_t p = 0; p < t.partitions.size(); ++p) {
      // In a cluster the image names the owner, and a partition it does not
      // name is nobody's (null: readers skip it); a standalone broker owns all.
      json owner = broker_id;
      if (owners) {
        auto it = owners->find(cluster::topic_partition{name, static_cast<int32_t>(p)});
        owner = it != owners->end() ? json(it->second) : json(nullptr);
      }
      rows.push_back(json{{"topic", name}, {"partition", p}, {"owner", std::move(owner)}});
      partitions.push_back(t.partitions[p]);
    }
  }
  auto body = std::make_shared<json>(json{{"broker_id", broker_id},
                                          {"partitions", std::move(rows)},
                                          {"topics", std::move(topic_list)},
                                          {"latency", latency_report()},
                                          {"rack", traits.rack},
                                          {"weight", traits.weight},
                                          {"topic_placement", cluster::topic_placement_version}});
  // One message per I/O worker for every partition (actors/direct_append.hpp).
  read_loads(sys, partitions, timeout, [body, done = std::move(done)](std::vector<partition_load>& loads) {
    auto& listed = (*body)["partitions"];
    for (size_t i = 0; i < loads.size(); ++i) {
      auto& r = listed[i];
      const auto& l = loads[i];
      if (!l.error.empty()) {
        r["error"] = l.error;  // an offline partition has neither bounds nor counters
        continue;
      }
      r["log_start_offset"] = l.log_start;
      r["log_end_offset"] = l.log_end;
      r["size_bytes"] = l.size_bytes;
      r["bytes_in"] = l.bytes_in;
      r["bytes_out"] = l.bytes_out;
      r["records_in"] = l.records_in;
      r["records_out"] = l.records_out;
    }
    done(std::move(*body));
  });
}

}  // namespace moonmq::transport

#pragma once
// The body of GET /cluster/loads (docs/cluster-api.md): every partition this
// broker holds, with its owner as the metadata image names it (null when it
// names none), its log bounds and its traffic counters since start. Also
// what GET /admin/cluster merges with the peers' answers.
//
// One request per I/O worker reads every partition it holds
// (actors/direct_append.hpp read_loads), each with the same deadline: the
// partitions of a worker that does not answer in time are reported with
// "error" instead of failing the answer, so the whole takes at most
// `timeout`.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <nlohmann/json_fwd.hpp>

#include "actors/catalog_view.hpp"
#include "actors/cluster_state.hpp"

namespace moonmq::transport {

/// What this broker says about itself in its load report (Cluster.Rack,
/// Cluster.Weight); the balancer reads both into its model.
struct broker_traits {
  std::string rack;
  double weight = 1.0;
};

/// Collects the loads of every partition in `topics` and calls `done` once
/// with {"broker_id","partitions":[{"topic","partition","owner",
/// "log_start_offset","log_end_offset","size_bytes","bytes_in","bytes_out",
/// "records_in","records_out","error"?}],"topics":[{"name","partitions"}],
/// "latency":{"window_seconds","sync":{"count","p50_ms","p90_ms","p99_ms","max_ms"},
/// "produce":{…}},"rack","weight","topic_placement"} (storage/disk_latency.hpp: this
/// process's sync and produce latency over the last window; `traits`: rack
/// "" = none, weight 0.01-100)
/// (rows in topic, partition order; a row with "error" lacks the values its
/// partition did not give). `owners` may be null (no cluster: all local,
/// "owner" is this broker); otherwise a partition without a row is "owner":null.
/// `done` runs on a CAF thread, or at once when there is no partition; it
/// must not block.
void collect_local_loads(caf::actor_system& sys, std::shared_ptr<const topic_map> topics,
                         std::shared_ptr<const owner_map> owners, std::string broker_id,
                         std::chrono::milliseconds timeout, std::function<void(nlohmann::json)> done,
                         const broker_traits& traits = {});

}  // namespace moonmq::transport

#pragma once
// Cluster-wide partition placement from what each broker reports about the
// partitions it holds (GET /cluster/loads on every broker): one owner per
// partition, the brokers holding a copy, and whether brokers disagree.
// Used by GET /admin/cluster and by anything that needs the cluster's
// partitions (the reassignment validation, the balance loop). Pure: data in,
// data out.

#include <cstdint>
#include <map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cluster/types.hpp"

namespace moonmq::cluster {

/// One broker's row for one partition it holds.
struct partition_report {
  topic_partition tp;
  broker_id reporter;  ///< the broker holding the partition (its /cluster/loads "broker_id")
  broker_id owner;     ///< the owner its ownership table names (itself when absent)
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t size_bytes = 0;
};

/// One partition of the cluster after merging every report about it.
struct partition_placement {
  topic_partition tp;
  broker_id owner;
  std::vector<broker_id> holders;  ///< every broker reporting it, sorted, distinct
  bool conflict = false;           ///< several brokers each claim to own it
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t size_bytes = 0;
};

/// Merges what each broker reports about the partitions it holds into one owner per partition. Rule: a broker reporting itself as owner wins; when several brokers each report themselves (a topic created independently on each), the lowest broker id wins and conflict = true; when none reports itself, the owner most often named (ties: lowest id). Bounds/size are those of the owner's report when it reported, else of the first holder. holders sorted.
/// A broker reporting the same partition twice counts once (its first row).
std::map<topic_partition, partition_placement> merge_partition_reports(const std::vector<partition_report>& reports);

/// Parses one GET /cluster/loads body into reports (reporter = its broker_id); malformed rows are skipped.
/// A body without a valid "broker_id" or a "partitions" array gives no
/// reports. A row needs a valid "topic", a "partition" in [0, 2^31) and a
/// valid "owner"; the bounds, when present, must be integers (absent = 0: a
/// partition that did not answer in time is reported with "error" and no
/// bounds, and still counts as held).
std::vector<partition_report> parse_loads(const nlohmann::json& body);

}  // namespace moonmq::cluster

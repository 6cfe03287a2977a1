#pragma once
// How a broker's local topic copies follow the metadata log (docs/metadata.md
// "Deleting a topic"): a pure function of the local copies, the log's topics
// and the log's deleted topics, run after every applied batch. A copy is
// identified by the index of the entry that created its topic (Kafka's
// topic id, KIP-516, in the log's own terms), so a copy of a deleted topic is
// never taken for a topic created again under the same name.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace moonmq::cluster {

/// A topic copy: its partition count and the index of the metadata-log
/// entry that created its topic (0 = not known: a copy written before copies
/// were stamped, or by a standalone broker).
struct topic_copy {
  int32_t partitions = 0;
  int64_t created_at = 0;
  /// The topic's config in one canonical form (dataplane::topic_config_text
  /// of the parsed config) on both sides; a copy whose config differs from
  /// the log's is adopted again, which applies the log's.
  std::string config;
};

struct topic_sync_plan {
  /// Local copies to delete, each with the created_at it has now (a delete
  /// asked twice must not hit the copy created after the first).
  std::vector<std::pair<std::string, int64_t>> remove;
  /// Topics of the log to create, grow or stamp locally (after the removals).
  std::vector<std::string> adopt;
  /// Local copies the log never held (unstamped, never deleted): a broker
  /// imports them into the log (topics created before topics went through it).
  std::vector<std::string> import;
};

/// The plan for `local` copies against the log's `topics` and `deleted`
/// (name -> index of the deletion). A stamped copy stays only while the log
/// holds its topic at the same created_at; an unstamped one is stamped when
/// the log holds its name and never deleted it, removed when the log
/// deleted the name, imported otherwise. Every topic of the log without a
/// local copy at its count and config is adopted. Names in each list are sorted.
topic_sync_plan plan_topic_sync(const std::map<std::string, topic_copy>& local,
                                const std::map<std::string, topic_copy>& topics,
                                const std::map<std::string, int64_t>& deleted);

}  // namespace moonmq::cluster

#include "storage/group_commit.hpp"

#include <filesystem>
#include <map>

#include "storage/file_io.hpp"
#include "util/logging.hpp"

namespace moonmq::storage {
namespace {

std::string parent_of(const std::string& dir) {
  auto parent = std::filesystem::path(dir).parent_path().string();
  return parent.empty() ? "." : parent;
}

/// Indexes of `logs` grouped by parent directory.
std::map<std::string, std::vector<size_t>> by_parent(const std::vector<partition_log*>& logs) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < logs.size(); ++i)
    groups[parent_of(logs[i]->dir())].push_back(i);
  return groups;
}

}  // namespace

std::vector<result<offset>> sync_round(const std::vector<partition_log*>& logs, sync_round_stats& stats) {
  std::vector<result<offset>> out(logs.size(), result<offset>(offset{0}));
  for (const auto& [parent, members] : by_parent(logs)) {
    bool synced = false;
    if (members.size() > 1) {
      ++stats.syncfs_calls;
      auto st = sync_filesystem(parent);
      synced = st.ok();
      if (!synced)
        log::get("storage")->warn("io.syncfs_failed dir={} error=\"{}\" msg=\"each partition syncs its own file\"",
                                  parent, st.err().message);
    }
    for (auto i : members) {
      if (synced) {
        out[i] = logs[i]->synced_by_filesystem();
      } else {
        ++stats.fdatasyncs;
        out[i] = logs[i]->flush();
      }
    }
  }
  return out;
}

std::vector<status> close_together(const std::vector<partition_log*>& logs, sync_round_stats& stats) {
  std::vector<status> out(logs.size());
  if (logs.size() == 1) {
    ++stats.fdatasyncs;
    out[0] = logs[0]->close();
    return out;
  }
  auto synced = sync_round(logs, stats);
  for (size_t i = 0; i < logs.size(); ++i)
    out[i] = synced[i] ? logs[i]->close_synced() : status(synced[i].err());
  for (const auto& [parent, members] : by_parent(logs)) {
    ++stats.syncfs_calls;
    if (auto st = sync_filesystem(parent); !st)
      log::get("storage")->warn("io.syncfs_failed dir={} error=\"{}\" msg=\"clean checkpoints may be lost: the next "
                                "start recovers those logs as after a crash\"",
                                parent, st.err().message);
  }
  return out;
}

}  // namespace moonmq::storage

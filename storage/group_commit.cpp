#include "storage/group_commit.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "util/logging.hpp"

namespace moonmq::storage {
namespace {

/// syncfs reports write-back errors since Linux 5.8.
bool kernel_reports_syncfs_errors() {
  utsname u{};
  if (::uname(&u) != 0)
    return false;
  int major = 0, minor = 0;
  if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2)
    return false;
  return major > 5 || (major == 5 && minor >= 8);
}

/// Indexes of `logs` grouped by file system; a log not on disk yet (never
/// written: nothing to sync, no directory to open) is in no group.
std::map<uint64_t, std::vector<size_t>> by_device(const std::vector<partition_log*>& logs) {
  std::map<uint64_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < logs.size(); ++i)
    if (logs[i]->on_disk())
      groups[logs[i]->device()].push_back(i);
  return groups;
}

}  // namespace

syncfs_handles::syncfs_handles(const std::string& dir) : usable_(kernel_reports_syncfs_errors()) {
  if (!usable_) {
    log::get("storage")->warn("io.syncfs_unusable msg=\"this kernel's syncfs reports no write-back errors (before "
                              "Linux 5.8): every partition syncs with its own fdatasync\"");
    return;
  }
  if (dir.empty())
    return;
  if (auto fd = open_file(dir, O_RDONLY | O_DIRECTORY)) {
    struct stat st {};
    if (::fstat(fd->get(), &st) == 0)
      fds_.emplace(static_cast<uint64_t>(st.st_dev), std::move(*fd));
  }
}

status syncfs_handles::sync(uint64_t device, const std::string& dir) {
  auto it = fds_.find(device);
  if (it == fds_.end()) {
    auto fd = open_file(dir, O_RDONLY | O_DIRECTORY);
    if (!fd)
      return fd.err();
    it = fds_.emplace(device, std::move(*fd)).first;
  }
  if (::syncfs(it->second.get()) != 0)
    return io_error("syncfs", dir);
  return {};
}

std::vector<result<offset>> sync_round(const std::vector<partition_log*>& logs, syncfs_handles& handles,
                                       sync_round_stats& stats) {
  std::vector<result<offset>> out(logs.size(), result<offset>(offset{0}));
  for (size_t i = 0; i < logs.size(); ++i)
    if (!logs[i]->on_disk())
      out[i] = logs[i]->flush();  // nothing written: no sync, its log end
  for (const auto& [device, members] : by_device(logs)) {
    bool synced = false;
    if (members.size() > 1 && handles.usable()) {
      // Bytes a log holds in memory (write-behind) reach its file before the
      // syncfs that is to cover them; a log that cannot write them fails.
      for (auto i : members)
        if (auto st = logs[i]->write_out(); !st)
          out[i] = st.err();
      ++stats.syncfs_calls;
      const auto& dir = logs[members.front()]->dir();
      auto st = handles.sync(device, dir);
      synced = st.ok();
      if (!synced) {
        stats.syncfs_failed = true;
        log::get("storage")->warn("io.syncfs_failed dir={} error=\"{}\" msg=\"each partition written since its own "
                                  "last fdatasync syncs its own file\"",
                                  dir, st.err().message);
      }
    }
    for (auto i : members) {
      if (!out[i])
        continue;  // its held bytes could not be written
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

std::vector<status> close_together(const std::vector<partition_log*>& logs, syncfs_handles& handles,
                                   sync_round_stats& stats) {
  std::vector<status> out(logs.size());
  if (std::none_of(logs.begin(), logs.end(), [](const partition_log* lg) { return lg->on_disk(); })) {
    for (size_t i = 0; i < logs.size(); ++i)
      out[i] = logs[i]->close();  // never written: nothing to close
    return out;
  }
  if (logs.size() == 1 || !handles.usable()) {
    for (size_t i = 0; i < logs.size(); ++i) {
      stats.fdatasyncs += logs[i]->on_disk() ? 1 : 0;
      out[i] = logs[i]->close();
    }
    return out;
  }
  auto synced = sync_round(logs, handles, stats);
  for (size_t i = 0; i < logs.size(); ++i)
    out[i] = synced[i] ? logs[i]->close_synced() : status(synced[i].err());
  for (const auto& [device, members] : by_device(logs)) {
    ++stats.syncfs_calls;
    const auto& dir = logs[members.front()]->dir();
    if (auto st = handles.sync(device, dir); !st) {
      stats.syncfs_failed = true;
      log::get("storage")->warn("io.syncfs_failed dir={} error=\"{}\" msg=\"clean checkpoints may be lost: the next "
                                "start recovers those logs as after a crash\"",
                                dir, st.err().message);
    }
  }
  return out;
}

}  // namespace moonmq::storage

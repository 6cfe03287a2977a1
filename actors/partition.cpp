#include "actors/partition.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <list>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/direct_append_impl.hpp"
#include "actors/errors.hpp"
#include "storage/file_deleter.hpp"
#include "storage/group_commit.hpp"
#include "storage/partition_log.hpp"
#include "storage/record_batch.hpp"
#include "storage/wal.hpp"
#include "util/atomic_file.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

// Local messages only (worker and partition actors of one process).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(moonmq::partition_settings)

namespace moonmq {
namespace {

using open_atom = caf::atom_constant<caf::atom("open")>;    ///< a worker opens a partition's log
using close_atom = caf::atom_constant<caf::atom("close")>;  ///< a worker closes a partition's log

/// An append waiting for its sync round: answered to its requester
/// (append_atom) or through a direct append's callbacks (append_direct).
struct pending_ack {
  caf::typed_response_promise<int64_t> promise;
  std::unique_ptr<detail::direct_reply> direct;
  int64_t base = 0;

  void deliver(const caf::error& failure) {
    if (direct && failure)
      direct->deliver(failure);
    else if (direct)
      direct->deliver(base);
    else if (failure)
      promise.deliver(failure);
    else
      promise.deliver(base);
  }
};

struct counters {
  uint64_t bytes_in = 0, bytes_out = 0, records_in = 0, records_out = 0, batches_in = 0, fsyncs = 0;
};

/// Duration of each group commit round's sync (one fdatasync or one
/// syncfs), the broker's own view of the disk's sync latency under load.
metrics::histogram& sync_histogram() {
  static auto& h = metrics::registry::global().get_histogram(
    "moonmq_storage_sync_round_seconds",
    "Duration of each I/O worker group commit round's syncs (storage::sync_round: fdatasync for a partition alone "
    "on its device, one syncfs per device for several)",
    {0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03,
     0.05, 0.1, 0.25, 0.5, 1});
  return h;
}

/// Partitions of this process whose log is offline (shared by every
/// worker).
metrics::gauge& offline_gauge() {
  static auto& g = metrics::registry::global().get_gauge(
    "moonmq_offline_partitions", "Partitions whose log is offline: corrupt (awaiting repair), unopenable or after a failed fsync");
  return g;
}

/// Partitions of this process handed to a worker whose log is not opened
/// yet: after a create or a start, 0 once every partition serves (or is
/// known offline).
metrics::gauge& opening_gauge() {
  static auto& g = metrics::registry::global().get_gauge(
    "moonmq_partitions_opening", "Partitions whose log an I/O worker has not opened yet (after a create or a start)");
  return g;
}

/// One partition held by a worker: its log and everything the partition
/// answers from.
struct hosted {
  uint64_t id = 0;
  partition_settings settings;
  std::optional<storage::partition_log> log;
  std::string open_error;
  std::optional<storage::damage> damage;  ///< why open refused the log, when it was corrupt
  bool counted_offline = false;           ///< included in moonmq_offline_partitions
  std::vector<pending_ack> pending;       ///< appends waiting for the next sync round
  bool sealed = false;
  /// Sealed as a move's destination copy (the marker exists): only then are
  /// copied batches taken, and client fetches are refused (the log may be
  /// incomplete until the move confirms).
  bool durable_seal = false;
  counters c;
  metrics::counter* m_bytes_in = nullptr;
  metrics::counter* m_records_in = nullptr;
  metrics::counter* m_bytes_out = nullptr;
  metrics::counter* m_records_out = nullptr;
  std::list<uint64_t>::iterator lru_pos;  ///< in the worker's lru while the log holds an fd
  bool in_lru = false;
  bool in_waiting = false;  ///< listed in the worker's `waiting` for the next round
  bool in_held = false;     ///< listed in the worker's `held`: its log holds write-behind bytes
  /// Opened before its directory existed and not synced since: the
  /// directory itself may not survive a crash, so its rounds sync the log
  /// (which makes the directory durable), never only the WAL.
  bool fresh = false;
  /// Entries of this partition are in the worker's WAL since its last
  /// checkpoint: its segments may hold less than what was acknowledged.
  bool in_wal = false;
  /// Entries added to the WAL since its last commit (listed in the worker's
  /// wal_uncommitted).
  bool wal_uncommitted = false;
  /// Log end when the WAL last committed this partition's entries: every
  /// offset below it survives a crash, whatever its segments hold.
  int64_t wal_durable_end = 0;
  int64_t wal_added_end = 0;  ///< log end after its last entry added to the WAL

  hosted() = default;
  hosted(const hosted&) = delete;
  hosted& operator=(const hosted&) = delete;

  ~hosted() {
    if (log) {
      if (auto st = log->close(); !st)
        moonmq::log::get("broker")->warn("partition.close_failed topic={} partition={} error=\"{}\"",
                                         settings.topic, settings.partition, st.err().message);
    }
    set_offline(false);
  }

  void set_offline(bool offline) {
    if (offline != counted_offline)
      offline_gauge().add(offline ? 1.0 : -1.0);
    counted_offline = offline;
  }

  std::string name() const { return settings.topic + "-" + std::to_string(settings.partition); }
};

struct worker_state {
  std::unordered_map<uint64_t, std::unique_ptr<hosted>> parts;
  std::vector<uint64_t> waiting;  ///< partitions with pending acks, in arrival order
  bool flush_scheduled = false;
  std::vector<std::unique_ptr<hosted>> closing;  ///< closed by the next close round
  bool close_scheduled = false;
  std::list<uint64_t> lru;  ///< partitions whose log holds an fd, most recent first
  size_t fd_budget = 1024;
  int index = 0;
  /// Shared by the pool's workers; held by each so it outlives their logs.
  std::shared_ptr<storage::file_deleter> deleter;
  /// This worker's syncfs descriptors, opened at its start (see
  /// storage::syncfs_handles: one per worker, so each sees every error).
  std::unique_ptr<storage::syncfs_handles> syncfs;
  uint64_t rounds = 0, syncfs_calls = 0, fdatasyncs = 0, fds_released = 0;
  std::string data_dir;
  /// The worker's write-ahead log (storage/wal.hpp); empty when
  /// Storage.WriteAheadLog is off or after it stopped (wal_stopped says why).
  std::optional<storage::wal_writer> wal;
  std::string wal_stopped;
  int64_t wal_checkpoint_bytes = 64LL << 20;
  uint64_t wal_commits = 0, wal_checkpoints = 0, wal_bytes = 0;
  std::vector<uint64_t> wal_uncommitted;  ///< partitions with entries in the WAL's next commit
  /// Topic and partition of every entry in the WAL's files (or buffer)
  /// since its last checkpoint, hosted or not: a stopped WAL keeps its
  /// files, and a log deleted or reset since must never have them replayed
  /// into it (forget_wal_entries).
  std::set<std::pair<std::string, int32_t>> wal_names;
  /// A background write-back (start_writeback) runs; WAL file size when the
  /// last one started.
  std::shared_ptr<std::atomic<bool>> writeback_running = std::make_shared<std::atomic<bool>>(false);
  uint64_t writeback_at = 0;
  uint64_t writebacks = 0;
  /// Partitions whose log holds appends in memory (write-behind), written
  /// to their files by the next write_out_atom at the latest.
  std::vector<uint64_t> held;
  bool write_out_scheduled = false;
  uint64_t write_outs = 0;
  /// io_settings::write_behind_bytes: with the WAL on, a partition's active
  /// segment holds up to this many bytes of appends in memory and writes
  /// them in one pwrite instead of one per append. Measured with
  /// kafka_spread_bench (1,000 partitions, one 1 KiB record per partition
  /// per request): 7-8 µs of broker CPU per record against 12-13.
  size_t write_behind_bytes = 0;
  /// io_settings::write_behind_ms: held bytes reach their files at most
  /// this long after their append, so what a process crash can lose beyond
  /// the WAL's last commit (acks=none appends only) stays this short.
  int64_t write_behind_ms = 50;
  static inline const char* name = "io_worker";
};

using worker_ptr = caf::stateful_actor<worker_state>*;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

caf::error storage_failure(const storage::error& e) {
  return make_error(errc::storage_error, std::string(storage::to_string(e.code)) + ": " + e.message);
}

caf::error not_hosted(uint64_t id) {
  return make_error(errc::unknown_topic, "partition " + std::to_string(id) + " is closed (its topic was deleted "
                                                                            "or the broker is stopping)");
}

/// A failed sync takes the partition offline until a restart, as a Kafka
/// broker takes a failed log dir offline: after a failed fsync the kernel
/// may have dropped the dirty pages, so a later fsync's success would prove
/// nothing, and an idempotent resend would be acknowledged against a batch
/// that is not on disk. Recovery at the next start keeps exactly what
/// reached the disk.
void stop_wal(worker_ptr self, const std::string& why);

caf::error take_offline(worker_ptr self, hosted& p, const storage::error& e) {
  if (p.in_wal)
    stop_wal(self, "partition " + p.name() + " went offline with entries in the WAL");
  p.open_error = std::string("fdatasync failed: ") + e.message;
  p.log.reset();
  if (p.in_lru) {
    self->state.lru.erase(p.lru_pos);
    p.in_lru = false;
  }
  p.set_offline(true);
  log::get("broker")->error("partition.offline topic={} partition={} error=\"{}\"", p.settings.topic,
                            p.settings.partition, e.message);
  return storage_failure(e);
}

caf::error offline(const hosted& p) {
  return make_error(errc::partition_offline, "partition " + p.name() + " is offline: " + p.open_error);
}

/// Answers every append of `p` waiting for a sync: its base offset, or
/// `failure` when the sync failed.
void answer(hosted& p, const caf::error& failure) {
  for (auto& a : std::exchange(p.pending, {}))
    a.deliver(failure);
}

/// Makes everything appended to `p` durable with its own fdatasync and
/// answers its waiting appends; a failure takes it offline.
void flush_one(worker_ptr self, hosted& p) {
  if (!p.log || !p.log->needs_sync()) {
    if (p.log)
      answer(p, {});
    return;
  }
  auto durable = p.log->flush();
  ++p.c.fsyncs;
  ++self->state.fdatasyncs;
  if (durable)
    p.fresh = false;
  answer(p, durable ? caf::error{} : take_offline(self, p, durable.err()));
}

/// Records that `p` was used: its log's fd (if any) becomes the most
/// recent; then idle logs past the worker's budget release theirs, least
/// recently used first. A log with appends waiting for a round keeps its
/// fd until the round; one written with acks=none is fdatasynced first (a
/// failure takes it offline), so the budget holds under any load but a
/// burst of acks=leader appends.
void touch(worker_ptr self, hosted& p) {
  auto& st = self->state;
  if (p.log && p.log->holds_fd()) {
    if (p.in_lru)
      st.lru.erase(p.lru_pos);
    st.lru.push_front(p.id);
    p.lru_pos = st.lru.begin();
    p.in_lru = true;
  } else if (p.in_lru) {
    st.lru.erase(p.lru_pos);
    p.in_lru = false;
  }
  // Bounded: a few candidates per use, so a use never costs a long scan.
  auto it = st.lru.end();
  for (int tries = 0; st.lru.size() > st.fd_budget && it != st.lru.begin() && tries < 8; ++tries) {
    --it;
    auto found = st.parts.find(*it);
    hosted* q = found == st.parts.end() ? nullptr : found->second.get();
    if (q && q->log && !q->log->release_fd()) {
      if (!q->pending.empty() || q == &p)
        continue;  // its round comes next, or it is the one in use
      // acks=none data: synced before its file closes. Out of the list
      // first: a failed sync takes it offline.
      q->in_lru = false;
      it = st.lru.erase(it);
      flush_one(self, *q);
      if (q->log)
        q->log->release_fd();
      ++st.fds_released;
      continue;
    }
    if (q)
      q->in_lru = false;
    it = st.lru.erase(it);
    ++st.fds_released;
  }
}

/// Takes partition `id` out of the worker (its fd bookkeeping included).
std::unique_ptr<hosted> take_out(worker_ptr self, uint64_t id) {
  auto& st = self->state;
  auto it = st.parts.find(id);
  if (it == st.parts.end())
    return nullptr;
  auto owned = std::move(it->second);
  st.parts.erase(it);
  if (owned->in_lru) {
    st.lru.erase(owned->lru_pos);
    owned->in_lru = false;
  }
  return owned;
}

/// After a failed syncfs: the write-back error may belong to any file of
/// the file system, so every log of this worker written since its own last
/// fdatasync syncs its own file, which reports an error of that file (and
/// goes offline on one). Other workers see the same error through their
/// own syncfs descriptor.
void sync_after_failed_syncfs(worker_ptr self) {
  for (auto& [id, p] : self->state.parts)
    if (p->log && p->log->written_since_fdatasync())
      flush_one(self, *p);
  for (auto& p : self->state.closing)
    if (p->log && p->log->written_since_fdatasync())
      flush_one(self, *p);
}

/// Stops the worker's WAL for the rest of the run (a failed commit, or a
/// partition with entries in it that went offline): its files stay, so
/// the next start replays them, and every later round syncs the
/// partitions' segments as without a WAL.
void stop_wal(worker_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.wal)
    return;
  log::get("storage")->error("wal.stopped io_worker={} file={} reason=\"{}\" msg=\"its files stay and replay at the "
                             "next start; rounds now sync each partition's segments\"",
                             st.index, st.wal->path(), why);
  st.wal.reset();
  st.wal_stopped = why;
  // Without a WAL behind them, appends are written at once again (an
  // acks=none append then survives a process crash, as without the WAL).
  auto write_at_once = [](hosted& p) {
    if (!p.log)
      return;
    p.log->set_write_behind(0);
    if (auto written = p.log->write_out(); !written)
      log::get("storage")->warn("segment.write_out_failed topic={} partition={} error=\"{}\"", p.settings.topic,
                                p.settings.partition, written.err().message);
  };
  for (auto& [id, p] : st.parts)
    write_at_once(*p);
  for (auto& p : st.closing)
    write_at_once(*p);
}

/// A WAL checkpoint: makes the segments of every partition with entries in
/// the WAL durable (storage::sync_round: one syncfs for many), then starts
/// an empty WAL file and deletes the older ones. A partition whose sync
/// fails goes offline (its waiting appends fail) and the WAL stops with
/// its files kept. Returns whether the WAL holds no entry any more.
bool wal_checkpoint(worker_ptr self) {
  auto& st = self->state;
  if (!st.wal)
    return st.wal_names.empty();
  // Partitions waiting for the next close round (taken out of `parts`) may
  // hold entries too: the older files go only once they are synced as well.
  std::vector<hosted*> in_wal;
  std::vector<storage::partition_log*> logs;
  auto add = [&](hosted& p) {
    if (p.in_wal && p.log) {
      in_wal.push_back(&p);
      logs.push_back(&*p.log);
    }
  };
  for (auto& [id, p] : st.parts)
    add(*p);
  for (auto& p : st.closing)
    add(*p);
  storage::sync_round_stats stats;
  auto results = storage::sync_round(logs, *st.syncfs, stats);
  st.syncfs_calls += stats.syncfs_calls;
  st.fdatasyncs += stats.fdatasyncs;
  for (size_t i = 0; i < in_wal.size(); ++i) {
    if (results[i])
      in_wal[i]->fresh = false;
    else
      answer(*in_wal[i], take_offline(self, *in_wal[i], results[i].err()));  // stops the WAL
  }
  if (stats.syncfs_failed)
    sync_after_failed_syncfs(self);
  if (!st.wal)
    return false;
  if (auto restarted = st.wal->restart(); !restarted) {
    stop_wal(self, "checkpoint: " + restarted.err().message);
    return false;
  }
  for (auto& [id, p] : st.parts)
    p->in_wal = p->wal_uncommitted = false;
  for (auto& p : st.closing)
    p->in_wal = p->wal_uncommitted = false;
  st.wal_uncommitted.clear();
  st.wal_names.clear();
  st.writeback_at = 0;
  ++st.wal_checkpoints;
  log::get("storage")->debug("wal.checkpoint io_worker={} partitions={} file={}", st.index, in_wal.size(),
                             st.wal->path());
  return true;
}

/// Makes sure no entry of `s`'s partition in the worker's WAL files is ever
/// replayed, before its log is deleted or reset: a checkpoint while the WAL
/// runs (the files go), otherwise (stopped, or the checkpoint failed) a
/// durable note that replay skips the partition's entries in every file
/// there now (storage::drop_wal_entries; a stopped WAL adds no file). False
/// when neither worked: the caller must then leave the log as it is.
bool forget_wal_entries(worker_ptr self, const partition_settings& s) {
  auto& st = self->state;
  if (s.data_dir != st.data_dir || !st.wal_names.count({s.topic, s.partition}) || wal_checkpoint(self))
    return true;
  if (auto dropped = storage::drop_wal_entries(st.data_dir, s.topic, s.partition); !dropped) {
    log::get("storage")->error("wal.drop_failed topic={} partition={} error=\"{}\"", s.topic, s.partition,
                               dropped.err().message);
    return false;
  }
  return true;
}

/// Starts a write-back of the data directory's file system on a thread of
/// its own (one syncfs), so that the segments' pages the WAL covers reach
/// the disk while the worker goes on committing: the checkpoint's own sync,
/// which the worker waits for, then finds little left to write. Measured
/// without it (bench/kafka/kafka_bench.sh, 2026-12-02): a checkpoint after
/// 64 MiB of appends stalled the worker for 100-200 ms, the p99 of produce
/// at 5,000 records/s went from 0.3 to 90 ms. Its result is not used (the
/// checkpoint's syncfs, through the worker's own descriptor, is what
/// counts: syncfs reports an error to every descriptor that has not seen
/// it). At most one runs per worker; it starts every 1/16 of
/// WalCheckpointBytes of WAL growth.
void start_writeback(worker_ptr self) {
  auto& st = self->state;
  // Without a usable syncfs descriptor per worker, a foreign syncfs could
  // take a write-back error a segment's own fdatasync must see.
  if (!st.wal || st.writeback_running->load() || !st.syncfs->usable())
    return;
  const auto step = static_cast<uint64_t>(std::max<int64_t>(st.wal_checkpoint_bytes / 16, 1 << 20));
  if (st.wal->file_bytes() < st.writeback_at + step)
    return;
  st.writeback_at = st.wal->file_bytes();
  st.writeback_running->store(true);
  try {
    std::thread([dir = st.data_dir, running = st.writeback_running] {
      int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd >= 0) {
        (void)::syncfs(fd);
        ::close(fd);
      }
      running->store(false);
    }).detach();
    ++st.writebacks;
  } catch (const std::system_error&) {
    st.writeback_running->store(false);  // no thread to spare: the checkpoint syncs it all
  }
}

/// Bytes of acks=none appends a worker's WAL buffers before a round
/// commits them on their own.
constexpr size_t wal_buffer_limit = 4u << 20;

/// Writes every held append of the worker to its segment file.
/// The partitions listed in `ids` that the worker still hosts, each with
/// its `listed` flag cleared; the list is left empty.
std::vector<hosted*> take_listed(worker_state& st, std::vector<uint64_t>& ids, bool hosted::*listed) {
  std::vector<hosted*> out;
  out.reserve(ids.size());
  for (auto id : std::exchange(ids, {}))
    if (auto it = st.parts.find(id); it != st.parts.end()) {
      it->second.get()->*listed = false;
      out.push_back(it->second.get());
    }
  return out;
}

void note_held(worker_ptr self, hosted& p);

void write_out_held(worker_ptr self) {
  auto& st = self->state;
  st.write_out_scheduled = false;
  std::vector<hosted*> failed;
  for (auto* held : take_listed(st, st.held, &hosted::in_held)) {
    auto& p = *held;
    if (!p.log)
      continue;
    ++st.write_outs;
    if (auto written = p.log->write_out(); !written)
    {
      log::get("storage")->warn("segment.write_out_failed topic={} partition={} error=\"{}\" msg=\"the bytes stay "
                                "held and are tried again; its next sync writes them or takes it offline\"",
                                p.settings.topic, p.settings.partition, written.err().message);
      failed.push_back(&p);
    }
  }
  for (auto* p : failed)
    note_held(self, *p);
}

/// Lists `p` for the next write-out when its log holds bytes, and makes
/// sure one is scheduled.
void note_held(worker_ptr self, hosted& p) {
  auto& st = self->state;
  if (p.in_held || !p.log || p.log->held_bytes() == 0)
    return;
  p.in_held = true;
  st.held.push_back(p.id);
  if (!st.write_out_scheduled) {
    st.write_out_scheduled = true;
    self->delayed_send(self, std::chrono::milliseconds(st.write_behind_ms), write_out_atom::value);
  }
}

/// One group commit round over every partition of the worker with appends
/// waiting, then every one of those appends is answered. With the WAL on,
/// one commit of the WAL (one write, one fdatasync) makes the appends of
/// every partition of the round durable; a partition whose directory is
/// not durable yet, or every partition when the WAL is off or stopped,
/// syncs its segment instead (storage::sync_round: one fdatasync for a
/// single partition, one syncfs for several). A WAL past
/// Storage.WalCheckpointBytes is checkpointed after the answers.
void sync_round(worker_ptr self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  std::vector<hosted*> via_wal, via_logs;
  for (auto* p : take_listed(st, st.waiting, &hosted::in_waiting))
    if (p->log && !p->pending.empty())
      (st.wal && p->in_wal && !p->fresh ? via_wal : via_logs).push_back(p);
  const bool commit = st.wal && st.wal->pending() && (!via_wal.empty() || st.wal->buffered_bytes() >= wal_buffer_limit);
  if (via_wal.empty() && via_logs.empty() && !commit)
    return;
  ++st.rounds;
  auto t0 = std::chrono::steady_clock::now();
  if (commit) {
    const auto bytes = st.wal->buffered_bytes();
    if (auto committed = st.wal->commit(); committed) {
      ++st.wal_commits;
      st.wal_bytes += bytes;
      for (auto id : std::exchange(st.wal_uncommitted, {}))
        if (auto it = st.parts.find(id); it != st.parts.end()) {
          it->second->wal_uncommitted = false;
          it->second->wal_durable_end = it->second->wal_added_end;
        }
    } else {
      stop_wal(self, "commit: " + committed.err().message);
      via_logs.insert(via_logs.end(), via_wal.begin(), via_wal.end());
      via_wal.clear();
    }
  }
  std::vector<storage::partition_log*> logs;
  for (auto* p : via_logs)
    logs.push_back(&*p->log);
  storage::sync_round_stats stats;
  auto results = storage::sync_round(logs, *st.syncfs, stats);
  sync_histogram().observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  st.syncfs_calls += stats.syncfs_calls;
  st.fdatasyncs += stats.fdatasyncs;
  for (auto* p : via_wal) {
    ++p->c.fsyncs;
    answer(*p, {});
  }
  for (size_t i = 0; i < via_logs.size(); ++i) {
    auto& p = *via_logs[i];
    ++p.c.fsyncs;
    if (results[i])
      p.fresh = false;
    answer(p, results[i] ? caf::error{} : take_offline(self, p, results[i].err()));
  }
  if (stats.syncfs_failed)
    sync_after_failed_syncfs(self);
  if (st.wal && static_cast<int64_t>(st.wal->file_bytes()) >= st.wal_checkpoint_bytes)
    wal_checkpoint(self);
  else
    start_writeback(self);
}

/// Holds `ack` until the next sync round (group commit: one round for
/// every append of this worker queued before it runs).
void wait_for_round(worker_ptr self, hosted& p, pending_ack ack) {
  auto& st = self->state;
  if (!p.in_waiting) {
    p.in_waiting = true;
    st.waiting.push_back(p.id);
  }
  p.pending.push_back(std::move(ack));
  if (!st.flush_scheduled) {
    st.flush_scheduled = true;
    self->send(self, flush_atom::value);
  }
}

/// Answers the current request `base` after the next sync round.
caf::result<int64_t> ack_when_durable(worker_ptr self, hosted& p, int64_t base) {
  auto rp = self->make_response_promise<int64_t>();
  wait_for_round(self, p, pending_ack{rp, nullptr, base});
  return rp;
}

void run_retention(hosted& p) {
  const auto& cfg = p.settings.config;
  if (!p.log)
    return;
  // A recovery point that lags (no flush since the interval passed) is
  // brought up to date here.
  if (auto cp = p.log->checkpoint(); !cp)
    log::get("broker")->warn("checkpoint.failed topic={} partition={} error=\"{}\"", p.settings.topic,
                             p.settings.partition, cp.err().message);
  p.log->expire_producers(now_ms());
  if (cfg.retention_bytes < 0 && cfg.retention_ms < 0)
    return;
  auto r = p.log->apply_retention(cfg.retention_bytes, cfg.retention_ms, now_ms());
  if (!r)
    log::get("broker")->warn("retention.failed topic={} partition={} error=\"{}\"", p.settings.topic,
                             p.settings.partition, r.err().message);
  else if (r->segments_deleted > 0)
    log::get("broker")->info("retention.applied topic={} partition={} segments={} bytes={} log_start={}",
                             p.settings.topic, p.settings.partition, r->segments_deleted, r->bytes_deleted,
                             p.log->log_start().value);
}

std::string repair_route(const partition_settings& s) {
  return "POST /admin/partitions/" + s.topic + "/" + std::to_string(s.partition) + "/truncate-corrupt";
}

std::string summary(const hosted& p, int worker) {
  nlohmann::json j{{"topic", p.settings.topic}, {"partition", p.settings.partition}, {"io_worker", worker}};
  if (!p.log) {
    j["online"] = false;
    j["error"] = p.open_error;
    if (p.damage) {
      const auto& d = *p.damage;
      j["corruption"] = {{"file", d.path},
                         {"position", d.position},
                         {"first_offset", d.first.value},
                         {"end_offset", d.end.value},
                         {"recovery_point", d.recovery_point.value},
                         {"sealed_segment", d.sealed},
                         {"reason", d.reason}};
      j["repair"] = repair_route(p.settings);
    }
    return j.dump();
  }
  j["online"] = true;
  j["sealed"] = p.sealed;
  j["log_start_offset"] = p.log->log_start().value;
  j["log_end_offset"] = p.log->log_end().value;
  // Offsets below it survive a crash: synced in the segments, or committed
  // in the worker's WAL (replayed at the next start).
  j["durable_offset"] = std::max(p.log->durable_offset().value, p.in_wal ? p.wal_durable_end : int64_t{0});
  j["segment_durable_offset"] = p.log->durable_offset().value;
  j["recovery_point"] = p.log->recovery_point().value;
  j["size_bytes"] = p.log->size_bytes();
  j["segments"] = p.log->segment_count();
  j["file_open"] = p.log->holds_fd();
  j["idempotent_producers"] = p.log->producers().producer_count();
  j["pending_acks"] = p.pending.size();
  j["held_bytes"] = p.log->held_bytes();
  j["bytes_in"] = p.c.bytes_in;
  j["bytes_out"] = p.c.bytes_out;
  j["records_in"] = p.c.records_in;
  j["records_out"] = p.c.records_out;
  j["fsyncs"] = p.c.fsyncs;
  j["config"] = {{"segment.bytes", p.settings.config.segment_bytes},
                 {"retention.bytes", p.settings.config.retention_bytes},
                 {"retention.ms", p.settings.config.retention_ms}};
  return j.dump();
}

/// The marker of a durable seal: `<partition dir>/sealed`.
std::string seal_marker(const std::string& dir) { return dir + "/sealed"; }

/// Whole batches from `from`; `fetch` counts them as consumer traffic
/// (a move's copy reads are not client load).
caf::result<std::string, int64_t, int64_t> read_batches(hosted& p, int64_t from, int32_t max_bytes, bool fetch) {
  if (!p.log)
    return offline(p);
  if (fetch && p.durable_seal)
    return make_error(errc::partition_moved,
                      "partition " + p.name() + " is a move's copy not yet confirmed; retry at its owner");
  auto r = p.log->read(storage::offset{from}, static_cast<size_t>(std::max(max_bytes, 1)));
  if (!r) {
    if (r.err().code == storage::errc::offset_out_of_range)
      return make_out_of_range(from, r.err().log_start.value, r.err().log_end.value);
    return storage_failure(r.err());
  }
  if (!fetch)
    return caf::make_result(std::move(r->batches), r->log_start.value, r->log_end.value);
  std::string_view rest = r->batches;
  uint64_t records = 0;
  while (!rest.empty()) {
    auto h = storage::peek_batch_header(rest);
    if (!h)
      break;
    records += static_cast<uint64_t>(h->last.value - h->base.value + 1);
    rest.remove_prefix(h->size);
  }
  p.c.bytes_out += r->batches.size();
  p.c.records_out += records;
  p.m_bytes_out->inc(static_cast<double>(r->batches.size()));
  p.m_records_out->inc(static_cast<double>(records));
  return caf::make_result(std::move(r->batches), r->log_start.value, r->log_end.value);
}

storage::log_config log_config_of(worker_ptr self, const partition_settings& s) {
  storage::log_config lc;
  lc.segment_bytes = static_cast<uint64_t>(s.config.segment_bytes);
  lc.deleter = self->state.deleter.get();
  // Only appends the WAL makes durable may wait in memory.
  if (self->state.wal && s.data_dir == self->state.data_dir)
    lc.write_behind_bytes = self->state.write_behind_bytes;
  return lc;
}

std::string dir_of(const partition_settings& s) {
  return storage::partition_dir(s.data_dir, s.topic, s.partition);
}

/// Repairs a log that open refused as corrupt and brings it online;
/// replies what was cut.
caf::result<std::string> repair(worker_ptr self, hosted& p) {
  const auto name = p.name();
  if (p.log)
    return make_coded_error(409, "not_corrupt", "partition " + name + " is online: nothing to repair");
  if (!p.damage)
    return make_coded_error(409, "not_corrupt", "partition " + name + " is offline but its log is not corrupt ("
                                                  + p.open_error + "); restart the node instead");
  storage::repair_result report;
  auto fixed = storage::partition_log::repair(dir_of(p.settings), log_config_of(self, p.settings), report);
  if (!fixed) {
    log::get("broker")->error("partition.repair_failed topic={} partition={} error=\"{}\"", p.settings.topic,
                              p.settings.partition, fixed.err().message);
    return storage_failure(fixed.err());
  }
  p.log.emplace(std::move(fixed.value()));
  {
    // A move's destination copy stays sealed through a repair too.
    std::error_code ec;
    p.durable_seal = std::filesystem::exists(seal_marker(p.log->dir()), ec);
    p.sealed = p.sealed || p.durable_seal;
  }
  p.damage.reset();
  p.open_error.clear();
  p.set_offline(false);
  nlohmann::json cuts = nlohmann::json::array();
  for (const auto& c : report.cuts)
    cuts.push_back({{"file", c.path},
                    {"position", c.position},
                    {"first_offset", c.first.value},
                    {"end_offset", c.end.value},
                    {"records", c.records},
                    {"bytes", c.bytes},
                    {"reason", c.reason}});
  log::get("broker")->warn("partition.repaired topic={} partition={} records_removed={} bytes_removed={} cuts={} "
                           "log_end={}",
                           p.settings.topic, p.settings.partition, report.records, report.bytes, report.cuts.size(),
                           p.log->log_end().value);
  return nlohmann::json{{"topic", p.settings.topic},
                        {"partition", p.settings.partition},
                        {"records_removed", report.records},
                        {"bytes_removed", report.bytes},
                        {"cuts", cuts},
                        {"log_start_offset", p.log->log_start().value},
                        {"log_end_offset", p.log->log_end().value},
                        {"online", true}}
    .dump();
}

/// Seals or unseals; a durable seal writes the marker (fsynced) before it is
/// reported, and any unseal removes it. Appends already taken are made
/// durable first, so the log end returned is final while sealed.
caf::result<int64_t> seal(worker_ptr self, hosted& p, bool sealed, bool durable) {
  if (!p.log)
    return offline(p);
  // Everything appended, and a new log's own directory (which must survive
  // a crash before a marker inside it means anything), is synced first.
  if (sealed && durable)  // a log never written has no directory yet to hold the marker
    if (auto made = p.log->materialize(); !made)
      return make_error(errc::storage_error, "cannot create " + p.log->dir() + ": " + made.err().message);
  flush_one(self, p);
  if (!p.log)
    return offline(p);
  auto marker = seal_marker(p.log->dir());
  std::error_code ec;
  if (sealed && durable) {
    if (auto werr = util::write_file_atomic(marker, "sealed by a partition move\n"))
      return make_error(errc::storage_error, "cannot write " + marker + ": " + werr.message());
  } else if (!sealed && std::filesystem::exists(marker, ec)) {
    std::filesystem::remove(marker, ec);
    if (!ec)
      ec = util::fsync_dir(p.log->dir());
    if (ec)
      return make_error(errc::storage_error, "cannot remove " + marker + ": " + ec.message());
  }
  p.sealed = sealed;
  p.durable_seal = sealed && (durable || p.durable_seal);
  return p.log->log_end().value;
}

/// Opens (and recovers) the log of a newly assigned partition.
void open_partition(worker_ptr self, uint64_t id, partition_settings settings) {
  auto owned = std::make_unique<hosted>();
  auto& p = *owned;
  p.id = id;
  p.settings = std::move(settings);
  auto dir = dir_of(p.settings);
  auto opened = storage::partition_log::open(dir, log_config_of(self, p.settings));
  if (opened) {
    p.log.emplace(std::move(opened.value()));
    p.fresh = !p.log->on_disk();
    // A move's destination copy stays sealed across a restart until the
    // move confirms or cleans it up (see seal_marker).
    std::error_code ec;
    p.sealed = p.durable_seal = std::filesystem::exists(seal_marker(dir), ec);
    log::get("broker")->debug("partition.opened topic={} partition={} log_start={} log_end={}", p.settings.topic,
                              p.settings.partition, p.log->log_start().value, p.log->log_end().value);
  } else if (opened.err().code == storage::errc::corrupt_log && opened.err().damaged) {
    // Damage recovery may not cut: nothing is removed, the partition waits
    // for the operator's repair.
    const auto& d = *opened.err().damaged;
    p.damage = d;
    p.open_error = opened.err().message + "; repair: " + repair_route(p.settings);
    p.set_offline(true);
    log::get("broker")->error("partition.corrupt topic={} partition={} file={} position={} first_offset={} "
                              "end_offset={} recovery_point={} reason=\"{}\" repair=\"{}\"",
                              p.settings.topic, p.settings.partition, d.path, d.position, d.first.value, d.end.value,
                              d.recovery_point.value, d.reason, repair_route(p.settings));
  } else {
    p.open_error = opened.err().message;
    p.set_offline(true);
    log::get("broker")->error("partition.offline topic={} partition={} dir={} error=\"{}\"", p.settings.topic,
                              p.settings.partition, dir, p.open_error);
  }
  auto& reg = metrics::registry::global();
  metrics::labels topic_label{{"topic", p.settings.topic}};
  p.m_bytes_in = &reg.get_counter("moonmq_produce_bytes_total", "Bytes appended to partition logs", topic_label);
  p.m_records_in = &reg.get_counter("moonmq_produce_records_total", "Records appended to partition logs",
                                    topic_label);
  p.m_bytes_out = &reg.get_counter("moonmq_fetch_bytes_total", "Bytes read from partition logs", topic_label);
  p.m_records_out = &reg.get_counter("moonmq_fetch_records_total", "Records read from partition logs (whole batches)",
                                     topic_label);
  if (p.settings.retention_check_ms > 0)
    self->delayed_send(self, std::chrono::milliseconds(p.settings.retention_check_ms), retain_atom::value, id);
  auto& slot = self->state.parts[id];
  slot = std::move(owned);
  touch(self, *slot);
  opening_gauge().add(-1.0);
}

/// What an append came to: answered at once (`error`, or `base` when not
/// `wait`), or `base` once the next sync round made it durable (`wait`).
struct append_outcome {
  int64_t base = 0;
  caf::error error;
  bool wait = false;
};

/// Appends a client's batch (offsets assigned in place) and, with the WAL
/// on, adds it to the WAL's next commit: every append of a partition since
/// the last checkpoint is in the WAL, acks=none included, so that replay
/// can continue its log from wherever a crash cut its segment.
append_outcome try_append(worker_ptr self, hosted& p, std::string& batch, bool durable) {
  if (!p.log)
    return {0, offline(p)};
  if (p.sealed)
    return {0, make_error(errc::partition_moved, "partition " + p.name() + " is being moved; retry at its owner")};
  auto size = batch.size();
  auto base = p.log->append(batch);
  if (!base && base.err().code == storage::errc::duplicate_sequence) {
    // A producer's resend: answered with the first append's offset once
    // that is durable, and nothing is appended.
    bool durable_now = base.err().original < p.log->durable_offset() && !p.log->needs_sync();
    return {base.err().original.value, {}, durable && !durable_now};
  }
  if (!base) {
    auto code = base.err().code;
    if (code == storage::errc::io_error)
      return {0, storage_failure(base.err())};
    if (code == storage::errc::out_of_order_sequence || code == storage::errc::invalid_producer_epoch)
      return {0, make_coded_error(409, storage::to_string(code), base.err().message)};
    return {0, make_error(errc::invalid_request,
                          std::string("invalid batch: ") + storage::to_string(code) + ": " + base.err().message)};
  }
  auto& st = self->state;
  if (st.wal && p.settings.data_dir == st.data_dir) {
    st.wal->add(p.settings.topic, p.settings.partition, batch);
    if (!p.in_wal)
      st.wal_names.emplace(p.settings.topic, p.settings.partition);
    p.in_wal = true;
    p.wal_added_end = p.log->log_end().value;
    if (!p.wal_uncommitted) {
      p.wal_uncommitted = true;
      st.wal_uncommitted.push_back(p.id);
    }
    if (!durable && !st.flush_scheduled && st.wal->buffered_bytes() >= wal_buffer_limit) {
      st.flush_scheduled = true;
      self->send(self, flush_atom::value);
    }
  }
  note_held(self, p);
  auto info = storage::peek_batch_header(batch);
  auto records = info ? static_cast<uint64_t>(info->last.value - info->base.value + 1) : 0;
  p.c.bytes_in += size;
  p.c.records_in += records;
  ++p.c.batches_in;
  p.m_bytes_in->inc(static_cast<double>(size));
  p.m_records_in->inc(static_cast<double>(records));
  return {base->value, {}, durable};
}

caf::result<int64_t> append_batch(worker_ptr self, hosted& p, std::string& batch, bool durable) {
  auto out = try_append(self, p, batch, durable);
  if (out.error)
    return out.error;
  if (!out.wait)
    return out.base;
  return ack_when_durable(self, p, out.base);
}

/// A direct group (append_direct): each append as append_batch would, its
/// answer through its callbacks.
void append_group(worker_ptr self, detail::direct_group& group) {
  for (auto& a : group.items) {
    auto it = self->state.parts.find(a.id);
    if (it == self->state.parts.end()) {
      a.reply->deliver(not_hosted(a.id));
      continue;
    }
    auto& p = *it->second;
    auto out = try_append(self, p, a.batch, a.durable);
    if (out.error)
      a.reply->deliver(out.error);
    else if (!out.wait)
      a.reply->deliver(out.base);
    else
      wait_for_round(self, p, pending_ack{{}, std::move(a.reply), out.base});
    touch(self, p);
  }
}

caf::result<int64_t> copy_batches(worker_ptr self, hosted& p, std::string& batches, bool durable) {
  if (!p.log)
    return offline(p);
  // Only a sealed copy (a move's destination, sealed by its ensure) takes
  // batches with their offsets: a copy that serves producers never does.
  if (!batches.empty() && !p.durable_seal)
    return make_error(errc::invalid_request, "copy: " + p.settings.topic + "/" + std::to_string(p.settings.partition)
                                               + " is not sealed: it serves producers and takes no copied batches");
  std::string_view rest = batches;
  while (!rest.empty()) {
    auto size = storage::peek_batch_size(rest);
    if (!size || *size > rest.size())
      return make_error(errc::invalid_request,
                        "copy: truncated batch at byte " + std::to_string(batches.size() - rest.size()));
    auto r = p.log->append_with_offsets(rest.substr(0, *size));
    if (!r)
      return make_error(errc::invalid_request,
                        std::string("copy: ") + storage::to_string(r.err().code) + ": " + r.err().message);
    rest.remove_prefix(*size);
  }
  note_held(self, p);
  if (durable) {
    ++self->state.fdatasyncs;
    if (auto synced = p.log->flush(); !synced)
      return take_offline(self, p, synced.err());
  }
  return p.log->log_end().value;
}

caf::result<bool> remove_partition(worker_ptr self, uint64_t id) {
  auto owned = take_out(self, id);
  if (!owned)
    return not_hosted(id);
  auto& p = *owned;
  answer(p, make_error(errc::unknown_topic, "topic " + p.settings.topic + " was deleted"));
  p.log.reset();  // no clean close: its directory goes next
  auto where = dir_of(p.settings);
  auto settings = p.settings;
  owned.reset();
  // Its entries leave the WAL first, so that a partition created again
  // under the same name never has them replayed into it (replay also skips
  // a partition whose directory is gone, which covers a crash between).
  if (!forget_wal_entries(self, settings))
    return make_error(errc::storage_error, "cannot remove " + where
                                             + ": the write-ahead log holds its entries and stopped; restart the "
                                               "node first");
  if (auto removed = storage::partition_log::remove(where); !removed) {
    log::get("broker")->error("partition.delete_failed dir={} error=\"{}\"", where, removed.err().message);
    return make_error(errc::storage_error, "cannot remove " + where + ": " + removed.err().message);
  }
  log::get("broker")->info("partition.deleted topic={} partition={}", settings.topic, settings.partition);
  return true;
}

/// Closes `logs` (taken out of the worker already) together
/// (storage::close_together: one log closes on its own; several, as when a
/// node stops, cost two syncfs in all). Appends still waiting for a round
/// are answered once their sync returned. A log whose sync failed is
/// dropped without a checkpoint, as take_offline does.
void close_logs(worker_ptr self, std::vector<std::unique_ptr<hosted>> logs, bool stopping = false) {
  std::vector<hosted*> open;
  std::vector<storage::partition_log*> ls;
  for (auto& p : logs)
    if (p->log) {
      open.push_back(p.get());
      ls.push_back(&*p->log);
    }
  storage::sync_round_stats stats;
  auto closed = storage::close_together(ls, *self->state.syncfs, stats);
  self->state.syncfs_calls += stats.syncfs_calls;
  self->state.fdatasyncs += stats.fdatasyncs;
  for (size_t i = 0; i < open.size(); ++i) {
    auto& p = *open[i];
    caf::error failure;
    if (!closed[i]) {
      log::get("broker")->warn("partition.close_failed topic={} partition={} error=\"{}\"", p.settings.topic,
                               p.settings.partition, closed[i].err().message);
      failure = storage_failure(closed[i].err());
      p.log.reset();  // dropped without a checkpoint, as take_offline does
      if (p.in_wal)
        stop_wal(self, "partition " + p.name() + " failed to close with entries in the WAL");
    }
    answer(p, failure);
  }
  if (stats.syncfs_failed)
    sync_after_failed_syncfs(self);
  // A closed partition's entries leave the WAL (see remove_partition): a
  // checkpoint, or, when the worker stops with every log closed, no WAL
  // file at all.
  bool closed_in_wal = false;
  for (auto& p : logs)
    closed_in_wal = closed_in_wal || p->in_wal;
  auto& st = self->state;
  if (stopping && st.wal) {
    if (auto removed = st.wal->remove_all(); !removed)
      log::get("storage")->warn("wal.remove_failed io_worker={} error=\"{}\" msg=\"replayed harmlessly at the next "
                                "start\"",
                                st.index, removed.err().message);
    st.wal.reset();
  } else if (closed_in_wal && st.wal) {
    wal_checkpoint(self);
  }
  // Logs closed cleanly close again in their destructors at no cost: their
  // checkpoint already says clean at their log end.
}

/// Closes what the next close round would now: a partition reopened on
/// the same directory (a restarted partition actor) must find the old log
/// closed, its clean checkpoint written, before it opens.
void finish_closes(worker_ptr self) {
  if (auto logs = std::exchange(self->state.closing, {}); !logs.empty())
    close_logs(self, std::move(logs));
}

/// Every log the worker holds, closed together (the worker is stopping).
void close_all(worker_ptr self) {
  auto& st = self->state;
  auto logs = std::exchange(st.closing, {});
  for (auto& [id, p] : st.parts)
    logs.push_back(std::move(p));
  st.parts.clear();
  st.lru.clear();
  close_logs(self, std::move(logs), true);
}

std::string worker_summary(worker_ptr self) {
  auto& st = self->state;
  size_t offline_count = 0, waiting = 0;
  for (auto& [id, p] : st.parts) {
    offline_count += p->log ? 0 : 1;
    waiting += p->pending.size();
  }
  return nlohmann::json{{"io_worker", st.index},
                        {"partitions", st.parts.size()},
                        {"offline_partitions", offline_count},
                        {"open_files", st.lru.size()},
                        {"open_files_budget", st.fd_budget},
                        {"files_released", st.fds_released},
                        {"pending_acks", waiting},
                        {"sync_rounds", st.rounds},
                        {"syncfs_calls", st.syncfs_calls},
                        {"fdatasyncs", st.fdatasyncs},
                        {"files_to_delete", st.deleter ? st.deleter->queued() : 0},
                        {"write_ahead_log",
                         {{"on", st.wal.has_value()},
                          {"file", st.wal ? st.wal->path() : ""},
                          {"file_bytes", st.wal ? st.wal->file_bytes() : 0},
                          {"checkpoint_bytes", st.wal_checkpoint_bytes},
                          {"commits", st.wal_commits},
                          {"bytes_committed", st.wal_bytes},
                          {"checkpoints", st.wal_checkpoints},
                          {"writebacks", st.writebacks},
                          {"write_behind_bytes", st.wal ? st.write_behind_bytes : 0},
                          {"partitions_holding", st.held.size()},
                          {"write_outs", st.write_outs},
                          {"stopped", st.wal_stopped}}}}
    .dump();
}

/// Runs `fn(hosted&)` for partition `id`, then updates the fd bookkeeping;
/// a partition no longer held answers not_hosted.
template <class F>
auto with_partition(worker_ptr self, uint64_t id, F fn) -> decltype(fn(std::declval<hosted&>())) {
  auto it = self->state.parts.find(id);
  if (it == self->state.parts.end())
    return not_hosted(id);
  auto& p = *it->second;
  auto out = fn(p);
  touch(self, p);
  return out;
}

caf::behavior worker_fn(worker_ptr self, int index, size_t fd_budget, std::shared_ptr<storage::file_deleter> deleter,
                        io_settings settings) {
  const auto& data_dir = settings.data_dir;
  self->state.index = index;
  self->state.data_dir = data_dir;
  self->state.wal_checkpoint_bytes = settings.wal_checkpoint_bytes;
  self->state.write_behind_bytes = settings.write_behind_bytes;
  self->state.write_behind_ms = std::max<int64_t>(1, settings.write_behind_ms);
  if (settings.write_ahead_log && !data_dir.empty()) {
    if (auto opened = storage::wal_writer::open(data_dir, index); opened) {
      self->state.wal.emplace(std::move(opened.value()));
    } else {
      self->state.wal_stopped = "open: " + opened.err().message;
      log::get("storage")->error("wal.open_failed io_worker={} error=\"{}\" msg=\"rounds sync each partition's "
                                 "segments\"",
                                 index, opened.err().message);
    }
  }
  self->state.deleter = std::move(deleter);
  self->state.syncfs = std::make_unique<storage::syncfs_handles>(data_dir);
  self->state.fd_budget = std::max<size_t>(fd_budget, 1);
  (void)offline_gauge();  // listed at 0 from the start
  (void)sync_histogram();
  (void)opening_gauge();
  self->set_exit_handler([self](caf::exit_msg& msg) {
    close_all(self);
    self->quit(msg.reason);
  });
  return {
    [self](open_atom, uint64_t id, partition_settings& s) {
      finish_closes(self);
      open_partition(self, id, std::move(s));
    },
    [self](close_atom, uint64_t id) {
      // Closed by the next close round, with every other close queued
      // before it (a stopping broker's partitions all exit at once).
      auto owned = take_out(self, id);
      if (!owned)
        return;
      self->state.closing.push_back(std::move(owned));
      if (!self->state.close_scheduled) {
        self->state.close_scheduled = true;
        self->send(self, close_atom::value);
      }
    },
    [self](close_atom) {
      self->state.close_scheduled = false;
      finish_closes(self);
    },
    [self](append_atom, uint64_t id, std::string& batch, bool durable) -> caf::result<int64_t> {
      return with_partition(self, id, [&](hosted& p) { return append_batch(self, p, batch, durable); });
    },
    [self](append_atom, std::shared_ptr<detail::direct_group>& group) { append_group(self, *group); },
    [self](copy_atom, uint64_t id, std::string& batches, bool durable) -> caf::result<int64_t> {
      return with_partition(self, id, [&](hosted& p) { return copy_batches(self, p, batches, durable); });
    },
    [self](reset_atom, uint64_t id, int64_t start) -> caf::result<int64_t> {
      return with_partition(self, id, [&](hosted& p) -> caf::result<int64_t> {
        if (!p.log)
          return offline(p);
        if (start < 0)
          return make_error(errc::invalid_request, "reset: start offset must not be negative");
        // Entries of the log before the reset must never replay into it.
        if (!forget_wal_entries(self, p.settings))
          return make_error(errc::storage_error, "reset: the write-ahead log stopped with entries of " + p.name()
                                                   + "; restart the node first");
        if (auto r = p.log->reset(storage::offset{start}); !r)
          return storage_failure(r.err());
        log::get("broker")->info("partition.reset topic={} partition={} start={}", p.settings.topic,
                                 p.settings.partition, start);
        return p.log->log_end().value;
      });
    },
    [self](seal_atom, uint64_t id, bool sealed, bool durable) -> caf::result<int64_t> {
      return with_partition(self, id, [&](hosted& p) { return seal(self, p, sealed, durable); });
    },
    [self](read_atom, uint64_t id, int64_t from, int32_t max_bytes,
           bool fetch) -> caf::result<std::string, int64_t, int64_t> {
      return with_partition(self, id, [&](hosted& p) { return read_batches(p, from, max_bytes, fetch); });
    },
    [self](bounds_atom, uint64_t id) -> caf::result<int64_t, int64_t, int64_t> {
      return with_partition(self, id, [&](hosted& p) -> caf::result<int64_t, int64_t, int64_t> {
        if (!p.log)
          return offline(p);
        return caf::make_result(p.log->log_start().value, p.log->log_end().value,
                                static_cast<int64_t>(p.log->size_bytes()));
      });
    },
    [self](loads_atom, std::shared_ptr<detail::loads_group>& group) {
      group->loads.resize(group->items.size());
      for (size_t k = 0; k < group->items.size(); ++k) {
        auto& out = group->loads[k];
        auto it = self->state.parts.find(group->items[k].second);
        if (it == self->state.parts.end()) {
          out.error = "the partition stopped";
          continue;
        }
        const auto& p = *it->second;
        if (!p.log) {
          out.error = message_of(offline(p));
          continue;
        }
        out.log_start = p.log->log_start().value;
        out.log_end = p.log->log_end().value;
        out.size_bytes = static_cast<int64_t>(p.log->size_bytes());
        out.bytes_in = p.c.bytes_in;
        out.bytes_out = p.c.bytes_out;
        out.records_in = p.c.records_in;
        out.records_out = p.c.records_out;
      }
      return group;
    },
    [self](time_lookup_atom, uint64_t id, int64_t timestamp) -> caf::result<int64_t, int64_t> {
      return with_partition(self, id, [&](hosted& p) -> caf::result<int64_t, int64_t> {
        if (!p.log)
          return offline(p);
        if (timestamp < 0)
          return make_error(errc::invalid_request, "time lookup: the timestamp must not be negative");
        auto found = p.log->offset_for_timestamp(timestamp);
        if (!found)
          return storage_failure(found.err());
        if (!*found)
          return caf::make_result(int64_t{-1}, int64_t{-1});
        return caf::make_result((*found)->off.value, (*found)->timestamp);
      });
    },
    [self](delete_atom, uint64_t id) -> caf::result<bool> {
      finish_closes(self);
      return remove_partition(self, id);
    },
    [self](flush_atom) { sync_round(self); },
    [self](write_out_atom) { write_out_held(self); },
    [self](retain_atom, uint64_t id) {
      auto it = self->state.parts.find(id);
      if (it == self->state.parts.end())
        return;
      auto& p = *it->second;
      run_retention(p);
      touch(self, p);
      if (p.settings.retention_check_ms > 0)
        self->delayed_send(self, std::chrono::milliseconds(p.settings.retention_check_ms), retain_atom::value, id);
    },
    [self](repair_atom, uint64_t id) -> caf::result<std::string> {
      return with_partition(self, id, [&](hosted& p) { return repair(self, p); });
    },
    [self](status_atom, uint64_t id) -> caf::result<std::string> {
      return with_partition(self, id,
                            [&](hosted& p) -> caf::result<std::string> { return summary(p, self->state.index); });
    },
    [self](status_atom) -> std::string { return worker_summary(self); },
  };
}

}  // namespace

class io_pool {
 public:
  std::vector<caf::actor> workers;
  std::atomic<uint64_t> next_id{1};

  ~io_pool() {
    for (auto& w : workers)
      caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
  }

  const caf::actor& pick(const std::string& topic, int32_t partition) const {
    auto h = std::hash<std::string>{}(topic) * 31 + static_cast<size_t>(partition);
    return workers[h % workers.size()];
  }
};

namespace {

struct partition_fwd_state {
  std::shared_ptr<io_pool> pool;  // declared first: released last
  caf::actor worker;
  uint64_t id = 0;
  caf::actor_addr self;  ///< this actor's key in the route table (append_direct)
  static inline const char* name = "partition";

  ~partition_fwd_state() {
    if (self)
      detail::remove_route(self);
    if (worker)
      caf::anon_send(worker, close_atom::value, id);
  }
};

using fwd_ptr = partition_actor::stateful_pointer<partition_fwd_state>;

/// Forwards a request to the worker with the partition's id after the tag;
/// the worker answers the original requester.
template <class... Rs, class Atom, class... Ts>
caf::delegated<Rs...> forward(fwd_ptr self, Atom tag, Ts&&... xs) {
  self->delegate(self->state.worker, tag, self->state.id, std::forward<Ts>(xs)...);
  return {};
}

partition_actor::behavior_type partition_fn(fwd_ptr self, std::shared_ptr<io_pool> pool, caf::actor worker,
                                            uint64_t id) {
  self->state.pool = std::move(pool);
  self->state.worker = std::move(worker);
  self->state.id = id;
  self->state.self = self->address();
  return {
    [self](append_atom a, std::string& batch, bool durable) {
      return forward<int64_t>(self, a, std::move(batch), durable);
    },
    [self](copy_atom a, std::string& batches, bool durable) {
      return forward<int64_t>(self, a, std::move(batches), durable);
    },
    [self](reset_atom a, int64_t start) { return forward<int64_t>(self, a, start); },
    [self](seal_atom a, bool sealed) { return forward<int64_t>(self, a, sealed, false); },
    [self](seal_atom a, bool sealed, bool durable) { return forward<int64_t>(self, a, sealed, durable); },
    [self](read_atom a, int64_t from, int32_t max_bytes) {
      return forward<std::string, int64_t, int64_t>(self, a, from, max_bytes, true);
    },
    [self](read_atom a, int64_t from, int32_t max_bytes, bool fetch) {
      return forward<std::string, int64_t, int64_t>(self, a, from, max_bytes, fetch);
    },
    [self](bounds_atom a) { return forward<int64_t, int64_t, int64_t>(self, a); },
    [self](time_lookup_atom a, int64_t timestamp) { return forward<int64_t, int64_t>(self, a, timestamp); },
    [self](delete_atom a) {
      auto out = forward<bool>(self, a);
      // The worker forgot the partition with the delete; nothing to close.
      self->state.worker = nullptr;
      self->quit();
      return out;
    },
    [self](repair_atom a) { return forward<std::string>(self, a); },
    [self](status_atom a) { return forward<std::string>(self, a); },
  };
}

/// Half the RLIMIT_NOFILE soft limit: the rest is left to sockets, the
/// Raft store, group offsets and sealed segments opened per read.
int64_t default_open_files() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
    return 4096;
  return std::max<int64_t>(64, static_cast<int64_t>(lim.rlim_cur) / 2);
}

}  // namespace

std::shared_ptr<io_pool> spawn_io_pool(caf::actor_system& sys, io_settings settings, const registry_actor* reg) {
  auto pool = std::make_shared<io_pool>();
  auto deleter = std::make_shared<storage::file_deleter>();
  const int threads = std::max(1, settings.threads);
  const int64_t files = settings.max_open_files > 0 ? settings.max_open_files : default_open_files();
  const auto per_worker = static_cast<size_t>(std::max<int64_t>(1, files / threads));
  // What an earlier run's WAL holds goes into the partition logs before any
  // of them opens (a WAL turned off since is still replayed).
  if (!settings.data_dir.empty())
    (void)storage::replay_wal(settings.data_dir);
  for (int i = 0; i < threads; ++i) {
    auto w = sys.spawn<caf::detached>(worker_fn, i, per_worker, deleter, settings);
    if (reg && *reg)
      enroll(*reg, w, "io-worker " + std::to_string(i), "io_worker");
    pool->workers.push_back(std::move(w));
  }
  return pool;
}

partition_actor spawn_partition(caf::actor_system& sys, const std::shared_ptr<io_pool>& pool,
                                partition_settings settings) {
  const auto& worker = pool->pick(settings.topic, settings.partition);
  const auto id = pool->next_id.fetch_add(1);
  // Sent before the partition actor exists, so it is the worker's first
  // message about this partition.
  opening_gauge().add(1.0);
  caf::anon_send(worker, open_atom::value, id, std::move(settings));
  auto actor = sys.spawn(partition_fn, pool, worker, id);
  detail::add_route(actor.address(), detail::partition_route{worker, id});
  return actor;
}

}  // namespace moonmq

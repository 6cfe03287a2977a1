// The durability half of an I/O worker (actors/io_worker_impl.hpp): group
// commit rounds, the write-ahead log and its checkpoints, write-behind.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <system_error>
#include <thread>

#include "actors/errors.hpp"
#include "actors/image.hpp"
#include "actors/io_worker_impl.hpp"
#include "storage/disk_latency.hpp"

namespace moonmq::io_worker_detail {

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

namespace {

/// answer for the appends `acks` of `p` (its pending ones, or a
/// pipelined round's).
void answer_acks(hosted& p, std::vector<pending_ack> acks, const caf::error& failure) {
  if (acks.empty())
    return;
  if (!failure && p.shared && !p.shared->holds(p.settings.topic, p.settings.partition, p.epoch)) {
    // Durable, but at an epoch this broker may no longer vouch for (its
    // lease lapsed, or the image moved on): never acknowledged
    // (docs/shared-storage.md "The lease").
    auto lost = ownership_lost(p);
    for (auto& a : acks)
      a.deliver(lost);
    return;
  }
  if (!failure)
    storage::process_latency().produce.record_since(acks.front().queued);
  for (auto& a : acks)
    a.deliver(failure);
}

}  // namespace

/// Answers every append of `p` waiting for a sync: its base offset, or
/// `failure` when the sync failed. A success records the wait of the
/// oldest of them, whichever path answers it (a round, a seal's or a
/// close's flush), in the process's produce latency window
/// (storage/disk_latency.hpp): one sample per partition and answer.
void answer(hosted& p, const caf::error& failure) {
  answer_acks(p, std::exchange(p.pending, {}), failure);
}

caf::error ownership_lost(const hosted& p) {
  return make_coded_error(fault::unavailable, "ownership_lost",
                          "partition " + p.name() + ": this broker's owner epoch " + std::to_string(p.epoch) +
                            " ended or its lease lapsed before the append was acknowledged; retry at the owner");
}

/// Makes everything appended to `p` durable with its own fdatasync and
/// answers its waiting appends; a failure takes it offline.
void flush_one(worker_ptr self, hosted& p) {
  if (!p.log || !p.log->needs_sync()) {
    if (p.log)
      answer(p, {});
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto durable = p.log->flush();
  storage::test_sync_delay();
  storage::process_latency().sync.record_since(t0);
  ++p.c.fsyncs;
  ++self->state.fdatasyncs;
  if (durable)
    p.fresh = p.segment_sync_due = false;
  answer(p, durable ? caf::error{} : take_offline(self, p, durable.err()));
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
  drain_commit(self);
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
  drain_commit(self);
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
      in_wal[i]->fresh = in_wal[i]->segment_sync_due = false;
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

namespace {

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

}  // namespace

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

bool start_commit(worker_ptr self, const std::vector<hosted*>& via_wal);

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
  if (st.in_flight) {
    // The round runs once the commit under way ends, with every append
    // queued until then; flush_scheduled stays set, so those appends send
    // no flush of their own.
    st.round_after_commit = true;
    return;
  }
  st.flush_scheduled = false;
  std::vector<hosted*> via_wal, via_logs;
  for (auto* p : take_listed(st, st.waiting, &hosted::in_waiting))
    if (p->log && !p->pending.empty())
      (st.wal && p->in_wal && !p->fresh && !p->segment_sync_due ? via_wal : via_logs).push_back(p);
  const bool commit = st.wal && st.wal->pending() && (!via_wal.empty() || st.wal->buffered_bytes() >= wal_buffer_limit);
  if (via_wal.empty() && via_logs.empty() && !commit)
    return;
  if (commit && via_logs.empty() && start_commit(self, via_wal))
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
  // Shared partitions sync with their own fdatasync: on a network file
  // system (NFS's COMMIT) a syncfs is neither a durability nor an error
  // signal for files another client reads (docs/shared-storage.md).
  std::stable_partition(via_logs.begin(), via_logs.end(), [](const hosted* p) { return !p->settings.shared; });
  std::vector<storage::partition_log*> logs;
  size_t local = 0;
  for (auto* p : via_logs)
    if (!p->settings.shared) {
      logs.push_back(&*p->log);
      ++local;
    }
  storage::sync_round_stats stats;
  auto results = storage::sync_round(logs, *st.syncfs, stats);
  for (size_t i = local; i < via_logs.size(); ++i) {
    ++stats.fdatasyncs;
    results.push_back(via_logs[i]->log->flush());
  }
  storage::test_sync_delay();
  sync_histogram().observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  storage::process_latency().sync.record_since(t0);
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
      p.fresh = p.segment_sync_due = false;
    answer(p, results[i] ? caf::error{} : take_offline(self, p, results[i].err()));
  }
  if (stats.syncfs_failed)
    sync_after_failed_syncfs(self);
  if (st.wal && static_cast<int64_t>(st.wal->file_bytes()) >= st.wal_checkpoint_bytes)
    wal_checkpoint(self);
  else
    start_writeback(self);
}

wal_committer::wal_committer(caf::actor_addr worker, std::function<void()> before)
  : worker_(std::move(worker)), before_(std::move(before)) {
  thread_ = std::thread([this] { run(); });
}

wal_committer::~wal_committer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void wal_committer::start(storage::wal_writer::commit_job job, uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    seq_ = seq;
    result_.reset();
  }
  cv_.notify_all();
}

storage::status wal_committer::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return result_.has_value(); });
  return *std::exchange(result_, std::nullopt);
}

void wal_committer::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // A commit under way always ends, stopping or not: its appends wait.
    cv_.wait(lock, [this] { return job_.has_value() || stopping_; });
    if (!job_)
      return;
    auto job = *job_;
    auto seq = seq_;
    lock.unlock();
    if (before_)
      before_();
    auto result = storage::wal_writer::run_commit(job);
    storage::test_sync_delay();
    lock.lock();
    job_.reset();
    result_ = std::move(result);
    cv_.notify_all();
    lock.unlock();
    if (auto worker = caf::actor_cast<caf::actor>(worker_))
      caf::anon_send<caf::message_priority::high>(worker, committed_atom::value, seq);
    lock.lock();
  }
}

/// Starts a round that only commits the WAL (`via_wal`: the partitions
/// whose appends it answers) on the worker's committer and returns true;
/// the worker goes on taking appends, and finish_commit answers these
/// once the commit ends. False (nothing started) when no committer thread
/// can be made: the caller then commits in place.
bool start_commit(worker_ptr self, const std::vector<hosted*>& via_wal) {
  auto& st = self->state;
  if (st.committer_failed)
    return false;
  if (!st.committer) {
    try {
      st.committer = std::make_unique<wal_committer>(self->address(), st.before_wal_commit);
    } catch (const std::system_error& e) {
      st.committer_failed = true;
      log::get("storage")->warn("wal.committer_failed io_worker={} error=\"{}\" msg=\"rounds commit in place\"",
                                st.index, e.what());
      return false;
    }
  }
  wal_round round;
  round.seq = ++st.commit_seq;
  round.started = std::chrono::steady_clock::now();
  round.bytes = st.wal->buffered_bytes();
  for (auto id : std::exchange(st.wal_uncommitted, {}))
    if (auto it = st.parts.find(id); it != st.parts.end()) {
      it->second->wal_uncommitted = false;
      round.durable_ends.emplace_back(id, it->second->wal_added_end);
    }
  round.acks.reserve(via_wal.size());
  for (auto* p : via_wal) {
    p->in_commit = true;
    round.acks.emplace_back(p->id, std::exchange(p->pending, {}));
  }
  ++st.rounds;
  ++st.pipelined_commits;
  st.committer->start(st.wal->begin_commit(), round.seq);
  st.in_flight = std::move(round);
  return true;
}

void finish_commit(worker_ptr self, const storage::status& result) {
  auto& st = self->state;
  auto round = std::move(*st.in_flight);
  st.in_flight.reset();
  st.wal->end_commit(result);
  auto find = [&st](uint64_t id) -> hosted* {
    auto it = st.parts.find(id);
    return it == st.parts.end() ? nullptr : it->second.get();
  };
  for (const auto& [id, acks] : round.acks)
    if (auto* p = find(id))
      p->in_commit = false;
  if (!result) {
    // As a failed commit in place: the WAL stops, and the round's appends
    // are made durable by their segments (answered ahead of any later
    // append of the same partition).
    stop_wal(self, "commit: " + result.err().message);
    for (auto& [id, acks] : round.acks) {
      auto* p = find(id);
      if (!p || !p->log) {  // gone or offline meanwhile: nothing can make them durable now
        auto failure = p ? offline(*p) : storage_failure(result.err());
        for (auto& a : acks)
          a.deliver(failure);
        continue;
      }
      p->pending.insert(p->pending.begin(), std::make_move_iterator(acks.begin()),
                        std::make_move_iterator(acks.end()));
      flush_one(self, *p);
    }
    return;
  }
  ++st.wal_commits;
  st.wal_bytes += round.bytes;
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - round.started).count();
  sync_histogram().observe(seconds);
  storage::process_latency().sync.record_since(round.started);
  for (auto [id, end] : round.durable_ends)
    if (auto* p = find(id))
      p->wal_durable_end = std::max(p->wal_durable_end, end);
  for (auto& [id, acks] : round.acks) {
    auto* p = find(id);
    if (!p) {  // not reached: a partition leaves its worker only after a drain
      for (auto& a : acks)
        a.deliver({});
      continue;
    }
    ++p->c.fsyncs;
    answer_acks(*p, std::move(acks), {});
  }
  if (static_cast<int64_t>(st.wal->file_bytes()) >= st.wal_checkpoint_bytes)
    wal_checkpoint(self);
  else
    start_writeback(self);
}

void drain_commit(worker_ptr self) {
  auto& st = self->state;
  if (!st.in_flight)
    return;
  finish_commit(self, st.committer->wait());
  // A round asked for meanwhile runs from the mailbox, after the request
  // that drained (flush_scheduled is still set for it).
  if (std::exchange(st.round_after_commit, false))
    self->send(self, flush_atom::value);
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

}  // namespace moonmq::io_worker_detail

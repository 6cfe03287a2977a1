// The behaviour of an I/O worker (actors/io_worker_impl.hpp): it holds the
// logs of its partitions and answers their partition actors' requests; the
// durability half (rounds, WAL, write-behind) is io_worker_rounds.cpp.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "actors/image.hpp"
#include "actors/io_worker_impl.hpp"
#include "storage/record_batch.hpp"
#include "util/clock.hpp"

namespace moonmq::io_worker_detail {

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

caf::error storage_failure(const storage::error& e) {
  return make_error(errc::storage_error, std::string(storage::to_string(e.code)) + ": " + e.message);
}

caf::error offline(const hosted& p) {
  if (p.settings.shared && !p.counted_offline)  // dormant: another broker owns it
    return make_error(errc::partition_moved, "partition " + p.name()
                                               + " is not owned by this broker in its applied image; retry at its "
                                                 "owner");
  return make_error(errc::partition_offline, "partition " + p.name() + " is offline: " + p.open_error);
}

std::string seal_marker(const std::string& dir) { return dir + "/sealed"; }

std::string seal_marker_of(worker_ptr self, const hosted& p) {
  if (!p.settings.shared)
    return seal_marker(dir_of(p.settings));
  return shared_seal_marker(self->state.data_dir, p.settings.topic, p.settings.partition, p.settings.created_at);
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
  if (s.shared)
    return shared_partition_root(s.data_dir, s.topic, s.partition, s.created_at);
  return storage::partition_dir(s.data_dir, s.topic, s.partition);
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
      if (!q->pending.empty() || q->in_commit || q == &p)
        continue;  // its round comes next or runs, or it is the one in use
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

/// The admin route that repairs `s`'s log (named in offline errors).
std::string repair_route(const partition_settings& s) {
  return "POST /admin/partitions/" + s.topic + "/" + std::to_string(s.partition) + "/truncate-corrupt";
}

// What only this half of the worker uses.
namespace {

caf::error not_hosted(uint64_t id) {
  return make_error(errc::unknown_topic, "partition " + std::to_string(id) + " is closed (its topic was deleted "
                                                                            "or the broker is stopping)");
}


/// Takes partition `id` out of the worker (its fd bookkeeping included).
std::unique_ptr<hosted> take_out(worker_ptr self, uint64_t id) {
  auto& st = self->state;
  auto it = st.parts.find(id);
  if (it == st.parts.end())
    return nullptr;
  auto owned = std::move(it->second);
  st.parts.erase(it);
  drop_held_copies(*owned, make_error(errc::not_ready, "the partition " + owned->name() + " closed"));
  if (owned->in_lru) {
    st.lru.erase(owned->lru_pos);
    owned->in_lru = false;
  }
  return owned;
}

void run_retention(hosted& p) {
  const auto& cfg = p.settings.config;
  if (!p.log)
    return;
  // Retention deletes files other epochs read: only while the epoch is
  // this broker's and its lease holds (docs/shared-storage.md, point 4).
  if (p.shared && !p.shared->holds(p.settings.topic, p.settings.partition, p.epoch))
    return;
  // A recovery point that lags (no flush since the interval passed) is
  // brought up to date here.
  if (auto cp = p.log->checkpoint(); !cp)
    log::get("broker")->warn("checkpoint.failed topic={} partition={} error=\"{}\"", p.settings.topic,
                             p.settings.partition, cp.err().message);
  p.log->expire_producers(util::wall_ms());
  if (cfg.retention_bytes < 0 && cfg.retention_ms < 0)
    return;
  auto r = p.log->apply_retention(cfg.retention_bytes, cfg.retention_ms, util::wall_ms());
  if (!r)
    log::get("broker")->warn("retention.failed topic={} partition={} error=\"{}\"", p.settings.topic,
                             p.settings.partition, r.err().message);
  else if (r->segments_deleted > 0)
    log::get("broker")->info("retention.applied topic={} partition={} segments={} bytes={} log_start={}",
                             p.settings.topic, p.settings.partition, r->segments_deleted, r->bytes_deleted,
                             p.log->log_start().value);
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
  j["open_transactions"] = p.log->txn().open().size();
  j["last_stable_offset"] = p.log->last_stable_offset().value;
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

}  // namespace

caf::expected<storage::read_result> read_log(hosted& p, int64_t from, int32_t max_bytes, bool fetch,
                                             int64_t below) {
  if (!p.log)
    return offline(p);
  // A shared partition serves reads only while its epoch is this broker's:
  // a stopped owner that woke up may hold bytes past the next epoch's start
  // that were never acknowledged (docs/shared-storage.md).
  if (p.shared && !p.shared->holds(p.settings.topic, p.settings.partition, p.epoch))
    return ownership_lost(p);
  if (fetch && p.durable_seal)
    return make_error(errc::partition_moved,
                      "partition " + p.name() + " is a move's copy not yet confirmed; retry at its owner");
  auto r = p.log->read(storage::offset{from}, static_cast<size_t>(std::max(max_bytes, 1)));
  if (!r) {
    if (r.err().code == storage::errc::offset_out_of_range)
      return make_out_of_range(from, r.err().log_start.value, r.err().log_end.value);
    return storage_failure(r.err());
  }
  std::string_view rest = r->batches;
  size_t kept = 0;
  uint64_t records = 0;
  while (!rest.empty()) {
    auto h = storage::peek_batch_header(rest);
    // Only batches wholly below the LSO: one that straddles it (a log start
    // moved inside a batch clamps the LSO there) holds records of a
    // transaction still open.
    if (!h || (below >= 0 && h->last.value >= below))
      break;
    records += static_cast<uint64_t>(h->last.value - h->base.value + 1);
    rest.remove_prefix(h->size);
    kept += h->size;
  }
  if (below >= 0)
    r->batches.resize(kept);
  if (fetch) {
    p.c.bytes_out += r->batches.size();
    p.c.records_out += records;
    p.m_bytes_out->inc(static_cast<double>(r->batches.size()));
    p.m_records_out->inc(static_cast<double>(records));
  }
  return std::move(*r);
}

namespace {

/// Whole batches from `from`; `fetch` counts them as consumer traffic
/// (a move's copy reads are not client load).
caf::result<std::string, int64_t, int64_t> read_batches(hosted& p, int64_t from, int32_t max_bytes, bool fetch) {
  auto r = read_log(p, from, max_bytes, fetch);
  if (!r)
    return r.error();
  return caf::make_result(std::move(r->batches), r->log_start.value, r->log_end.value);
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
append_outcome try_append(worker_ptr self, hosted& p, std::string& batch, bool durable,
                          storage::batch_check check = storage::batch_check::full) {
  if (!p.log)
    return {0, offline(p)};
  if (p.sealed)
    return {0, make_error(errc::partition_moved, "partition " + p.name() + " is being moved; retry at its owner")};
  auto size = batch.size();
  auto base = p.log->append(batch, check);
  if (!base && base.err().code == storage::errc::duplicate_sequence) {
    // A producer's resend: answered with the first append's offset once
    // that is durable, and nothing is appended.
    bool durable_now = base.err().original < p.log->durable_offset() && !p.log->needs_sync();
    if (durable && durable_now && p.shared && !p.shared->holds(p.settings.topic, p.settings.partition, p.epoch))
      return {0, ownership_lost(p)};
    return {base.err().original.value, {}, durable && !durable_now};
  }
  if (!base) {
    auto code = base.err().code;
    if (code == storage::errc::io_error)
      return {0, storage_failure(base.err())};
    if (code == storage::errc::invalid_producer_epoch)
      return {0, make_error(errc::invalid_producer_epoch, base.err().message)};
    if (code == storage::errc::out_of_order_sequence)
      return {0, make_coded_error(fault::conflict, storage::to_string(code), base.err().message)};
    return {0, make_error(errc::invalid_request,
                          std::string("invalid batch: ") + storage::to_string(code) + ": " + base.err().message)};
  }
  auto& st = self->state;
  const bool wal = st.wal && p.settings.data_dir == st.data_dir;
  if (wal && (p.segment_sync_due || (durable && size >= st.wal_max_batch_bytes))) {
    // Written once, to its segment only: the round syncs the segment
    // (docs/storage.md "Large batches skip the WAL").
    p.segment_sync_due = true;
  } else if (wal) {
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

}  // namespace

caf::result<int64_t> append_batch(worker_ptr self, hosted& p, std::string& batch, bool durable) {
  auto out = try_append(self, p, batch, durable);
  if (out.error)
    return out.error;
  if (!out.wait)
    return out.base;
  return ack_when_durable(self, p, out.base);
}

namespace {

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
    (void)follow_image(self, p);
    auto out = try_append(self, p, a.batch, a.durable, a.check);
    if (out.error)
      a.reply->deliver(out.error);
    else if (!out.wait)
      a.reply->deliver(out.base);
    else
      wait_for_round(self, p, pending_ack{{}, std::move(a.reply), out.base});
    touch(self, p);
  }
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
  // Shared storage: the broker that held the partition open removes its
  // directory (stamped with the topic's identity, so a topic created again
  // under the name is never touched); the others leave it alone.
  const bool keep = settings.shared && p.epoch == 0;
  if (settings.shared) {  // this broker's seal of it, if any, goes with the topic
    std::error_code ec;
    std::filesystem::remove(seal_marker_of(self, p), ec);
  }
  owned.reset();
  if (keep)
    return true;
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
  drain_commit(self);
  std::vector<hosted*> open;
  std::vector<storage::partition_log*> ls;
  std::vector<hosted*> shared;  // closed with their own fdatasync (see sync_round)
  for (auto& p : logs)
    if (p->log)
      (p->settings.shared ? shared : open).push_back(p.get());
  for (auto* p : open)
    ls.push_back(&*p->log);
  storage::sync_round_stats stats;
  auto closed = storage::close_together(ls, *self->state.syncfs, stats);
  for (auto* p : shared) {
    open.push_back(p);
    ++stats.fdatasyncs;
    closed.push_back(p->log->close());
  }
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
  drain_commit(self);
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
  if (st.in_flight)
    for (const auto& [id, acks] : st.in_flight->acks)
      waiting += acks.size();
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
                          {"max_batch_bytes", st.wal_max_batch_bytes},
                          {"commits", st.wal_commits},
                          {"pipelined_commits", st.pipelined_commits},
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
  (void)follow_image(self, p);  // shared storage: open or close as the image says
  auto out = fn(p);
  touch(self, p);
  return out;
}

}  // namespace

caf::behavior worker_fn(worker_ptr self, int index, size_t fd_budget, std::shared_ptr<storage::file_deleter> deleter,
                        io_settings settings) {
  const auto& data_dir = settings.data_dir;
  self->state.index = index;
  self->state.data_dir = data_dir;
  self->state.wal_checkpoint_bytes = settings.wal_checkpoint_bytes;
  self->state.before_wal_commit = settings.before_wal_commit;
  self->state.wal_max_batch_bytes = static_cast<size_t>(std::max<int64_t>(settings.wal_max_batch_bytes, 1));
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
  if (settings.image) {
    self->state.shared = std::make_unique<shared_mode>(
      shared_mode{settings.image, settings.broker_id, settings.lease_valid, settings.takeover_hold});
    self->send(self, follow_atom::value);
    // A new image is followed at once (a move's destination takes the
    // partition over while the source's next steps run, not at the next
    // poll); the poll stays as the backstop.
    settings.image->on_set([addr = self->address()] {
      if (auto worker = caf::actor_cast<caf::actor>(addr))
        caf::anon_send(worker, follow_atom::value, true);
    });
  }
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
      drain_commit(self);
      finish_closes(self);
      open_partition(self, id, std::move(s));
    },
    [self](close_atom, uint64_t id) {
      drain_commit(self);
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
      drain_commit(self);
      self->state.close_scheduled = false;
      finish_closes(self);
    },
    [self](append_atom, uint64_t id, std::string& batch, bool durable) -> caf::result<int64_t> {
      return with_partition(self, id, [&](hosted& p) { return append_batch(self, p, batch, durable); });
    },
    [self](append_atom, std::shared_ptr<detail::direct_group>& group) { append_group(self, *group); },
    [self](copy_atom, uint64_t id, std::string& batches, bool durable) -> caf::result<int64_t> {
      drain_commit(self);
      return with_partition(self, id, [&](hosted& p) -> caf::result<int64_t> {
        auto r = copy_batches(self, p, batches, durable);
        if (!r)
          return r.error();
        return *r;
      });
    },
    [self](copy_atom, uint64_t id, int64_t expected, std::string& batches, bool durable) -> caf::result<int64_t> {
      drain_commit(self);
      return with_partition(self, id, [&](hosted& p) { return copy_at(self, p, expected, batches, durable); });
    },
    [self](reset_atom, uint64_t id, int64_t start) -> caf::result<int64_t> {
      drain_commit(self);
      return with_partition(self, id, [&](hosted& p) -> caf::result<int64_t> {
        if (p.settings.shared)  // its files are every later epoch's history
          return make_coded_error(fault::conflict, "shared_storage", "reset of " + p.name()
                                                           + " refused: a shared partition is never rewritten");
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
        drop_held_copies(p, make_out_of_range(start, start, start));
        log::get("broker")->info("partition.reset topic={} partition={} start={}", p.settings.topic,
                                 p.settings.partition, start);
        return p.log->log_end().value;
      });
    },
    [self](seal_atom, uint64_t id, bool sealed, bool durable) -> caf::result<int64_t> {
      drain_commit(self);
      return with_partition(self, id, [&](hosted& p) { return seal(self, p, sealed, durable); });
    },
    [self](read_atom, uint64_t id, int64_t from, int32_t max_bytes,
           bool fetch) -> caf::result<std::string, int64_t, int64_t> {
      return with_partition(self, id, [&](hosted& p) { return read_batches(p, from, max_bytes, fetch); });
    },
    [self](read_atom, uint64_t id, int64_t from, int32_t max_bytes, bool fetch,
           bool committed) -> caf::result<std::string, int64_t, int64_t, int64_t, std::vector<int64_t>> {
      return with_partition(self, id, [&](hosted& p) { return read_isolated(p, from, max_bytes, fetch, committed); });
    },
    [self](lso_atom, uint64_t id) -> caf::result<int64_t, int64_t, int64_t> {
      return with_partition(self, id, [&](hosted& p) { return stable_bounds(p); });
    },
    [self](marker_atom, uint64_t id, int64_t producer_id, int16_t producer_epoch, bool commit,
           int32_t coordinator_epoch) -> caf::result<int64_t> {
      drain_commit(self);
      return with_partition(self, id, [&](hosted& p) {
        return write_marker(self, p, producer_id, producer_epoch, commit, coordinator_epoch);
      });
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
    [self](time_lookup_atom, uint64_t id, int64_t timestamp, bool committed) -> caf::result<int64_t, int64_t> {
      return with_partition(self, id, [&](hosted& p) { return time_lookup(p, timestamp, committed); });
    },
    [self](delete_atom, uint64_t id) -> caf::result<bool> {
      drain_commit(self);
      finish_closes(self);
      return remove_partition(self, id);
    },
    [self](flush_atom) { sync_round(self); },
    [self](committed_atom, uint64_t seq) {
      auto& st = self->state;
      if (!st.in_flight || st.in_flight->seq != seq)
        return;  // a drain ended that commit already
      finish_commit(self, st.committer->wait());
      if (std::exchange(st.round_after_commit, false))
        sync_round(self);
    },
    [self](follow_atom) {
      follow_images(self);
      self->delayed_send(self, follow_period, follow_atom::value);
    },
    [self](follow_atom, bool) { follow_images(self); },
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
    [self](config_atom, uint64_t id, int64_t segment_bytes, int64_t retention_bytes,
           int64_t retention_ms) -> caf::result<bool> {
      return with_partition(self, id, [&](hosted& p) -> caf::result<bool> {
        p.settings.config = {segment_bytes, retention_bytes, retention_ms};
        if (p.log)
          p.log->set_segment_bytes(static_cast<uint64_t>(std::max<int64_t>(0, segment_bytes)));
        return true;
      });
    },
    [self](repair_atom, uint64_t id) -> caf::result<std::string> {
      drain_commit(self);
      return with_partition(self, id, [&](hosted& p) { return repair(self, p); });
    },
    [self](delete_records_atom, uint64_t id, int64_t before, bool sealed_ok) -> caf::result<int64_t> {
      drain_commit(self);
      return with_partition(self, id, [&](hosted& p) { return delete_records(self, p, before, sealed_ok); });
    },
    [self](status_atom, uint64_t id) -> caf::result<std::string> {
      return with_partition(self, id,
                            [&](hosted& p) -> caf::result<std::string> { return summary(p, self->state.index); });
    },
    [self](status_atom) -> std::string { return worker_summary(self); },
  };
}

}  // namespace moonmq::io_worker_detail

#include "actors/partition.hpp"

#include <filesystem>

#include <chrono>
#include <optional>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/errors.hpp"
#include "storage/partition_log.hpp"
#include "storage/record_batch.hpp"
#include "util/atomic_file.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

namespace moonmq {
namespace {

struct pending_ack {
  caf::typed_response_promise<int64_t> promise;
  int64_t base = 0;
};

struct counters {
  uint64_t bytes_in = 0, bytes_out = 0, records_in = 0, records_out = 0, batches_in = 0, fsyncs = 0;
};

/// Partitions of this process whose log is offline (shared by every
/// partition actor).
metrics::gauge& offline_gauge() {
  static auto& g = metrics::registry::global().get_gauge(
    "moonmq_offline_partitions", "Partitions whose log is offline: corrupt (awaiting repair), unopenable or after a failed fsync");
  return g;
}

struct partition_state {
  partition_settings settings;
  std::optional<storage::partition_log> log;
  std::string open_error;
  std::optional<storage::damage> damage;  ///< why open refused the log, when it was corrupt
  bool counted_offline = false;           ///< included in moonmq_offline_partitions
  std::vector<pending_ack> pending;
  bool flush_scheduled = false;
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
  static inline const char* name = "partition";

  // Runs when the actor exits (CAF destroys the state then): a clean close
  // lets the next open trust the file ends here.
  ~partition_state() {
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
};

using self_ptr = partition_actor::stateful_pointer<partition_state>;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

caf::error storage_failure(const storage::error& e) {
  return make_error(errc::storage_error, std::string(storage::to_string(e.code)) + ": " + e.message);
}

/// A failed fdatasync takes the partition offline until a restart, as a
/// Kafka broker takes a failed log dir offline: after a failed fsync the
/// kernel may have dropped the dirty pages, so a later fsync's success
/// would prove nothing, and an idempotent resend would be acknowledged
/// against a batch that is not on disk. Recovery at the next start keeps
/// exactly what reached the disk.
caf::error take_offline(self_ptr self, const storage::error& e) {
  auto& st = self->state;
  st.open_error = std::string("fdatasync failed: ") + e.message;
  st.log.reset();
  st.set_offline(true);
  log::get("broker")->error("partition.offline topic={} partition={} error=\"{}\"", st.settings.topic,
                            st.settings.partition, e.message);
  return storage_failure(e);
}

caf::error offline(self_ptr self) {
  return make_error(errc::partition_offline, "partition " + self->state.settings.topic + "-"
                                               + std::to_string(self->state.settings.partition)
                                               + " is offline: " + self->state.open_error);
}

void flush_pending(self_ptr self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  if (st.pending.empty())
    return;
  auto durable = st.log->flush();
  ++st.c.fsyncs;
  auto acks = std::move(st.pending);
  st.pending.clear();
  auto failure = durable ? caf::error{} : take_offline(self, durable.err());
  for (auto& a : acks) {
    if (durable)
      a.promise.deliver(a.base);
    else
      a.promise.deliver(failure);
  }
}

/// Answers `base` after the next flush (group commit: one fdatasync for
/// every append queued before it runs).
caf::result<int64_t> ack_when_durable(self_ptr self, int64_t base) {
  auto& st = self->state;
  auto rp = self->make_response_promise<int64_t>();
  st.pending.push_back({rp, base});
  if (!st.flush_scheduled) {
    st.flush_scheduled = true;
    self->send(self, flush_atom::value);
  }
  return rp;
}

void run_retention(self_ptr self) {
  auto& st = self->state;
  const auto& cfg = st.settings.config;
  if (!st.log)
    return;
  // A recovery point that lags (no flush since the interval passed) is
  // brought up to date here.
  if (auto cp = st.log->checkpoint(); !cp)
    log::get("broker")->warn("checkpoint.failed topic={} partition={} error=\"{}\"", st.settings.topic,
                             st.settings.partition, cp.err().message);
  st.log->expire_producers(now_ms());
  if (cfg.retention_bytes < 0 && cfg.retention_ms < 0)
    return;
  auto r = st.log->apply_retention(cfg.retention_bytes, cfg.retention_ms, now_ms());
  if (!r)
    log::get("broker")->warn("retention.failed topic={} partition={} error=\"{}\"", st.settings.topic,
                             st.settings.partition, r.err().message);
  else if (r->segments_deleted > 0)
    log::get("broker")->info("retention.applied topic={} partition={} segments={} bytes={} log_start={}",
                             st.settings.topic, st.settings.partition, r->segments_deleted, r->bytes_deleted,
                             st.log->log_start().value);
}

std::string repair_route(const partition_settings& s) {
  return "POST /admin/partitions/" + s.topic + "/" + std::to_string(s.partition) + "/truncate-corrupt";
}

std::string summary(self_ptr self) {
  auto& st = self->state;
  nlohmann::json j{{"topic", st.settings.topic}, {"partition", st.settings.partition}};
  if (!st.log) {
    j["online"] = false;
    j["error"] = st.open_error;
    if (st.damage) {
      const auto& d = *st.damage;
      j["corruption"] = {{"file", d.path},
                         {"position", d.position},
                         {"first_offset", d.first.value},
                         {"end_offset", d.end.value},
                         {"recovery_point", d.recovery_point.value},
                         {"sealed_segment", d.sealed},
                         {"reason", d.reason}};
      j["repair"] = repair_route(st.settings);
    }
    return j.dump();
  }
  j["online"] = true;
  j["sealed"] = st.sealed;
  j["log_start_offset"] = st.log->log_start().value;
  j["log_end_offset"] = st.log->log_end().value;
  j["durable_offset"] = st.log->durable_offset().value;
  j["recovery_point"] = st.log->recovery_point().value;
  j["size_bytes"] = st.log->size_bytes();
  j["segments"] = st.log->segment_count();
  j["idempotent_producers"] = st.log->producers().producer_count();
  j["pending_acks"] = st.pending.size();
  j["bytes_in"] = st.c.bytes_in;
  j["bytes_out"] = st.c.bytes_out;
  j["records_in"] = st.c.records_in;
  j["records_out"] = st.c.records_out;
  j["fsyncs"] = st.c.fsyncs;
  j["config"] = {{"segment.bytes", st.settings.config.segment_bytes},
                 {"retention.bytes", st.settings.config.retention_bytes},
                 {"retention.ms", st.settings.config.retention_ms}};
  return j.dump();
}

/// Whole batches from `from`; `fetch` counts them as consumer traffic
/// (a move's copy reads are not client load).
/// The marker of a durable seal: `<partition dir>/sealed`.
std::string seal_marker(const std::string& dir) { return dir + "/sealed"; }

caf::result<std::string, int64_t, int64_t> read_batches(self_ptr self, int64_t from, int32_t max_bytes, bool fetch) {
  auto& st = self->state;
  if (!st.log)
    return offline(self);
  if (fetch && st.durable_seal)
    return make_error(errc::partition_moved, "partition " + st.settings.topic + "-"
                                               + std::to_string(st.settings.partition)
                                               + " is a move's copy not yet confirmed; retry at its owner");
  auto r = st.log->read(storage::offset{from}, static_cast<size_t>(std::max(max_bytes, 1)));
  if (!r) {
    if (r.err().code == storage::errc::offset_out_of_range)
      return make_out_of_range(from, r.err().log_start.value, r.err().log_end.value);
    return storage_failure(r.err());
  }
  std::string_view rest = r->batches;
  uint64_t records = 0;
  while (!rest.empty()) {
    auto h = storage::peek_batch_header(rest);
    if (!h)
      break;
    records += static_cast<uint64_t>(h->last.value - h->base.value + 1);
    rest.remove_prefix(h->size);
  }
  if (!fetch)
    return caf::make_result(std::move(r->batches), r->log_start.value, r->log_end.value);
  st.c.bytes_out += r->batches.size();
  st.c.records_out += records;
  st.m_bytes_out->inc(static_cast<double>(r->batches.size()));
  st.m_records_out->inc(static_cast<double>(records));
  return caf::make_result(std::move(r->batches), r->log_start.value, r->log_end.value);
}

storage::log_config log_config_of(const partition_settings& s) {
  storage::log_config lc;
  lc.segment_bytes = static_cast<uint64_t>(s.config.segment_bytes);
  return lc;
}

std::string dir_of(const partition_settings& s) {
  return storage::partition_dir(s.data_dir, s.topic, s.partition);
}

/// Repairs a log that open refused as corrupt and brings it online;
/// replies what was cut.
caf::result<std::string> repair(self_ptr self) {
  auto& st = self->state;
  const auto name = st.settings.topic + "-" + std::to_string(st.settings.partition);
  if (st.log)
    return make_coded_error(409, "not_corrupt", "partition " + name + " is online: nothing to repair");
  if (!st.damage)
    return make_coded_error(409, "not_corrupt", "partition " + name + " is offline but its log is not corrupt ("
                                                  + st.open_error + "); restart the node instead");
  storage::repair_result report;
  auto fixed = storage::partition_log::repair(dir_of(st.settings), log_config_of(st.settings), report);
  if (!fixed) {
    log::get("broker")->error("partition.repair_failed topic={} partition={} error=\"{}\"", st.settings.topic,
                              st.settings.partition, fixed.err().message);
    return storage_failure(fixed.err());
  }
  st.log.emplace(std::move(fixed.value()));
  {
    // A move's destination copy stays sealed through a repair too.
    std::error_code ec;
    st.durable_seal = std::filesystem::exists(seal_marker(st.log->dir()), ec);
    st.sealed = st.sealed || st.durable_seal;
  }
  st.damage.reset();
  st.open_error.clear();
  st.set_offline(false);
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
                           st.settings.topic, st.settings.partition, report.records, report.bytes,
                           report.cuts.size(), st.log->log_end().value);
  return nlohmann::json{{"topic", st.settings.topic},
                        {"partition", st.settings.partition},
                        {"records_removed", report.records},
                        {"bytes_removed", report.bytes},
                        {"cuts", cuts},
                        {"log_start_offset", st.log->log_start().value},
                        {"log_end_offset", st.log->log_end().value},
                        {"online", true}}
    .dump();
}

/// Seals or unseals; a durable seal writes the marker (fsynced) before it is
/// reported, and any unseal removes it. Appends already taken are made
/// durable first, so the log end returned is final while sealed.
caf::result<int64_t> seal(self_ptr self, bool sealed, bool durable) {
  auto& st = self->state;
  if (!st.log)
    return offline(self);
  flush_pending(self);
  auto marker = seal_marker(st.log->dir());
  std::error_code ec;
  if (sealed && durable) {
    if (auto werr = util::write_file_atomic(marker, "sealed by a partition move\n"))
      return make_error(errc::storage_error, "cannot write " + marker + ": " + werr.message());
  } else if (!sealed && std::filesystem::exists(marker, ec)) {
    std::filesystem::remove(marker, ec);
    if (!ec)
      ec = util::fsync_dir(st.log->dir());
    if (ec)
      return make_error(errc::storage_error, "cannot remove " + marker + ": " + ec.message());
  }
  st.sealed = sealed;
  st.durable_seal = sealed && (durable || st.durable_seal);
  return st.log->log_end().value;
}

partition_actor::behavior_type partition_fn(self_ptr self, partition_settings settings) {
  auto& init = self->state;
  init.settings = std::move(settings);
  auto dir = dir_of(init.settings);
  auto opened = storage::partition_log::open(dir, log_config_of(init.settings));
  if (opened) {
    init.log.emplace(std::move(opened.value()));
    // A move's destination copy stays sealed across a restart until the
    // move confirms or cleans it up (see seal_marker).
    std::error_code ec;
    init.sealed = init.durable_seal = std::filesystem::exists(seal_marker(dir), ec);
    log::get("broker")->debug("partition.opened topic={} partition={} log_start={} log_end={}", init.settings.topic,
                              init.settings.partition, init.log->log_start().value, init.log->log_end().value);
  } else if (opened.err().code == storage::errc::corrupt_log && opened.err().damaged) {
    // Damage recovery may not cut: nothing is removed, the partition waits
    // for the operator's repair.
    const auto& d = *opened.err().damaged;
    init.damage = d;
    init.open_error = opened.err().message + "; repair: " + repair_route(init.settings);
    init.set_offline(true);
    log::get("broker")->error("partition.corrupt topic={} partition={} file={} position={} first_offset={} "
                              "end_offset={} recovery_point={} reason=\"{}\" repair=\"{}\"",
                              init.settings.topic, init.settings.partition, d.path, d.position, d.first.value,
                              d.end.value, d.recovery_point.value, d.reason, repair_route(init.settings));
  } else {
    init.open_error = opened.err().message;
    init.set_offline(true);
    log::get("broker")->error("partition.offline topic={} partition={} dir={} error=\"{}\"", init.settings.topic,
                              init.settings.partition, dir, init.open_error);
  }
  (void)offline_gauge();  // listed at 0 from the start
  auto& reg = metrics::registry::global();
  metrics::labels topic_label{{"topic", init.settings.topic}};
  init.m_bytes_in = &reg.get_counter("moonmq_produce_bytes_total", "Bytes appended to partition logs", topic_label);
  init.m_records_in = &reg.get_counter("moonmq_produce_records_total", "Records appended to partition logs",
                                     topic_label);
  init.m_bytes_out = &reg.get_counter("moonmq_fetch_bytes_total", "Bytes read from partition logs", topic_label);
  init.m_records_out = &reg.get_counter("moonmq_fetch_records_total", "Records read from partition logs (whole batches)",
                                      topic_label);
  if (init.settings.retention_check_ms > 0)
    self->delayed_send(self, std::chrono::milliseconds(init.settings.retention_check_ms), retain_atom::value);
  return {
    [self](append_atom, std::string& batch, bool durable) -> caf::result<int64_t> {
      auto& st = self->state;
      if (!st.log)
        return offline(self);
      if (st.sealed)
        return make_error(errc::partition_moved, "partition " + st.settings.topic + "-"
                                                   + std::to_string(st.settings.partition)
                                                   + " is being moved; retry at its owner");
      auto size = batch.size();
      auto base = st.log->append(batch);
      if (!base && base.err().code == storage::errc::duplicate_sequence) {
        // A producer's resend: answered with the first append's offset once
        // that is durable, and nothing is appended.
        if (!durable || base.err().original < st.log->durable_offset())
          return base.err().original.value;
        return ack_when_durable(self, base.err().original.value);
      }
      if (!base) {
        auto code = base.err().code;
        if (code == storage::errc::io_error)
          return storage_failure(base.err());
        if (code == storage::errc::out_of_order_sequence || code == storage::errc::invalid_producer_epoch)
          return make_coded_error(409, storage::to_string(code), base.err().message);
        return make_error(errc::invalid_request,
                          std::string("invalid batch: ") + storage::to_string(code) + ": " + base.err().message);
      }
      auto info = storage::peek_batch_header(batch);
      auto records = info ? static_cast<uint64_t>(info->last.value - info->base.value + 1) : 0;
      st.c.bytes_in += size;
      st.c.records_in += records;
      ++st.c.batches_in;
      st.m_bytes_in->inc(static_cast<double>(size));
      st.m_records_in->inc(static_cast<double>(records));
      if (!durable)
        return base->value;
      return ack_when_durable(self, base->value);
    },
    [self](copy_atom, std::string& batches, bool durable) -> caf::result<int64_t> {
      auto& st = self->state;
      if (!st.log)
        return offline(self);
      // Only a sealed copy (a move's destination, sealed by its ensure) takes
      // batches with their offsets: a copy that serves producers never does.
      if (!batches.empty() && !st.durable_seal)
        return make_error(errc::invalid_request, "copy: " + st.settings.topic + "/"
                                                   + std::to_string(st.settings.partition)
                                                   + " is not sealed: it serves producers and takes no copied batches");
      std::string_view rest = batches;
      while (!rest.empty()) {
        auto size = storage::peek_batch_size(rest);
        if (!size || *size > rest.size())
          return make_error(errc::invalid_request, "copy: truncated batch at byte "
                                                     + std::to_string(batches.size() - rest.size()));
        auto r = st.log->append_with_offsets(rest.substr(0, *size));
        if (!r)
          return make_error(errc::invalid_request, std::string("copy: ") + storage::to_string(r.err().code) + ": "
                                                     + r.err().message);
        rest.remove_prefix(*size);
      }
      if (durable)
        if (auto synced = st.log->flush(); !synced)
          return take_offline(self, synced.err());
      return st.log->log_end().value;
    },
    [self](reset_atom, int64_t start) -> caf::result<int64_t> {
      auto& st = self->state;
      if (!st.log)
        return offline(self);
      if (start < 0)
        return make_error(errc::invalid_request, "reset: start offset must not be negative");
      if (auto r = st.log->reset(storage::offset{start}); !r)
        return storage_failure(r.err());
      log::get("broker")->info("partition.reset topic={} partition={} start={}", st.settings.topic,
                               st.settings.partition, start);
      return st.log->log_end().value;
    },
    [self](seal_atom, bool sealed) -> caf::result<int64_t> { return seal(self, sealed, false); },
    [self](seal_atom, bool sealed, bool durable) -> caf::result<int64_t> { return seal(self, sealed, durable); },
    [self](read_atom, int64_t from, int32_t max_bytes) -> caf::result<std::string, int64_t, int64_t> {
      return read_batches(self, from, max_bytes, true);
    },
    [self](read_atom, int64_t from, int32_t max_bytes, bool fetch) -> caf::result<std::string, int64_t, int64_t> {
      return read_batches(self, from, max_bytes, fetch);
    },
    [self](bounds_atom) -> caf::result<int64_t, int64_t, int64_t> {
      auto& st = self->state;
      if (!st.log)
        return offline(self);
      return caf::make_result(st.log->log_start().value, st.log->log_end().value,
                              static_cast<int64_t>(st.log->size_bytes()));
    },
    [self](time_lookup_atom, int64_t timestamp) -> caf::result<int64_t, int64_t> {
      auto& st = self->state;
      if (!st.log)
        return offline(self);
      if (timestamp < 0)
        return make_error(errc::invalid_request, "time lookup: the timestamp must not be negative");
      auto found = st.log->offset_for_timestamp(timestamp);
      if (!found)
        return storage_failure(found.err());
      if (!*found)
        return caf::make_result(int64_t{-1}, int64_t{-1});
      return caf::make_result((*found)->off.value, (*found)->timestamp);
    },
    [self](delete_atom) -> caf::result<bool> {
      auto& st = self->state;
      auto rp = self->make_response_promise<bool>();
      auto gone = make_error(errc::unknown_topic, "topic " + st.settings.topic + " was deleted");
      for (auto& a : std::exchange(st.pending, {}))
        a.promise.deliver(gone);
      if (st.log) {
        if (auto closed = st.log->close(); !closed)
          log::get("broker")->warn("partition.close_failed topic={} partition={} error=\"{}\"", st.settings.topic,
                                   st.settings.partition, closed.err().message);
        st.log.reset();
      }
      st.set_offline(false);
      auto where = dir_of(st.settings);
      if (auto removed = storage::partition_log::remove(where); !removed) {
        log::get("broker")->error("partition.delete_failed dir={} error=\"{}\"", where, removed.err().message);
        rp.deliver(make_error(errc::storage_error, "cannot remove " + where + ": " + removed.err().message));
      } else {
        log::get("broker")->info("partition.deleted topic={} partition={}", st.settings.topic, st.settings.partition);
        rp.deliver(true);
      }
      self->quit();
      return rp;
    },
    [self](flush_atom) { flush_pending(self); },
    [self](retain_atom) {
      run_retention(self);
      if (self->state.settings.retention_check_ms > 0)
        self->delayed_send(self, std::chrono::milliseconds(self->state.settings.retention_check_ms),
                           retain_atom::value);
    },
    [self](repair_atom) { return repair(self); },
    [self](status_atom) { return summary(self); },
  };
}

}  // namespace

partition_actor spawn_partition(caf::actor_system& sys, partition_settings settings) {
  return sys.spawn<caf::detached>(partition_fn, std::move(settings));
}

}  // namespace moonmq

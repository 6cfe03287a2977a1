// Opening a partition's log on an I/O worker (actors/io_worker_impl.hpp):
// local recovery, and in shared-storage mode the epoch the applied image
// names this broker owner at (a takeover, or a restart of its own epoch),
// followed as the image changes (docs/shared-storage.md).

#include <filesystem>

#include "actors/errors.hpp"
#include "actors/image.hpp"
#include "actors/io_worker_impl.hpp"
#include "storage/epoch_chain.hpp"

namespace moonmq::io_worker_detail {
namespace {

/// Opens (and recovers) `p`'s log into `p.log`, or leaves it offline with
/// the reason. A shared partition is opened at `epoch` (storage::open_epoch:
/// a takeover of the earlier epochs, or a restart of this one); a later
/// epoch found on disk leaves it dormant, not offline.
void open_log(worker_ptr self, hosted& p, int64_t epoch) {
  auto dir = dir_of(p.settings);
  auto config = log_config_of(self, p.settings);
  storage::epoch_open_info info;
  const auto started = std::chrono::steady_clock::now();
  auto opened = p.settings.shared ? storage::open_epoch(dir, static_cast<uint64_t>(epoch), config, &info)
                                  : storage::partition_log::open(dir, config);
  const auto took_us =
    std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
  if (opened) {
    p.log.emplace(std::move(opened.value()));
    p.epoch = p.settings.shared ? epoch : 0;
    p.fresh = !p.log->on_disk();
    p.open_error.clear();
    p.damage.reset();
    p.set_offline(false);
    // A move's destination copy stays sealed across a restart until the
    // move confirms or cleans it up (see seal_marker).
    std::error_code ec;
    if (!p.settings.shared)
      p.sealed = p.durable_seal = std::filesystem::exists(seal_marker(dir), ec);
    if (p.settings.shared)
      log::get("broker")->info("partition.epoch_opened topic={} partition={} epoch={} took_over={} "
                               "previous_epoch={} start_offset={} log_start={} log_end={} segments={} took_us={}",
                               p.settings.topic, p.settings.partition, epoch, info.took_over, info.previous_epoch,
                               info.start.value, p.log->log_start().value, p.log->log_end().value,
                               p.log->segment_count(), took_us);
    else
      log::get("broker")->debug("partition.opened topic={} partition={} log_start={} log_end={}", p.settings.topic,
                                p.settings.partition, p.log->log_start().value, p.log->log_end().value);
  } else if (opened.err().code == storage::errc::epoch_over) {
    // The image this worker read is older than the shared directory: a
    // later owner already took over. Dormant until the image catches up.
    p.epoch = 0;
    log::get("broker")->info("partition.epoch_over topic={} partition={} epoch={} msg=\"{}\"", p.settings.topic,
                             p.settings.partition, epoch, opened.err().message);
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
}

}  // namespace

/// Shared storage: brings `p` in line with the applied image before a
/// request uses it (docs/shared-storage.md). When the image names this
/// broker owner at an epoch other than the one `p.log` was opened at, or
/// names another broker, the epoch this broker wrote is over: appends
/// still waiting for a sync are answered ownership_lost (never
/// acknowledged), and the log is closed. Then, owner at epoch E, the log
/// is opened at E (a takeover); not owner, the partition stays dormant.
/// Returns partition_moved (retried at the owner; nothing was written)
/// when not owner, the offline error when the open failed, else nothing.
caf::error follow_image(worker_ptr self, hosted& p) {
  if (!p.settings.shared || !p.shared)
    return {};
  const int64_t epoch = p.shared->epoch_of(p.settings.topic, p.settings.partition);
  if (p.log && epoch == p.epoch && epoch > 0)
    return {};
  if (p.log && p.epoch > 0 && epoch > p.epoch && !p.log->on_disk()) {
    // Owner again at a later epoch, having written nothing at this one (a
    // move's destination confirming: sealed since its takeover at the
    // cutover's epoch): the chain read then is the one the later epoch
    // reads, so the log goes on there without reading it again.
    storage::epoch_open_info info;
    auto st = storage::continue_epoch(dir_of(p.settings), *p.log, static_cast<uint64_t>(p.epoch),
                                      static_cast<uint64_t>(epoch), &info);
    if (st) {
      log::get("broker")->info("partition.epoch_opened topic={} partition={} epoch={} took_over=true "
                               "previous_epoch={} start_offset={} log_start={} log_end={} continued=true",
                               p.settings.topic, p.settings.partition, epoch, p.epoch, info.start.value,
                               p.log->log_start().value, p.log->log_end().value);
      p.epoch = epoch;
      return {};
    }
    log::get("broker")->info("partition.epoch_reopen topic={} partition={} epoch={} image_epoch={} reason=\"{}\"",
                             p.settings.topic, p.settings.partition, p.epoch, epoch, st.err().message);
  }
  if (p.log) {
    answer(p, ownership_lost(p));
    if (auto st = p.log->close(); !st)
      log::get("broker")->warn("partition.close_failed topic={} partition={} error=\"{}\"", p.settings.topic,
                               p.settings.partition, st.err().message);
    p.log.reset();
    if (p.in_lru) {
      self->state.lru.erase(p.lru_pos);
      p.in_lru = false;
    }
    log::get("broker")->info("partition.epoch_closed topic={} partition={} epoch={} image_epoch={}",
                             p.settings.topic, p.settings.partition, p.epoch, epoch);
    p.epoch = 0;
  }
  // A corrupt epoch waits for the operator (no rescan per request); an
  // epoch whose sync failed here is never reopened by this process (after
  // a failed fsync the pages it built on may be gone: take_offline).
  if (!p.log && p.counted_offline && epoch > 0 && epoch == p.epoch)
    return offline(p);
  if (epoch > 0 && !p.damage)
    open_log(self, p, epoch);
  return p.log ? caf::error{} : offline(p);
}

/// Follows the image for every shared partition of the worker, once per
/// published image (a takeover after a failover happens before the first
/// produce asks for it; a demoted epoch closes at once). Runs on a timer.
void follow_images(worker_ptr self) {
  auto& st = self->state;
  if (!st.shared)
    return;
  auto current = st.shared->image->get();
  if (current.get() == st.followed_image)
    return;
  st.followed_image = current.get();
  for (auto& [id, p] : st.parts)
    if (p->settings.shared) {
      (void)follow_image(self, *p);
      touch(self, *p);
      // A takeover held after a take-back opens on a later poll (polled
      // until it opened or failed to, not only while the hold runs: the
      // hold may end between this broker's two looks at it).
      auto [owner, epoch] = st.shared->image->owner_and_epoch({p->settings.topic, p->settings.partition});
      if (st.shared->hold && !p->log && !p->damage && !p->counted_offline && owner == st.shared->broker_id
          && st.shared->after_take_back(p->settings.topic, p->settings.partition, epoch)) {
        st.followed_image = nullptr;
        if (p->held_logged != epoch) {
          p->held_logged = epoch;
          log::get("broker")->info("partition.takeover_held topic={} partition={} epoch={} hold_ms={} "
                                   "reason=\"taken back from a move's destination: its lease may still run\"",
                                   p->settings.topic, p->settings.partition, epoch, st.shared->hold->hold_ms());
        }
      }
    }
}

/// Opens (and recovers) the log of a newly assigned partition; a shared
/// one only when the image names this broker its owner.
void open_partition(worker_ptr self, uint64_t id, partition_settings settings) {
  auto owned = std::make_unique<hosted>();
  auto& p = *owned;
  p.id = id;
  p.settings = std::move(settings);
  if (p.settings.shared) {
    p.shared = self->state.shared.get();
    if (!p.shared || p.settings.created_at <= 0) {
      p.shared = nullptr;
      p.open_error = p.settings.created_at <= 0 ? "shared storage needs the topic's metadata-log identity (created_at)"
                                                : "shared storage without the metadata log's image";
      p.set_offline(true);
    } else {
      // A move's destination stays sealed across a restart until the move
      // confirms or cleans up, whatever epoch it opens at (see seal()).
      std::error_code ec;
      p.sealed = p.durable_seal = std::filesystem::exists(seal_marker_of(self, p), ec);
      (void)follow_image(self, p);
    }
  } else {
    open_log(self, p, 0);
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

}  // namespace moonmq::io_worker_detail

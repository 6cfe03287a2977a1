#include "storage/partition_log.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/file_deleter.hpp"
#include "storage/partition_log_files.hpp"
#include "storage/record_batch.hpp"
#include "storage/recovery_point.hpp"
#include "util/atomic_file.hpp"
#include "util/invariant.hpp"
#include "util/logging.hpp"

namespace moonmq::storage {
namespace fs = std::filesystem;
namespace {

/// Suffix of a segment file renamed for deletion (removed at the next open
/// if a crash interrupted its deletion).
constexpr const char* deleted_suffix = ".deleted";

/// Renames `path` to `<path>.deleted` (atomic; the caller fsyncs the
/// directory) and returns the new name, or "" when `path` does not exist.
result<std::string> retire(const std::string& path) {
  auto to = path + deleted_suffix;
  if (::rename(path.c_str(), to.c_str()) != 0) {
    if (errno == ENOENT)
      return std::string{};
    return io_error("rename", path);
  }
  return to;
}

/// Deletes a retired file: on the log's file_deleter when it has one,
/// else here (delete_gradually).
status dispose(const log_config& config, const std::string& path) {
  if (config.deleter) {
    config.deleter->submit(path);
    return {};
  }
  return delete_gradually(path);
}

int64_t file_mtime_ms(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

}  // namespace

namespace detail {

std::string parent_dir(const std::string& dir) {
  auto parent = fs::path(dir).parent_path().string();
  return parent.empty() ? "." : parent;
}

status unlink_if_present(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return io_error("unlink", path);
  return {};
}

status check_config(const log_config& config) {
  if (config.segment_bytes == 0)
    return make_error(errc::invalid_argument, "segment.bytes must be positive");
  return {};
}

log_config clamp(log_config config) {
  config.segment_bytes = std::min(config.segment_bytes, max_segment_bytes);
  return config;
}

result<std::vector<offset>> list_segments(const std::string& dir) {
  std::error_code ec;
  std::vector<offset> bases;
  std::vector<std::string> others;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    auto name = it->path().filename().string();
    if (auto base = parse_segment_log_name(name))
      bases.push_back(*base);
    else
      others.push_back(name);
  }
  if (ec)
    return fs_error("list", dir, ec);
  std::sort(bases.begin(), bases.end());
  for (const auto& name : others) {
    bool tmp = (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0)
               || (name.size() > 8 && name.compare(name.size() - 8, 8, deleted_suffix) == 0);
    bool orphan_index = name.size() == 26 && name.compare(20, 6, ".index") == 0 &&
                        !fs::exists(dir + "/" + name.substr(0, 20) + ".log", ec);
    if (tmp || orphan_index) {
      auto st = unlink_if_present(dir + "/" + name);
      if (!st)
        return st.err();
    }
  }
  return bases;
}

}  // namespace detail

using namespace detail;

std::string partition_dir(const std::string& data_dir, const std::string& topic, int32_t partition) {
  return data_dir + "/" + topic + "-" + std::to_string(partition);
}

status partition_log::write_checkpoint(offset point, bool clean, bool durable) {
  if (auto st = write_recovery_checkpoint(dir_, {point, clean}, durable); !st)
    return st;
  checkpointed_ = point;
  clean_on_disk_ = clean;
  checkpointed_at_ = std::chrono::steady_clock::now();
  return {};
}

status partition_log::clear_clean_flag() {
  if (unsynced_checkpoint_) {
    // A log open created: its first checkpoint (recovery point 0) goes
    // before its first byte, without an fsync (see materialize).
    if (auto st = write_checkpoint(offset{0}, false, false); !st)
      return st;
    unsynced_checkpoint_ = false;
  }
  if (!clean_on_disk_)
    return {};
  return write_checkpoint(checkpointed_, false);
}

status partition_log::checkpoint() {
  if (durable_ <= checkpointed_)
    return {};
  return write_checkpoint(durable_, false);
}

status partition_log::close() {
  if (!on_disk_)
    return {};  // never written: nothing to mark clean
  auto durable = flush();
  if (!durable)
    return durable.err();
  if (clean_on_disk_ && checkpointed_ == log_end())
    return {};
  return write_checkpoint(log_end(), true);
}

status partition_log::close_synced() {
  if (failed_)
    return failure_;
  if (needs_sync())
    return make_error(errc::invalid_argument, "close_synced: " + dir_ + " has appends no sync covered");
  durable_ = log_end();
  if (!on_disk_)
    return {};
  if (clean_on_disk_ && checkpointed_ == log_end())
    return {};
  return write_checkpoint(log_end(), true, false);
}

result<partition_log> partition_log::create(const std::string& dir, offset start,
                                            const log_config& raw) {
  if (auto st = check_config(raw); !st)
    return st.err();
  if (start.value < 0)
    return make_error(errc::invalid_argument, "start offset must be >= 0");
  auto config = clamp(raw);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return fs_error("mkdir", dir, ec);
  auto bases = list_segments(dir);
  if (!bases)
    return bases.err();
  // First, so that a crash while the old segments go leaves no recovery
  // point above the new log.
  if (auto st = remove_recovery_checkpoint(dir); !st)
    return st.err();
  for (auto base : *bases) {
    for (const auto& name : {segment_log_name(base), segment_index_name(base)}) {
      if (auto st = unlink_if_present(dir + "/" + name); !st)
        return st.err();
    }
  }
  auto active = active_segment::create(dir, start, config.index_interval_bytes);
  if (!active)
    return active.err();
  if (auto st = sync_dir(dir); !st)
    return st.err();
  if (auto st = sync_dir(parent_dir(dir)); !st)
    return st.err();
  // After the old segments are gone, as in reset.
  if (auto st = remove_log_start(dir); !st)
    return st.err();
  partition_log lg(dir, config, std::move(*active));
  lg.log_start_ = start;
  lg.durable_ = start;
  if (auto st = lg.write_checkpoint(start, false); !st)
    return st.err();
  return lg;
}

partition_log::partition_log(std::string dir, log_config config, active_segment active)
    : dir_(std::move(dir)), config_(config), active_(std::move(active)) {
  struct stat st {};
  if (::stat(dir_.c_str(), &st) == 0)
    device_ = static_cast<uint64_t>(st.st_dev);
}

status partition_log::continue_in(const std::string& dir, std::function<status()> before_materialize) {
  if (!chained_ || on_disk_)
    return make_error(errc::invalid_argument, "only a chained log that never wrote in " + dir_
                                                + " can go on in another directory");
  // Nothing of this log is in dir_: every closed segment is an earlier
  // epoch's (its own directory set), and the active one was never created.
  dir_ = dir;
  active_ = active_segment::planned(dir, log_end(), config_.index_interval_bytes);
  config_.before_materialize = std::move(before_materialize);
  return {};
}

status partition_log::materialize() {
  if (on_disk_)
    return {};
  if (config_.before_materialize)
    if (auto st = config_.before_materialize(); !st)
      return st;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    return fs_error("mkdir", dir_, ec);
  // Segments that appeared since open (another writer of this directory)
  // are never truncated by the create below.
  auto found = list_segments(dir_);
  if (!found)
    return found.err();
  if (!found->empty())
    return make_error(errc::io_error, dir_ + " holds segments written since the log was opened without them");
  auto active = active_segment::create(dir_, active_.base(), config_.index_interval_bytes);
  if (!active)
    return active.err();
  active_ = std::move(*active);
  struct stat st {};
  if (::stat(dir_.c_str(), &st) == 0)
    device_ = static_cast<uint64_t>(st.st_dev);
  on_disk_ = true;
  unsynced_dir_ = true;
  // Its checkpoint is written before the first append, without fsyncs; the
  // first flush (or file-system sync) makes it durable with the directory.
  unsynced_checkpoint_ = true;
  return {};
}

status partition_log::remove(const std::string& dir) {
  std::error_code ec;
  auto removed = fs::remove_all(dir, ec);
  if (ec)
    return fs_error("remove_all", dir, ec);
  if (removed > 0 && fs::exists(parent_dir(dir), ec))  // a log never written left nothing to remove
    return sync_dir(parent_dir(dir));
  return {};
}

result<offset> partition_log::append(std::string& batch, batch_check check) {
  if (check == batch_check::full) {
    if (auto view = batch_view::parse(batch, true); !view)
      return view.err();
  }
  auto framing = peek_batch_header(batch);
  if (!framing)
    return framing.err();
  if (framing->size != batch.size())
    return make_error(errc::bad_length, "buffer holds " + std::to_string(batch.size()) +
                                            " bytes but the batch is " +
                                            std::to_string(framing->size));
  // A verified batch's CRC once more, against its bytes as they are now
  // (no record parse): bytes changed in memory since the listener's check
  // are refused, never acknowledged, so no WAL entry ever holds a batch
  // whose own CRC fails (replay would stop at it). At several GB/s it is a
  // small part of an append (docs/storage.md "CRC32C: once per batch").
  if (check == batch_check::verified
      && crc32c(std::string_view(batch).substr(batch_attributes_offset))
           != static_cast<uint32_t>((static_cast<uint8_t>(batch[batch_crc_offset]) << 24)
                                    | (static_cast<uint8_t>(batch[batch_crc_offset + 1]) << 16)
                                    | (static_cast<uint8_t>(batch[batch_crc_offset + 2]) << 8)
                                    | static_cast<uint8_t>(batch[batch_crc_offset + 3])))
    return make_error(errc::bad_crc, "batch CRC32C does not match its bytes");
  auto base = log_end();
  (void)set_base_offset(batch, base);  // cannot fail: batch has >= 61 bytes
  auto head = peek_batch_header(batch);
  if (!head)
    return head.err();
  const bool idempotent = producer_state::is_idempotent(*head);
  if (idempotent) {
    auto verdict = producers_.check(*head);
    if (verdict.kind == producer_verdict::duplicate) {
      auto e = make_error(errc::duplicate_sequence, "batch already appended at offset "
                                                        + std::to_string(verdict.original.value));
      e.original = verdict.original;
      return e;
    }
    if (verdict.kind == producer_verdict::out_of_order)
      return make_error(errc::out_of_order_sequence, verdict.reason);
    if (verdict.kind == producer_verdict::stale_epoch)
      return make_error(errc::invalid_producer_epoch, verdict.reason);
  }
  if (producer_state::is_marker(*head)) {
    if (auto verdict = producers_.check_marker(*head); verdict.kind == producer_verdict::stale_epoch)
      return make_error(errc::invalid_producer_epoch, "transaction marker: " + verdict.reason);
  }
  auto r = append_validated(batch, base, head->last, head->max_timestamp, config_.write_behind_bytes);
  if (r) {
    producers_.record(*head);
    txn_.record(*head);
  }
  return r;
}

result<offset> partition_log::append_with_offsets(std::string_view batch) {
  auto view = batch_view::parse(batch, true);
  if (!view)
    return view.err();
  if (view->size() != batch.size())
    return make_error(errc::bad_length, "buffer holds " + std::to_string(batch.size()) +
                                            " bytes but the batch is " +
                                            std::to_string(view->size()));
  // A move's destination starts empty at the source's log start, which may
  // fall inside the first batch it is sent: that batch is taken whole.
  const bool empty = closed_.empty() && active_.size() == 0 && log_end() == log_start_;
  if (empty && view->base_offset() < log_end() && view->last_offset() >= log_end()) {
    if (auto st = start_below(view->base_offset()); !st)
      return st.err();
  }
  if (view->base_offset() != log_end()) {
    auto e = make_error(errc::base_offset_mismatch,
                        "baseOffset " + std::to_string(view->base_offset().value) +
                            " != log end " + std::to_string(log_end().value));
    e.log_start = log_start_;
    e.log_end = log_end();
    return e;
  }
  auto r = append_validated(batch, view->base_offset(), view->last_offset(), view->max_timestamp(), 0);
  if (r) {
    if (auto head = peek_batch_header(batch)) {
      producers_.record(*head);
      txn_.record(*head);
    }
  }
  return r;
}

result<offset> partition_log::append_validated(std::string_view batch, offset base, offset last,
                                               int64_t max_timestamp, size_t hold_up_to) {
  if (batch.size() > max_segment_bytes)
    return make_error(errc::batch_too_large,
                      "batch of " + std::to_string(batch.size()) + " bytes exceeds 2 GiB");
  if (auto st = materialize(); !st)
    return st.err();
  const bool full = active_.size() + batch.size() > config_.segment_bytes;
  const bool rel_overflow = base.value - active_.base().value > 0x7fffffffLL;
  // The clean flag promises that the file ends where close() left it: it
  // goes (durably) before the first byte is appended after it.
  if (auto st = clear_clean_flag(); !st)
    return st.err();
  if (active_.size() > 0 && (full || rel_overflow)) {
    if (auto st = roll(); !st)
      return st.err();
  }
  // Offsets are handed out once, in order, without gaps: every caller
  // appends at the log end (docs/storage.md "Appends, rolls and reads").
  MOONMQ_INVARIANT(base == log_end() && last >= base, "{}: batch [{}, {}] appended at log end {}", dir_,
                   base.value, last.value, log_end().value);
  if (auto st = active_.append(batch, base, last, max_timestamp, hold_up_to); !st)
    return st.err();
  MOONMQ_INVARIANT(log_end() == offset{last.value + 1}, "{}: log end {} after appending up to {}", dir_, log_end().value,
                   last.value);
  dirty_ = true;
  written_since_fdatasync_ = true;
  return base;
}

status partition_log::roll() {
  if (failed_)
    return failure_;
  // Seal (fsync) before the next segment exists: open treats everything
  // below the last segment's base as flushed.
  if (auto st = active_.seal(); !st) {
    failed_ = true;  // its fsync may be what failed: no later sync is trusted
    failure_ = st.err();
    return st;
  }
  written_since_fdatasync_ = false;
  // durable_ moves up below: a log open created must be durable itself
  // first.
  if (auto st = sync_fresh_dir(); !st)
    return st;
  auto next = active_segment::create(dir_, log_end(), config_.index_interval_bytes);
  if (!next)
    return next.err();
  if (auto st = sync_dir(dir_); !st)
    return st;
  closed_.push_back({active_.base(), active_.size(), active_.index_bytes(), active_.max_timestamp(), {}, {}});
  durable_ = std::max(durable_, log_end());
  log::get("storage")->debug("segment.rolled dir={} base={} size={} next_base={}", dir_,
                             active_.base().value, active_.size(), next->base().value);
  active_ = std::move(*next);
  dirty_ = false;
  return {};
}

result<offset> partition_log::flush() {
  if (failed_)
    return failure_;
  if (!on_disk_)
    return log_end();  // nothing written, nothing to sync
  if (dirty_) {
    if (auto st = active_.sync(); !st) {
      // The kernel may have dropped the pages: a later fdatasync's success
      // would prove nothing (docs/storage.md "Durability").
      failed_ = true;
      failure_ = st.err();
      return st.err();
    }
    dirty_ = false;
    written_since_fdatasync_ = false;
  }
  if (auto st = sync_fresh_dir(); !st)
    return st.err();
  return after_sync(true);
}

status partition_log::start_writeback() {
  if (failed_ || !on_disk_ || !dirty_)
    return {};
  return active_.start_writeback();
}

status partition_log::sync_fresh_dir() {
  if (!unsynced_dir_)
    return {};
  // A log open created without fsyncs: its checkpoint (written durably,
  // which fsyncs the directory and so the segment file's entry), then the
  // directory's entry in the data directory.
  // Called after everything appended was synced (flush, or roll's seal).
  if (auto st = write_checkpoint(log_end(), false); !st)
    return st;
  unsynced_checkpoint_ = false;
  if (auto st = sync_dir(parent_dir(dir_)); !st)
    return st;
  unsynced_dir_ = false;
  return {};
}

result<offset> partition_log::synced_by_filesystem() {
  if (failed_)
    return failure_;
  dirty_ = false;
  unsynced_dir_ = false;
  return after_sync(false);
}

bool partition_log::release_fd() {
  // Unsynced data keeps its descriptor (see active_segment::release_fd); a
  // directory not synced yet does not need it.
  if (dirty_ || active_.held_bytes() > 0 || !active_.holds_fd())
    return false;
  active_.release_fd();
  return true;
}

offset partition_log::after_sync(bool durable_checkpoint) {
  durable_ = log_end();
  if (durable_ > checkpointed_ &&
      std::chrono::steady_clock::now() - checkpointed_at_ >=
        std::chrono::milliseconds(config_.checkpoint_interval_ms)) {
    // A failed write keeps the older, lower recovery point: still true.
    if (auto st = write_checkpoint(durable_, false, durable_checkpoint); !st)
      log::get("storage")->warn("checkpoint.write_failed dir={} error=\"{}\"", dir_, st.err().message);
  }
  return durable_;
}

result<read_result> partition_log::read(offset from, size_t max_bytes) {
  if (from < log_start_ || from > log_end()) {
    auto e = make_error(errc::offset_out_of_range,
                        "offset " + std::to_string(from.value) + " outside [" +
                            std::to_string(log_start_.value) + ", " +
                            std::to_string(log_end().value) + "]");
    e.log_start = log_start_;
    e.log_end = log_end();
    return e;
  }
  read_result out;
  out.log_start = log_start_;
  out.log_end = log_end();
  if (from == log_end())
    return out;
  result<std::string> bytes = std::string();
  if (from >= active_.base()) {
    bytes = active_.read(from, max_bytes);
  } else {
    auto it = std::upper_bound(closed_.begin(), closed_.end(), from,
                               [](offset o, const closed_segment& s) { return o < s.base; });
    // from >= log_start_ >= closed_.front().base, so `it` is past the first.
    bytes = read_closed_segment(seg_dir(*std::prev(it)), *std::prev(it), from, max_bytes);
    // Past the end of its segment: `from` is in a gap a repair left (open
    // checked that each sealed segment's batches run to its end), so the
    // answer is the first batch of the next segment that has one.
    for (; !bytes && bytes.err().code == errc::offset_out_of_range; ++it) {
      if (it == closed_.end()) {
        bytes = active_.size() > 0 ? active_.read(active_.base(), max_bytes) : std::string();
        break;
      }
      bytes = read_closed_segment(seg_dir(*it), *it, it->base, max_bytes);
    }
  }
  if (!bytes)
    return bytes.err();
  out.batches = std::move(*bytes);
  return out;
}

result<int64_t> partition_log::closed_max_timestamp(closed_segment& seg) {
  if (seg.max_timestamp == -2) {
    auto ts = closed_segment_max_timestamp(seg_dir(seg), seg);
    if (!ts)
      return ts.err();
    seg.max_timestamp = *ts;
  }
  return seg.max_timestamp;
}

result<std::optional<timestamp_offset>> partition_log::offset_for_timestamp(int64_t target) {
  if (target < 0)
    return make_error(errc::invalid_argument,
                      "timestamp " + std::to_string(target) + " is negative");
  // Every segment whose largest timestamp reaches the target, oldest first:
  // Kafka searches only the first one; the later ones matter only when a
  // batch header claims a maxTimestamp its records do not have.
  for (auto& seg : closed_) {
    auto max_ts = closed_max_timestamp(seg);
    if (!max_ts)
      return max_ts.err();
    if (*max_ts < target)
      continue;
    auto hit = find_offset_by_timestamp(seg_dir(seg) + "/" + segment_log_name(seg.base), seg.size,
                                        target, log_start_);
    if (!hit || *hit)
      return hit;
  }
  if (active_.max_timestamp() < target)
    return std::optional<timestamp_offset>{};
  if (auto st = active_.write_out(); !st)  // it reads the file by its path
    return st.err();
  return find_offset_by_timestamp(active_.path(), active_.size(), target, log_start_);
}

result<retention_result> partition_log::apply_retention(int64_t retention_bytes,
                                                        int64_t retention_ms, int64_t now_ms) {
  retention_result res;
  std::vector<std::string> foreign_dirs;  // earlier epochs' directories touched (shared storage)
  uint64_t total = size_bytes();
  while (!closed_.empty()) {
    auto& seg = closed_.front();
    const uint64_t seg_bytes = seg.size + seg.index_bytes;
    // Every offset of the segment is below the log start (DeleteRecords).
    const offset seg_end = closed_.size() > 1 ? closed_[1].base : active_.base();
    const bool below_start = seg_end <= log_start_;
    bool expired = below_start || (retention_bytes >= 0 &&
                                   total - seg_bytes >= static_cast<uint64_t>(retention_bytes));
    if (!expired && retention_ms >= 0) {
      if (auto max_ts = closed_max_timestamp(seg); !max_ts)
        return max_ts.err();
      int64_t ts = seg.max_timestamp >= 0 ? seg.max_timestamp
                                          : file_mtime_ms(seg_dir(seg) + "/" + segment_log_name(seg.base));
      expired = ts >= 0 && now_ms - ts > retention_ms;
    }
    if (!expired)
      break;
    const auto where = seg_dir(seg);
    auto retired = retire(where + "/" + segment_log_name(seg.base));
    if (!retired)
      return retired.err();
    if (auto st = unlink_if_present(where + "/" + segment_index_name(seg.base)); !st)
      return st.err();
    if (where != dir_ && std::find(foreign_dirs.begin(), foreign_dirs.end(), where) == foreign_dirs.end())
      foreign_dirs.push_back(where);
    if (!retired->empty())
      if (auto st = dispose(config_, *retired); !st)
        return st.err();
    log::get("storage")->info("segment.deleted dir={} base={} bytes={} reason={}", where,
                              seg.base.value, seg_bytes,
                              below_start                    ? "log_start"
                              : retention_bytes >= 0 && total - seg_bytes >=
                                      static_cast<uint64_t>(retention_bytes)
                                  ? "retention.bytes"
                                  : "retention.ms");
    total -= seg_bytes;
    res.segments_deleted++;
    res.bytes_deleted += seg_bytes;
    closed_.erase(closed_.begin());
    log_start_ = settled_log_start();
    txn_.trim(log_start_);
  }
  if (res.segments_deleted > 0) {
    if (auto st = sync_dir(dir_); !st)
      return st.err();
    for (const auto& where : foreign_dirs)
      if (auto st = sync_dir(where); !st)
        return st.err();
  }
  return res;
}

status partition_log::reset(offset start) {
  if (start.value < 0)
    return make_error(errc::invalid_argument, "start offset must be >= 0");
  if (chained())
    return make_error(errc::invalid_argument, "reset of " + dir_ +
                                                  ": the log continues an earlier owner epoch's, whose files it "
                                                  "never rewrites");
  if (!on_disk_)  // never written: its first segment starts at `start` (nothing to retire)
    active_ = active_segment::planned(dir_, start, config_.index_interval_bytes);
  if (auto st = materialize(); !st)
    return st;
  // The recovery point never stands above what is on disk: lowered (when
  // needed) before the old segments go, raised to `start` once the new one
  // is in place.
  if (start < checkpointed_ || clean_on_disk_)
    if (auto st = write_checkpoint(std::min(checkpointed_, start), false); !st)
      return st;
  // Segment logs are renamed away first (cheap and atomic) and deleted
  // gradually once the new log is in place; a crash in between leaves
  // `.deleted` files that the next open removes.
  std::vector<std::string> retired;
  auto retire_log = [&](const std::string& path) -> status {
    auto r = retire(path);
    if (!r)
      return r.err();
    if (!r->empty())
      retired.push_back(*r);
    return {};
  };
  for (const auto& seg : closed_) {
    if (auto st = retire_log(dir_ + "/" + segment_log_name(seg.base)); !st)
      return st;
    if (auto st = unlink_if_present(dir_ + "/" + segment_index_name(seg.base)); !st)
      return st;
  }
  closed_.clear();
  if (auto st = unlink_if_present(dir_ + "/" + segment_index_name(active_.base())); !st)
    return st;
  if (active_.base() != start) {
    if (auto st = retire_log(active_.path()); !st)
      return st;
  }
  auto next = active_segment::create(dir_, start, config_.index_interval_bytes);
  if (!next)
    return next.err();
  // What the old segment holds goes with the log, never into the file that
  // create() may just have truncated to reuse its name.
  active_.discard_held();
  active_ = std::move(*next);
  if (auto st = sync_dir(dir_); !st)
    return st;
  for (const auto& path : retired)
    if (auto st = dispose(config_, path); !st)
      return st;
  log_start_ = start;
  durable_ = start;
  dirty_ = false;
  written_since_fdatasync_ = false;  // the new segment file is empty
  producers_.clear();
  txn_.clear();
  // Last: until it goes, open clamps a stored log start to the new log's
  // end (`start`), while the old segments it hid are already retired.
  if (auto st = remove_log_start(dir_); !st)
    return st;
  stored_log_start_ = offset{0};
  if (auto st = write_checkpoint(start, false); !st)
    return st;
  unsynced_checkpoint_ = false;
  log::get("storage")->info("log.reset dir={} start={}", dir_, start.value);
  return {};
}

status partition_log::start_below(offset base) {
  const offset start = log_start_;
  if (auto st = materialize(); !st)
    return st;
  // Each step leaves a log open accepts: the recovery point goes down to the
  // new end first, the log start is stored before the new segment exists
  // (until the old, empty one goes, the log still ends at `start`).
  if (auto st = write_checkpoint(base, false); !st)
    return st;
  unsynced_checkpoint_ = false;
  if (auto st = write_log_start(dir_, start); !st)
    return st;
  stored_log_start_ = start;
  const auto old_path = active_.path();
  const auto old_index = dir_ + "/" + segment_index_name(active_.base());
  auto next = active_segment::create(dir_, base, config_.index_interval_bytes);
  if (!next)
    return next.err();
  active_.discard_held();
  active_ = std::move(*next);
  for (const auto& path : {old_index, old_path})
    if (auto st = unlink_if_present(path); !st)
      return st;
  if (auto st = sync_dir(dir_); !st)
    return st;
  durable_ = base;
  log::get("storage")->info("log.started_below dir={} base={} log_start={}", dir_, base.value, start.value);
  return {};
}

offset partition_log::settled_log_start() const {
  const offset first = closed_.empty() ? active_.base() : closed_.front().base;
  return std::min(std::max(first, stored_log_start_), std::max(first, log_end()));
}

result<offset> partition_log::advance_log_start(offset before) {
  if (before.value < -1)
    return make_error(errc::invalid_argument,
                      "offset " + std::to_string(before.value) + " is below -1 (the log end)");
  if (before.value == -1)
    before = log_end();
  if (before > log_end()) {
    auto e = make_error(errc::offset_out_of_range, "offset " + std::to_string(before.value) +
                                                       " is above the log end " +
                                                       std::to_string(log_end().value));
    e.log_start = log_start_;
    e.log_end = log_end();
    return e;
  }
  if (before <= log_start_)
    return log_start_;
  // The stored log start never stands above what a crash keeps: open then
  // finds every offset below it on disk, and appends continue above it.
  if (before > durable_) {
    auto synced = flush();
    if (!synced)
      return synced.err();
  }
  // The recovery point reaches it too: a repair never cuts below a log
  // start, so the offsets below it are never handed out again.
  if (checkpointed_ < before)
    if (auto st = write_checkpoint(durable_, false); !st)
      return st.err();
  if (auto st = write_log_start(dir_, before); !st)
    return st.err();
  stored_log_start_ = before;
  log_start_ = before;
  txn_.trim(log_start_);
  log::get("storage")->info("log.start_advanced dir={} log_start={}", dir_, before.value);
  auto removed = apply_retention(-1, -1, 0);  // only the segments wholly below it
  if (!removed)
    return removed.err();
  return log_start_;
}

uint64_t partition_log::size_bytes() const {
  uint64_t total = active_.size() + active_.index_bytes();
  for (const auto& seg : closed_)
    total += seg.size + seg.index_bytes;
  return total;
}

void partition_log::set_segment_bytes(uint64_t bytes) {
  if (bytes > 0)
    config_.segment_bytes = std::min(bytes, max_segment_bytes);
}

}  // namespace moonmq::storage

#include "storage/partition_log.hpp"

#include <algorithm>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/partition_log_files.hpp"
#include "storage/record_batch.hpp"
#include "storage/recovery_point.hpp"
#include "util/logging.hpp"

// partition_log::open and partition_log::repair: recovery of a log
// directory (docs/storage.md "Recovery").

namespace moonmq::storage {
namespace fs = std::filesystem;
using namespace detail;
namespace {

/// Completes a corrupt_log error from a segment: the offsets it makes
/// unreadable end at `end` (at least), and the message names them and the
/// recovery point.
error with_range(error e, offset end, std::optional<offset> point) {
  auto& d = *e.damaged;
  d.end = std::max({d.end, end, d.first});
  d.recovery_point = point.value_or(offset{-1});
  e.message += "; offsets [" + std::to_string(d.first.value) + ", " + std::to_string(d.end.value) +
               ") unreadable; recovery_point=" +
               (point ? std::to_string(point->value) : std::string("unknown"));
  return e;
}

/// Walks the batch headers of a sealed segment: records its idempotent
/// producers and transactions and checks the framing and offsets (contiguous from the base,
/// the last batch ending at the end of the file). A sealed segment was
/// fsynced, so a walk that stops early is damage (corrupt_log).
status walk_sealed(const std::string& dir, const closed_segment& seg, producer_state& producers, txn_state& txns) {
  auto path = dir + "/" + segment_log_name(seg.base);
  offset expect = seg.base;
  uint64_t end_pos = 0;
  std::optional<error> bad;
  auto st = walk_segment_headers(path, seg.size, [&](const batch_header_info& h, uint64_t pos) {
    if (h.base != expect) {
      bad = make_error(errc::bad_count, "baseOffset " + std::to_string(h.base.value) + " where " +
                                            std::to_string(expect.value) + " was expected");
      return false;
    }
    producers.record(h);
    txns.record(h);
    expect = offset{h.last.value + 1};
    end_pos = pos + h.size;
    return true;
  });
  if (!st)
    return st;
  if (!bad && end_pos == seg.size)
    return {};
  auto why = bad ? *bad : make_error(errc::bad_length, "batch header does not parse or runs past the end");
  auto e = damage_error(path, end_pos, expect, why);
  e.damaged->sealed = true;
  return e;
}

result<uint64_t> size_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return io_error("stat", path);
  return static_cast<uint64_t>(st.st_size);
}

status truncate_durably(const std::string& path, uint64_t size) {
  auto fd = open_file(path, O_RDWR);
  if (!fd)
    return fd.err();
  if (::ftruncate(fd->get(), static_cast<off_t>(size)) != 0)
    return io_error("ftruncate", path);
  if (::fsync(fd->get()) != 0)
    return io_error("fsync", path);
  return {};
}

status create_empty_segment(const std::string& dir, offset base) {
  auto path = dir + "/" + segment_log_name(base);
  auto fd = open_file(path, O_RDWR | O_CREAT | O_TRUNC);
  if (!fd)
    return fd.err();
  if (::fsync(fd->get()) != 0)
    return io_error("fsync", path);
  return {};
}

/// Carries out one cut of partition_log::repair for damage `d` found by
/// open in `dir` (see repair for the rules).
status cut_damage(const std::string& dir, const damage& d, const log_config& config, repair_result& report) {
  repair_cut cut;
  cut.path = d.path;
  cut.position = d.position;
  cut.first = d.first;
  cut.end = std::max(d.end, d.first);
  cut.records = static_cast<uint64_t>(cut.end.value - cut.first.value);
  cut.reason = d.reason;
  if (d.path == dir) {
    // No segment file is left below a recovery point: start empty there.
    auto fresh = partition_log::create(dir, cut.end, config);
    if (!fresh)
      return fresh.err();
  } else {
    auto size = size_of(d.path);
    if (!size)
      return size.err();
    cut.bytes = *size > d.position ? *size - d.position : 0;
    if (auto st = truncate_durably(d.path, d.position); !st)
      return st;
    auto base = parse_segment_log_name(fs::path(d.path).filename().string());
    if (!base)  // open names only segment files in a damage
      return make_error(errc::invalid_argument, "repair: not a segment file: " + d.path);
    auto index = dir + "/" + segment_index_name(*base);
    // The index is rebuilt from the kept prefix at the next open.
    if (auto st = unlink_if_present(index); !st)
      return st;
    const bool now_empty = d.position == 0;
    if (d.sealed) {
      // Later segments are intact and stay; the removed offsets become a gap.
      if (now_empty)
        if (auto st = unlink_if_present(d.path); !st)
          return st;
    } else if (cut.end > cut.first) {
      // The last segment: appends continue at `end` in a new segment, so
      // no removed offset is given out again.
      if (now_empty)
        if (auto st = unlink_if_present(d.path); !st)
          return st;
      if (auto st = create_empty_segment(dir, cut.end); !st)
        return st;
      if (auto st = sync_dir(dir); !st)
        return st;
      if (auto st = write_recovery_checkpoint(dir, {cut.end, false}); !st)
        return st;
    }
    if (auto st = sync_dir(dir); !st)
      return st;
  }
  log::get("storage")->warn("log.repaired dir={} path={} position={} first_offset={} end_offset={} records={} "
                            "bytes={} reason=\"{}\"",
                            dir, cut.path, cut.position, cut.first.value, cut.end.value, cut.records, cut.bytes,
                            cut.reason);
  report.records += cut.records;
  report.bytes += cut.bytes;
  report.cuts.push_back(std::move(cut));
  return {};
}

}  // namespace

result<partition_log> partition_log::open(const std::string& dir, const log_config& raw) {
  return open_impl(dir, raw, nullptr);
}

result<partition_log> partition_log::open_chained(const std::string& dir, const log_config& config,
                                                  chain_prefix prefix) {
  return open_impl(dir, config, &prefix);
}

result<partition_log> partition_log::open_impl(const std::string& dir, const log_config& raw,
                                               chain_prefix* prefix) {
  if (auto st = check_config(raw); !st)
    return st.err();
  auto config = clamp(raw);
  const offset first = prefix ? prefix->end : offset{0};
  // The earlier epochs' segments and what their headers recorded (shared
  // storage): the log continues them.
  auto attach = [&](partition_log& lg) {
    if (!prefix)
      return;
    lg.chained_ = true;
    if (prefix->segments.empty())
      return;
    auto own = std::move(lg.closed_);
    lg.closed_ = std::move(prefix->segments);
    lg.closed_.insert(lg.closed_.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
    lg.log_start_ = lg.settled_log_start();
    lg.txn_.trim(lg.log_start_);
  };
  std::error_code ec;
  const bool missing = !fs::exists(dir, ec);
  if (ec)
    return fs_error("stat", dir, ec);
  if (missing) {
    partition_log lg(dir, config, active_segment::planned(dir, first, config.index_interval_bytes));
    lg.on_disk_ = false;
    lg.log_start_ = first;
    lg.durable_ = first;
    if (prefix) {
      lg.producers_ = std::move(prefix->producers);
      lg.txn_ = std::move(prefix->txns);
    }
    attach(lg);
    return lg;
  }
  auto bases = list_segments(dir);
  if (!bases)
    return bases.err();
  auto loaded = read_recovery_checkpoint(dir);
  if (!loaded)
    return loaded.err();
  std::optional<offset> point;  // nullopt: unknown (no checkpoint, or unreadable)
  bool clean = false;
  if (loaded->state == loaded_checkpoint::kind::valid) {
    point = loaded->value.point;
    clean = loaded->value.clean;
  } else if (loaded->state == loaded_checkpoint::kind::unreadable) {
    log::get("storage")->warn("checkpoint.unreadable dir={} file={} msg=\"recovery point unknown: only a final "
                              "batch that runs past the end of the file may be cut\"",
                              dir, recovery_point_file_name);
  }
  auto stored_start = read_log_start(dir);
  if (!stored_start)
    return stored_start.err();
  if (stored_start->state == loaded_checkpoint::kind::unreadable) {
    log::get("storage")->warn("log_start.unreadable dir={} file={} msg=\"ignored: the log starts at its first "
                              "segment\"",
                              dir, log_start_file_name);
  }
  if (bases->empty()) {
    if (point && point->value > 0) {
      auto e = make_error(errc::corrupt_log, "no segment file in " + dir + " but the recovery point is " +
                                                 std::to_string(point->value));
      e.damaged = damage{dir, 0, offset{0}, *point, *point, false, "no segment file"};
      return e;
    }
    auto fresh = create(dir, first, raw);
    if (!fresh)
      return fresh;
    if (prefix) {
      fresh->producers_ = std::move(prefix->producers);
      fresh->txn_ = std::move(prefix->txns);
    }
    attach(*fresh);
    return fresh;
  }
  if (bases->front() < first) {
    auto e = make_error(errc::corrupt_log, dir + " starts at offset " + std::to_string(bases->front().value) +
                                               ", below the end of the earlier epochs " +
                                               std::to_string(first.value));
    e.damaged = damage{dir, 0, bases->front(), first, point.value_or(offset{-1}), false,
                       "segment below the epoch's start"};
    return e;
  }

  std::vector<closed_segment> closed;
  producer_state producers = prefix ? std::move(prefix->producers) : producer_state{};
  txn_state txns = prefix ? std::move(prefix->txns) : txn_state{};
  for (size_t i = 0; i + 1 < bases->size(); ++i) {
    closed_segment seg;
    seg.base = (*bases)[i];
    auto checked = check_closed_segment(dir, seg, config.index_interval_bytes);
    if (!checked && checked.err().code == errc::corrupt_log)
      return with_range(checked.err(), (*bases)[i + 1], point);
    if (!checked)
      return checked.err();
    if (auto st = walk_sealed(dir, seg, producers, txns); !st)
      return st.err().code == errc::corrupt_log ? with_range(st.err(), (*bases)[i + 1], point) : st.err();
    closed.push_back(seg);
  }
  // Everything below the last segment's base was fsynced when its segment
  // was sealed, so the recovery point is at least that base.
  const offset active_base = bases->back();
  auto may_cut = [&](const segment_scan& scan) {
    if (clean)
      return false;  // closed cleanly: the file ended at a batch boundary
    if (point)
      return scan.next_offset >= std::max(*point, active_base);
    return scan.incomplete;
  };
  std::optional<error> stop;
  uint64_t cut = 0;
  auto active =
    active_segment::recover(dir, active_base, config.index_interval_bytes, may_cut, stop, cut);
  if (!active && active.err().code == errc::corrupt_log) {
    const auto& d = *active.err().damaged;
    auto past = scan_past_damage(d.path, d.position, d.first);
    if (!past)
      return past.err();
    return with_range(active.err(), std::max(*past, point.value_or(d.first)), point);
  }
  if (!active)
    return active.err();
  if (point && active->next_offset() < *point) {
    auto e = damage_error(active->path(), active->size(), active->next_offset(),
                          make_error(errc::short_buffer, "the log ends below its recovery point"));
    return with_range(e, *point, point);
  }
  if (cut > 0) {
    log::get("storage")->warn("log.truncated dir={} segment={} valid_bytes={} cut_bytes={} "
                              "log_end={} recovery_point={} reason={}",
                              dir, active->path(), active->size(), cut, active->next_offset().value,
                              point ? point->value : -1, stop ? stop->message : "unknown");
  }
  // The walk of the last segment's headers cannot stop early: its scan
  // just validated every byte.
  if (auto st = walk_segment_headers(active->path(), active->size(), [&](const batch_header_info& h, uint64_t) {
        producers.record(h);
        txns.record(h);
        return true;
      });
      !st)
    return st.err();
  partition_log lg(dir, config, std::move(*active));
  lg.closed_ = std::move(closed);
  lg.producers_ = std::move(producers);
  lg.txn_ = std::move(txns);
  if (stored_start->state == loaded_checkpoint::kind::valid)
    lg.stored_log_start_ = stored_start->value;
  lg.log_start_ = lg.settled_log_start();
  if (lg.stored_log_start_ > lg.log_end()) {
    // A crash in reset/create/a copy's start below its log start, or a cut
    // below it: the log starts at its end. That is made durable before any
    // append, or the old value would come back once the log grew past it
    // (a later open or retention) and hide acknowledged records.
    log::get("storage")->warn("log_start.above_log_end dir={} stored={} log_end={} msg=\"the log starts at its "
                              "end\"",
                              dir, lg.stored_log_start_.value, lg.log_end().value);
    if (auto st = write_log_start(dir, lg.log_end()); !st)
      return st.err();
    lg.stored_log_start_ = lg.log_end();
    lg.log_start_ = lg.settled_log_start();
  }
  lg.txn_.trim(lg.log_start_);
  attach(lg);
  lg.durable_ = lg.log_end();  // recover fsynced the kept bytes
  lg.checkpointed_ = point.value_or(offset{0});
  lg.clean_on_disk_ = clean;
  if (!clean || !point || *point != lg.log_end()) {
    // Not a clean close: what recovery kept is durable now, so the recovery
    // point moves up to it (and a log without a checkpoint gets one).
    if (auto st = lg.write_checkpoint(lg.log_end(), false); !st)
      log::get("storage")->warn("checkpoint.write_failed dir={} error=\"{}\"", dir, st.err().message);
  }
  return lg;
}

result<partition_log> partition_log::repair(const std::string& dir, const log_config& config,
                                            repair_result& report) {
  // Each cut removes bytes or ends the log at a segment boundary, so the
  // number of rounds is bounded by the damage; the cap only guards a bug.
  for (int round = 0; round < 100000; ++round) {
    auto lg = open(dir, config);
    if (lg || lg.err().code != errc::corrupt_log || !lg.err().damaged)
      return lg;
    if (auto st = cut_damage(dir, *lg.err().damaged, config, report); !st)
      return st.err();
  }
  return make_error(errc::io_error, "repair of " + dir + " did not converge");
}


}  // namespace moonmq::storage

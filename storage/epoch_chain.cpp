#include "storage/epoch_chain.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>

#include <fcntl.h>
#include <unistd.h>

#include "storage/chain_summary.hpp"
#include "storage/file_io.hpp"
#include "storage/recovery_point.hpp"
#include "storage/segment.hpp"
#include "util/atomic_file.hpp"
#include "util/logging.hpp"

namespace moonmq::storage {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view record_head = "moonmq-takeover v1 epoch=";
constexpr std::string_view start_key = " start_offset=";

std::string epoch_name(uint64_t epoch) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(epoch));
  return buf;
}

std::optional<uint64_t> parse_epoch_name(std::string_view name) {
  if (name.size() != 20 || name.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec != std::errc{} || end != name.data() + name.size() || v == 0)
    return std::nullopt;
  return v;
}

error chain_damage(const std::string& path, uint64_t position, offset first, offset end, const std::string& why) {
  auto e = make_error(errc::corrupt_log, "shared partition " + path + ": " + why);
  e.damaged = damage{path, position, first, std::max(first, end), offset{-1}, true, why};
  return e;
}

/// Segment bases of an epoch's directory, sorted, without changing it
/// (the local listing removes leftovers; another owner's directory is never
/// written). A missing directory has none.
result<std::vector<offset>> list_bases(const std::string& dir) {
  std::vector<offset> bases;
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return ec ? result<std::vector<offset>>(fs_error("stat", dir, ec)) : bases;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (auto base = parse_segment_log_name(it->path().filename().string()))
      bases.push_back(*base);
  if (ec)
    return fs_error("list", dir, ec);
  std::sort(bases.begin(), bases.end());
  return bases;
}

/// Adds the segments of epoch directory `dir` that serve [start, end) to
/// `out`: each one's batch headers are walked (no CRC: they were validated
/// when the next epoch took over), recorded in the producer and transaction
/// state and indexed in memory, and the walk stops at `end`. A batch that
/// breaks the offsets, or a range that ends before `end`, is damage.
status add_range(const std::string& dir, offset start, offset end, size_t index_interval, chain_prefix& out) {
  if (end <= start)
    return {};
  auto bases = list_bases(dir);
  if (!bases)
    return bases.err();
  for (size_t i = 0; i < bases->size(); ++i) {
    const offset base = (*bases)[i];
    if (base >= end)
      break;
    auto path = dir + "/" + segment_log_name(base);
    if (base < start)
      return chain_damage(path, 0, base, start, "segment below its epoch's start " + std::to_string(start.value));
    std::error_code ec;
    const uint64_t size = fs::file_size(path, ec);
    if (ec)
      return fs_error("stat", path, ec);
    closed_segment seg;
    seg.base = base;
    seg.dir = dir;
    auto index = std::make_shared<std::vector<index_entry>>();
    offset expect = base;
    uint64_t used = 0;
    uint64_t since_index = 0;
    int64_t max_ts = -1;
    std::optional<error> bad;
    auto st = walk_segment_headers(path, size, [&](const batch_header_info& h, uint64_t pos) {
      if (h.base >= end)
        return false;
      if (h.base != expect || h.last >= end) {
        bad = chain_damage(path, pos, expect, end,
                           "batch [" + std::to_string(h.base.value) + ", " + std::to_string(h.last.value) +
                             "] where " + std::to_string(expect.value) + " was expected before " +
                             std::to_string(end.value));
        return false;
      }
      if (index->empty() || since_index >= index_interval) {
        index->push_back({static_cast<uint32_t>(h.base.value - base.value), static_cast<uint32_t>(pos)});
        since_index = 0;
      }
      since_index += h.size;
      out.producers.record(h);
      out.txns.record(h);
      max_ts = std::max(max_ts, h.max_timestamp);
      expect = offset{h.last.value + 1};
      used = pos + h.size;
      return true;
    });
    if (!st)
      return st;
    if (bad)
      return *bad;
    const bool last_in_range = i + 1 == bases->size() || (*bases)[i + 1] >= end;
    if (last_in_range && expect < end)
      return chain_damage(path, used, expect, end,
                          "the epoch ends at " + std::to_string(end.value) + " but its data ends at " +
                            std::to_string(expect.value));
    // A sealed segment below the range's last one is read whole: a header
    // that stops the walk early (unparsable, or an offset past the range)
    // is damage, not the end of the epoch.
    if (!last_in_range && used != size)
      return chain_damage(path, used, expect, (*bases)[i + 1],
                          "sealed segment of " + std::to_string(size) + " bytes whose batches end at byte " +
                            std::to_string(used));
    seg.size = used;
    seg.max_timestamp = max_ts;
    seg.memory_index = std::move(index);
    if (used > 0)
      out.segments.push_back(std::move(seg));
  }
  return {};
}

/// Reads the newest earlier epoch `r` (its directory `dir`) read-only and
/// finds where its valid data ends: T. Its segments go into `out` up to T.
result<offset> take_over_end(const std::string& dir, const takeover_record& r, size_t index_interval,
                             chain_prefix& out, uint64_t& cut_bytes) {
  auto bases = list_bases(dir);
  if (!bases)
    return bases.err();
  if (bases->empty())
    return r.start;  // the epoch never wrote
  auto loaded = read_recovery_checkpoint(dir);
  if (!loaded)
    return loaded.err();
  std::optional<offset> point;
  bool clean = false;
  if (loaded->state == loaded_checkpoint::kind::valid) {
    point = loaded->value.point;
    clean = loaded->value.clean;
  }
  const offset last_base = bases->back();
  // Sealed segments were fsynced when their successor was created: walked
  // to their end like the earlier epochs' (damage there is never a tail).
  if (auto st = add_range(dir, r.start, last_base, index_interval, out); !st)
    return st.err();
  auto path = dir + "/" + segment_log_name(last_base);
  auto fd = open_file(path, O_RDONLY);
  if (!fd)
    return fd.err();
  auto size = file_size(fd->get(), path);
  if (!size)
    return size.err();
  auto scan = scan_segment(fd->get(), path, last_base, *size, index_interval);
  if (!scan)
    return scan.err();
  if (scan->valid_bytes < *size) {
    // The rule of local recovery (partition_log::open): only a torn tail,
    // never bytes the owner may have acknowledged.
    bool torn = !clean && (point ? scan->next_offset >= std::max(*point, last_base) : scan->incomplete);
    if (!torn) {
      auto why = scan->stopped ? *scan->stopped : make_error(errc::short_buffer, "scan stopped early");
      auto e = damage_error(path, scan->valid_bytes, scan->next_offset, why);
      e.damaged->recovery_point = point.value_or(offset{-1});
      e.damaged->end = std::max(e.damaged->first, point.value_or(e.damaged->first));
      return e;
    }
    cut_bytes = *size - scan->valid_bytes;
  }
  if (point && scan->next_offset < *point) {
    auto e = damage_error(path, scan->valid_bytes, scan->next_offset,
                          make_error(errc::short_buffer, "the log ends below its recovery point"));
    e.damaged->recovery_point = *point;
    e.damaged->end = *point;
    return e;
  }
  if (scan->valid_bytes > 0) {
    closed_segment seg;
    seg.base = last_base;
    seg.dir = dir;
    seg.size = scan->valid_bytes;
    seg.max_timestamp = scan->max_timestamp;
    seg.memory_index = std::make_shared<std::vector<index_entry>>(std::move(scan->index));
    auto st = walk_segment_headers(path, seg.size, [&](const batch_header_info& h, uint64_t) {
      out.producers.record(h);
      out.txns.record(h);
      return true;
    });
    if (!st)
      return st.err();
    out.segments.push_back(std::move(seg));
  }
  return scan->next_offset;
}

error file_error(const char* what, const std::string& path, const std::error_code& ec) {
  auto e = make_error(errc::io_error, std::string(what) + " path=" + path + ": " + ec.message());
  e.sys_errno = ec.value();
  return e;
}

/// Makes `<root>` and its parent durable once per process per root: the
/// directories a takeover record's path may have created, up to the shared
/// one (whoever created them may have died before syncing them). Later
/// records of the root need only their own file and `epochs` synced.
status sync_takeover_ancestry(const std::string& root) {
  static std::mutex synced_mtx;
  static std::set<std::string> synced_roots;
  {
    std::lock_guard<std::mutex> g{synced_mtx};
    if (synced_roots.count(root))
      return {};
  }
  for (const auto& d : {root, fs::path(root).parent_path().string()})
    if (auto st = sync_dir(d.empty() ? std::string(".") : d); !st)
      return st;
  std::lock_guard<std::mutex> g{synced_mtx};
  synced_roots.insert(root);
  return {};
}

}  // namespace

std::string epoch_log_dir(const std::string& root, uint64_t epoch) { return root + "/e" + epoch_name(epoch); }

std::string takeover_record_path(const std::string& root, uint64_t epoch) {
  return root + "/epochs/" + epoch_name(epoch);
}

std::string encode_takeover_record(const takeover_record& r) {
  return seal_line(std::string(record_head) + std::to_string(r.epoch) + std::string(start_key) +
                   std::to_string(r.start.value));
}

std::optional<takeover_record> decode_takeover_record(std::string_view text) {
  auto rest = unseal_line(text, record_head);
  if (!rest)
    return std::nullopt;
  auto key = rest->find(start_key);
  if (key == std::string_view::npos)
    return std::nullopt;
  takeover_record r;
  auto epoch_text = rest->substr(0, key);
  auto start_text = rest->substr(key + start_key.size());
  int64_t start = -1;
  auto [e_end, e_ec] = std::from_chars(epoch_text.data(), epoch_text.data() + epoch_text.size(), r.epoch);
  auto [s_end, s_ec] = std::from_chars(start_text.data(), start_text.data() + start_text.size(), start);
  if (e_ec != std::errc{} || e_end != epoch_text.data() + epoch_text.size() || s_ec != std::errc{} ||
      s_end != start_text.data() + start_text.size() || r.epoch == 0 || start < 0)
    return std::nullopt;
  r.start = offset{start};
  return r;
}

result<std::vector<takeover_record>> read_takeover_records(const std::string& root, uint64_t from_epoch) {
  std::vector<takeover_record> out;
  const auto dir = root + "/epochs";
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    if (ec)
      return fs_error("stat", dir, ec);
    return out;
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    auto name = it->path().filename().string();
    auto epoch = parse_epoch_name(name);
    if (!epoch || *epoch < from_epoch)
      continue;  // a *.tmp left by an interrupted write, or not asked for
    std::string text;
    auto path = dir + "/" + name;
    if (auto rec = util::read_file(path, text); rec)
      return file_error("read", path, rec);
    auto r = decode_takeover_record(text);
    if (!r || r->epoch != *epoch)
      return chain_damage(path, 0, offset{0}, offset{0}, "takeover record does not decode");
    out.push_back(*r);
  }
  if (ec)
    return fs_error("list", dir, ec);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.epoch < b.epoch; });
  return out;
}

status write_takeover_record(const std::string& root, const takeover_record& r, bool durable) {
  const auto dir = root + "/epochs";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return fs_error("mkdir", dir, ec);
  auto path = takeover_record_path(root, r.epoch);
  if (durable) {
    if (auto wec = util::write_file_atomic(path, encode_takeover_record(r)); wec)
      return file_error("write", path, wec);
    return sync_takeover_ancestry(root);
  }
  // Whole or absent, also after a crash: its bytes are synced before the
  // rename (a rename that became durable over unsynced bytes could leave
  // an empty record, which stops the chain). Its directory entry is
  // durable only once sync_takeover_record ran.
  const auto tmp = path + ".tmp";
  auto fd = open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC);
  if (!fd)
    return fd.err();
  const auto line = encode_takeover_record(r);
  if (auto st = pwrite_all(fd->get(), 0, line, tmp); !st)
    return st;
  if (::fdatasync(fd->get()) != 0)
    return io_error("fdatasync", tmp);
  fd->reset();
  fs::rename(tmp, path, ec);
  if (ec)
    return fs_error("rename", tmp, ec);
  return {};
}

status sync_takeover_record(const std::string& root, uint64_t epoch) {
  // Its bytes were synced when it was written; its name is made durable.
  const auto path = takeover_record_path(root, epoch);
  std::error_code ec;
  if (!fs::exists(path, ec))
    return make_error(errc::io_error, "takeover record " + path + " is gone: the epoch cannot write");
  if (auto st = sync_dir(root + "/epochs"); !st)
    return st;
  return sync_takeover_ancestry(root);
}

result<partition_log> open_epoch(const std::string& root, uint64_t epoch, const log_config& config,
                                 epoch_open_info* info) {
  if (epoch == 0)
    return make_error(errc::invalid_argument, "owner epoch 0 of " + root + ": epochs start at 1");
  // The newest chain summary of an earlier epoch (or, reopening, of this
  // one) stands for the walk of every epoch below it (chain_summary.hpp);
  // the records below it are not even read, unless it proves unusable.
  const uint64_t summarized_from = newest_chain_summary_epoch(root, epoch).value_or(0);
  auto records = read_takeover_records(root, summarized_from);
  if (!records)
    return records.err();
  if (!records->empty() && records->back().epoch > epoch) {
    const auto& later = records->back();
    return make_error(errc::epoch_over, "epoch " + std::to_string(epoch) + " of " + root + " is over: epoch " +
                                          std::to_string(later.epoch) + " took it over at offset " +
                                          std::to_string(later.start.value));
  }
  epoch_open_info found;
  std::vector<takeover_record> earlier;
  std::optional<takeover_record> own;
  auto split = [&] {
    earlier.clear();
    own.reset();
    for (const auto& r : *records) {
      if (r.epoch == epoch)
        own = r;
      else
        earlier.push_back(r);
    }
  };
  split();
  chain_prefix prefix;
  log_config cfg = config;
  const auto dir = epoch_log_dir(root, epoch);
  size_t walked_from = 0;
  {
    std::vector<std::pair<uint64_t, offset>> summarized;
    for (const auto& r : earlier)
      summarized.emplace_back(r.epoch, r.start);
    if (own)
      summarized.emplace_back(own->epoch, own->start);
    if (auto summary = read_chain_summary(root, summarized)) {
      prefix = std::move(summary->prefix);
      walked_from = summary->index;
    } else if (summarized_from > 0) {
      // Unusable: the whole chain is walked, from every record.
      records = read_takeover_records(root);
      if (!records)
        return records.err();
      split();
    }
  }
  // Earlier epochs but the newest one each end where the next one starts.
  auto add_closed = [&](size_t count, offset last_end) -> status {
    for (size_t i = walked_from; i < count; ++i) {
      offset end = i + 1 < count ? earlier[i + 1].start : last_end;
      if (auto st = add_range(epoch_log_dir(root, earlier[i].epoch), earlier[i].start, end,
                              config.index_interval_bytes, prefix);
          !st)
        return st;
    }
    return {};
  };
  if (own) {
    found.start = own->start;
    if (!earlier.empty())
      found.previous_epoch = earlier.back().epoch;
    // Its record may not be durable yet (written at a takeover whose
    // process stopped before the first byte): it is before the first one.
    cfg.before_materialize = [root, epoch]() { return sync_takeover_record(root, epoch); };
    if (auto st = add_closed(earlier.size(), own->start); !st)
      return st.err();
  } else if (earlier.empty()) {
    // The partition's first epoch: its record is written with its first byte.
    found.took_over = true;
    // A later epoch that took over meanwhile ends this one before it writes.
    cfg.before_materialize = [root, epoch]() -> status {
      auto now = read_takeover_records(root);
      if (!now)
        return now.err();
      if (!now->empty() && now->back().epoch > epoch)
        return make_error(errc::epoch_over, "epoch " + std::to_string(epoch) + " of " + root +
                                              " is over: epoch " + std::to_string(now->back().epoch) +
                                              " took it over");
      return write_takeover_record(root, {epoch, offset{0}});
    };
  } else {
    found.took_over = true;
    const auto& prev = earlier.back();
    found.previous_epoch = prev.epoch;
    if (auto st = add_closed(earlier.size() - 1, prev.start); !st)
      return st.err();
    auto end = take_over_end(epoch_log_dir(root, prev.epoch), prev, config.index_interval_bytes, prefix,
                             found.cut_bytes);
    if (!end)
      return end.err();
    found.start = *end;
    // Durable before the epoch's first byte, not before the takeover ends:
    // an epoch that never writes (a move's destination until it confirms)
    // keeps two fsyncs out of the move's sealed window. Until then a crash
    // may lose the record; the epoch then holds nothing, and its owner's
    // next open takes the partition over again.
    if (auto st = write_takeover_record(root, {epoch, *end}, false); !st)
      return st.err();
    cfg.before_materialize = [root, epoch]() { return sync_takeover_record(root, epoch); };
    prefix.end = found.start;
    write_chain_summary(root, epoch, prefix);
    log::get("storage")->info("epoch.took_over root={} epoch={} previous_epoch={} start_offset={} ignored_bytes={}",
                              root, epoch, prev.epoch, end->value, found.cut_bytes);
  }
  prefix.end = found.start;
  found.prior_segments = prefix.segments.size();
  auto lg = partition_log::open_chained(dir, cfg, std::move(prefix));
  if (lg && info)
    *info = found;
  return lg;
}

status continue_epoch(const std::string& root, partition_log& lg, uint64_t from, uint64_t to,
                      epoch_open_info* info) {
  if (to <= from || lg.on_disk() || !lg.chained())
    return make_error(errc::invalid_argument, "epoch " + std::to_string(to) + " of " + root +
                                                " cannot continue epoch " + std::to_string(from) +
                                                " in place: it must be later, and " + std::to_string(from) +
                                                " must be open, chained and unwritten");
  auto records = read_takeover_records(root);
  if (!records)
    return records.err();
  if (!records->empty() && records->back().epoch > from)
    return make_error(errc::epoch_over, "epoch " + std::to_string(from) + " of " + root + " is over: epoch " +
                                          std::to_string(records->back().epoch) + " took it over at offset " +
                                          std::to_string(records->back().start.value));
  const offset start = lg.log_end();
  if (auto st = write_takeover_record(root, {to, start}, false); !st)
    return st;
  if (auto st = lg.continue_in(epoch_log_dir(root, to), [root, to]() { return sync_takeover_record(root, to); }); !st)
    return st;  // not reached: checked above
  if (info) {
    *info = epoch_open_info{};
    info->took_over = true;
    info->start = start;
    info->previous_epoch = records->empty() ? 0 : records->back().epoch;
    info->prior_segments = lg.segment_count() - 1;
  }
  log::get("storage")->info("epoch.continued root={} epoch={} previous_epoch={} start_offset={}", root, to, from,
                            start.value);
  return {};
}

}  // namespace moonmq::storage

#include "storage/segment.hpp"

#include <algorithm>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#include "storage/record_batch.hpp"
#include "util/atomic_file.hpp"
#include "util/logging.hpp"

namespace moonmq::storage {
namespace {

std::string name_with(offset base, const char* ext) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(base.value));
  return std::string(buf) + ext;
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 3; i >= 0; --i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(std::string_view b, size_t pos) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i)
    v = (v << 8) | static_cast<uint8_t>(b[pos + i]);
  return v;
}

// Position of the last index entry whose relative offset is <= rel (0 if none).
uint64_t lookup(const std::vector<index_entry>& index, uint32_t rel) {
  auto it = std::upper_bound(index.begin(), index.end(), rel,
                             [](uint32_t r, const index_entry& e) { return r < e.relative_offset; });
  if (it == index.begin())
    return 0;
  return std::prev(it)->position;
}

uint32_t relative(offset target, offset base) {
  auto rel = target.value - base.value;
  if (rel <= 0)
    return 0;
  return rel > 0xffffffffLL ? 0xffffffffu : static_cast<uint32_t>(rel);
}

error corrupt(const std::string& path, uint64_t pos, const error& why) {
  return make_error(errc::corrupt_segment, "path=" + path + " position=" + std::to_string(pos) +
                                               ": " + why.message);
}

}  // namespace

std::string segment_log_name(offset base) { return name_with(base, ".log"); }
std::string segment_index_name(offset base) { return name_with(base, ".index"); }

std::optional<offset> parse_segment_log_name(std::string_view name) {
  if (name.size() != 24 || name.substr(20) != ".log")
    return std::nullopt;
  int64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    char c = name[i];
    if (c < '0' || c > '9')
      return std::nullopt;
    if (v > (INT64_MAX - (c - '0')) / 10)
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return offset{v};
}

std::string encode_index(const std::vector<index_entry>& entries) {
  std::string out;
  out.reserve(entries.size() * 8);
  for (const auto& e : entries) {
    put_u32(out, e.relative_offset);
    put_u32(out, e.position);
  }
  return out;
}

std::optional<std::vector<index_entry>> decode_index(std::string_view bytes, uint64_t log_size) {
  if (bytes.size() % 8 != 0)
    return std::nullopt;
  std::vector<index_entry> out;
  out.reserve(bytes.size() / 8);
  for (size_t pos = 0; pos < bytes.size(); pos += 8) {
    index_entry e{get_u32(bytes, pos), get_u32(bytes, pos + 4)};
    if (e.position >= log_size)
      return std::nullopt;
    if (!out.empty() && (e.relative_offset <= out.back().relative_offset ||
                         e.position <= out.back().position))
      return std::nullopt;
    out.push_back(e);
  }
  return out;
}

result<segment_scan> scan_segment(int fd, const std::string& path, offset base,
                                  uint64_t file_size, size_t index_interval_bytes) {
  segment_scan scan;
  scan.next_offset = base;
  uint64_t since_index = 0;
  std::string buf;
  uint64_t pos = 0;
  while (pos < file_size) {
    size_t head = static_cast<size_t>(std::min<uint64_t>(batch_header_size, file_size - pos));
    auto st = pread_exact(fd, pos, head, buf, path);
    if (!st && st.err().code == errc::io_error)
      return st.err();
    auto info = peek_batch_header(buf);
    if (!info) {
      scan.stopped = info.err();
      // A header cut short by the end of the file whose length field (when
      // present) is plausible and claims more than remains: a torn write.
      auto claimed = peek_batch_size(buf);
      scan.incomplete = file_size - pos < batch_log_overhead ||
                        (file_size - pos < batch_header_size && claimed && *claimed > file_size - pos);
      break;
    }
    if (info->size > file_size - pos) {
      scan.stopped = make_error(errc::short_buffer, "batch of " + std::to_string(info->size) +
                                                        " bytes runs past the end of the file");
      scan.incomplete = true;
      break;
    }
    st = pread_exact(fd, pos, info->size, buf, path);
    if (!st)
      return st.err();
    auto view = batch_view::parse(buf, true);
    if (!view) {
      scan.stopped = view.err();
      break;
    }
    if (view->base_offset() != scan.next_offset) {
      scan.stopped = make_error(errc::bad_count, "baseOffset " + std::to_string(view->base_offset().value) +
                                                     " where " + std::to_string(scan.next_offset.value) +
                                                     " was expected");
      break;
    }
    if (scan.index.empty() || since_index >= index_interval_bytes) {
      scan.index.push_back({relative(view->base_offset(), base), static_cast<uint32_t>(pos)});
      since_index = 0;
    }
    since_index += info->size;
    scan.max_timestamp = std::max(scan.max_timestamp, view->max_timestamp());
    scan.next_offset = offset{view->last_offset().value + 1};
    pos += info->size;
    scan.valid_bytes = pos;
  }
  return scan;
}

result<offset> scan_past_damage(const std::string& path, uint64_t from_pos, offset min_offset) {
  auto fd = open_file(path, O_RDONLY);
  if (!fd)
    return fd.err();
  auto size = file_size(fd->get(), path);
  if (!size)
    return size.err();
  // Candidates are tested through a 1 MiB window; a batch that passes the
  // header checks is read whole for the full validation.
  constexpr uint64_t window_bytes = 1 << 20;
  std::string window;
  std::string batch;
  uint64_t window_pos = 0;
  offset end = min_offset;
  for (uint64_t pos = from_pos + 1; pos + batch_header_size <= *size;) {
    if (pos < window_pos || pos + batch_header_size > window_pos + window.size()) {
      window_pos = pos;
      auto st = pread_exact(fd->get(), pos, static_cast<size_t>(std::min(window_bytes, *size - pos)), window, path);
      if (!st)
        return st.err();
    }
    auto head = std::string_view(window).substr(static_cast<size_t>(pos - window_pos), batch_header_size);
    if (static_cast<int8_t>(head[16]) != batch_magic_v2) {  // magic: the cheapest test first
      ++pos;
      continue;
    }
    auto info = peek_batch_header(head);
    if (!info || info->base < min_offset || info->size > *size - pos) {
      ++pos;
      continue;
    }
    auto st = pread_exact(fd->get(), pos, info->size, batch, path);
    if (!st)
      return st.err();
    if (!batch_view::parse(batch, true)) {
      ++pos;
      continue;
    }
    end = std::max(end, offset{info->last.value + 1});
    pos += info->size;
  }
  return end;
}

error damage_error(const std::string& path, uint64_t position, offset first, const error& why) {
  auto e = make_error(errc::corrupt_log, "invalid batch path=" + path + " position=" + std::to_string(position) +
                                             " offset=" + std::to_string(first.value) + ": " +
                                             to_string(why.code) + ": " + why.message);
  damage d;
  d.path = path;
  d.position = position;
  d.first = first;
  d.end = first;
  d.reason = std::string(to_string(why.code)) + ": " + why.message;
  e.damaged = std::move(d);
  return e;
}

result<std::string> read_segment(int fd, const std::string& path, uint64_t size,
                                 uint64_t start_pos, offset target, size_t max_bytes) {
  std::string head;
  uint64_t pos = start_pos;
  // Walk headers to the batch containing target.
  for (;;) {
    if (pos >= size)
      return make_error(errc::offset_out_of_range,
                        "offset " + std::to_string(target.value) + " not in " + path);
    // The header, and the first record key of a control batch (its marker
    // type) when the batch reaches that far.
    size_t n = static_cast<size_t>(std::min<uint64_t>(batch_header_size + control_key_reach, size - pos));
    auto st = pread_exact(fd, pos, n, head, path);
    if (!st)
      return st.err().code == errc::io_error ? st.err() : corrupt(path, pos, st.err());
    auto info = peek_batch_header(head);
    if (!info)
      return corrupt(path, pos, info.err());
    if (info->size > size - pos)
      return corrupt(path, pos, make_error(errc::short_buffer, "batch past end of segment"));
    if (info->last >= target)
      break;
    pos += info->size;
  }
  // Read a window of at most max_bytes and cut it at the last whole batch.
  size_t window = static_cast<size_t>(std::min<uint64_t>(std::max<size_t>(max_bytes, 1), size - pos));
  std::string out;
  auto st = pread_exact(fd, pos, window, out, path);
  if (!st)
    return st.err();
  size_t used = 0;
  while (used < out.size()) {
    auto sz = peek_batch_size(std::string_view(out).substr(used));
    if (!sz || *sz > out.size() - used)
      break;
    used += *sz;
  }
  if (used == 0) {
    // The first batch is larger than max_bytes: return it whole anyway.
    auto first = peek_batch_size(head);
    if (!first)
      return corrupt(path, pos, first.err());
    st = pread_exact(fd, pos, *first, out, path);
    if (!st)
      return st.err().code == errc::io_error ? st.err() : corrupt(path, pos, st.err());
    return out;
  }
  out.resize(used);
  return out;
}

// ---- active_segment ---------------------------------------------------------

result<active_segment> active_segment::create(const std::string& dir, offset base,
                                              size_t index_interval_bytes) {
  active_segment s;
  s.dir_ = dir;
  s.path_ = dir + "/" + segment_log_name(base);
  auto fd = open_file(s.path_, O_RDWR | O_CREAT | O_TRUNC);
  if (!fd)
    return fd.err();
  s.fd_ = std::move(*fd);
  s.base_ = base;
  s.next_ = base;
  s.index_interval_ = index_interval_bytes;
  return s;
}

active_segment active_segment::planned(const std::string& dir, offset base, size_t index_interval_bytes) {
  active_segment s;
  s.dir_ = dir;
  s.path_ = dir + "/" + segment_log_name(base);
  s.base_ = base;
  s.next_ = base;
  s.index_interval_ = index_interval_bytes;
  return s;
}

result<active_segment> active_segment::recover(const std::string& dir, offset base,
                                               size_t index_interval_bytes,
                                               const std::function<bool(const segment_scan&)>& may_cut,
                                               std::optional<error>& stop_reason,
                                               uint64_t& truncated_bytes) {
  active_segment s;
  s.dir_ = dir;
  s.path_ = dir + "/" + segment_log_name(base);
  auto fd = open_file(s.path_, O_RDWR);
  if (!fd)
    return fd.err();
  s.fd_ = std::move(*fd);
  s.base_ = base;
  s.index_interval_ = index_interval_bytes;
  auto size = file_size(s.fd_.get(), s.path_);
  if (!size)
    return size.err();
  auto scan = scan_segment(s.fd_.get(), s.path_, base, *size, index_interval_bytes);
  if (!scan)
    return scan.err();
  stop_reason = scan->stopped;
  if (scan->valid_bytes < *size && !may_cut(*scan)) {
    auto why = scan->stopped ? *scan->stopped : make_error(errc::short_buffer, "scan stopped early");
    return damage_error(s.path_, scan->valid_bytes, scan->next_offset, why);
  }
  truncated_bytes = *size - scan->valid_bytes;
  if (truncated_bytes > 0 &&
      ::ftruncate(s.fd_.get(), static_cast<off_t>(scan->valid_bytes)) != 0)
    return io_error("ftruncate", s.path_);
  // Bytes written before a process crash may still sit in the page cache:
  // sync them so the recovered LEO is durable (cheap when nothing is dirty).
  if (scan->valid_bytes > 0 || truncated_bytes > 0) {
    if (::fsync(s.fd_.get()) != 0)
      return io_error("fsync", s.path_);
  }
  s.size_ = scan->valid_bytes;
  s.written_ = s.size_;
  s.next_ = scan->next_offset;
  s.max_timestamp_ = scan->max_timestamp;
  s.index_ = std::move(scan->index);
  // Bytes since the last index entry, so new entries keep the interval.
  s.bytes_since_index_ = s.index_.empty() ? s.size_ : s.size_ - s.index_.back().position;
  return s;
}

status active_segment::ensure_open() {
  if (fd_.valid())
    return {};
  auto fd = open_file(path_, O_RDWR);
  if (!fd)
    return fd.err();
  fd_ = std::move(*fd);
  return {};
}

void active_segment::write_out_quietly() {
  if (!held_.bytes.empty())
    if (auto st = write_out(); !st)
      log::get("storage")->warn("segment.write_out_failed path={} bytes={} error=\"{}\"", path_,
                                held_.bytes.size(), st.err().message);
}

active_segment::~active_segment() { write_out_quietly(); }

active_segment& active_segment::operator=(active_segment&& o) noexcept {
  if (this == &o)
    return *this;
  write_out_quietly();
  dir_ = std::move(o.dir_);
  path_ = std::move(o.path_);
  fd_ = std::move(o.fd_);
  base_ = o.base_;
  next_ = o.next_;
  size_ = o.size_;
  written_ = o.written_;
  held_ = std::move(o.held_);
  bytes_since_index_ = o.bytes_since_index_;
  index_interval_ = o.index_interval_;
  max_timestamp_ = o.max_timestamp_;
  index_ = std::move(o.index_);
  return *this;
}

status active_segment::write_at_end(std::string_view bytes) {
  if (auto st = pwrite_all(fd_.get(), written_, bytes, path_); !st) {
    // Drop a partial write so the file ends at a batch boundary.
    if (::ftruncate(fd_.get(), static_cast<off_t>(written_)) != 0)
      log::get("storage")->error("segment.truncate_failed path={} size={}", path_, written_);
    return st;
  }
  written_ += bytes.size();
  return {};
}

status active_segment::write_out() {
  if (held_.bytes.empty())
    return {};
  if (auto opened = ensure_open(); !opened)
    return opened;
  if (auto st = write_at_end(held_.bytes); !st)
    return st;
  std::string().swap(held_.bytes);  // an idle segment holds no buffer
  return {};
}

status active_segment::append(std::string_view batch, offset first, offset last,
                              int64_t max_timestamp, size_t hold_up_to) {
  // Open now, as a direct write would: the owner's descriptor budget
  // counts the segment from its first append (partition_log::release_fd).
  if (auto opened = ensure_open(); !opened)
    return opened;
  if (hold_up_to > 0 && batch.size() < hold_up_to) {
    held_.bytes.append(batch);
    if (held_.bytes.size() >= hold_up_to) {
      if (auto st = write_out(); !st) {
        held_.bytes.resize(held_.bytes.size() - batch.size());
        return st;
      }
    }
  } else {
    // Held bytes first: then the file ends where the log does (written_ == size_).
    if (auto st = write_out(); !st)
      return st;
    if (auto st = write_at_end(batch); !st)
      return st;
  }
  if (index_.empty() || bytes_since_index_ >= index_interval_) {
    index_.push_back({relative(first, base_), static_cast<uint32_t>(size_)});
    bytes_since_index_ = 0;
  }
  bytes_since_index_ += batch.size();
  size_ += batch.size();
  next_ = offset{last.value + 1};
  max_timestamp_ = std::max(max_timestamp_, max_timestamp);
  return {};
}

status active_segment::sync() {
  if (auto st = write_out(); !st)
    return st;
  if (auto opened = ensure_open(); !opened)
    return opened;
  if (::fdatasync(fd_.get()) != 0)
    return io_error("fdatasync", path_);
  return {};
}

status active_segment::start_writeback() {
  if (auto st = write_out(); !st)
    return st;
  if (auto opened = ensure_open(); !opened)
    return opened;
  if (::sync_file_range(fd_.get(), 0, 0, SYNC_FILE_RANGE_WRITE) != 0)
    return io_error("sync_file_range", path_);
  return {};
}

status active_segment::seal() {
  if (auto st = write_out(); !st)
    return st;
  if (auto opened = ensure_open(); !opened)
    return opened;
  if (::fsync(fd_.get()) != 0)
    return io_error("fsync", path_);
  auto index_path = dir_ + "/" + segment_index_name(base_);
  if (auto ec = util::write_file_atomic(index_path, encode_index(index_)); ec) {
    auto e = make_error(errc::io_error, "write index path=" + index_path + ": " + ec.message());
    e.sys_errno = ec.value();
    return e;
  }
  return {};
}

result<std::string> active_segment::read(offset target, size_t max_bytes) {
  if (auto st = write_out(); !st)
    return st.err();
  if (auto opened = ensure_open(); !opened)
    return opened.err();
  return read_segment(fd_.get(), path_, size_, lookup(index_, relative(target, base_)), target,
                      max_bytes);
}

// ---- closed segments --------------------------------------------------------

result<std::string> read_closed_segment(const std::string& dir, const closed_segment& seg,
                                        offset target, size_t max_bytes) {
  auto path = dir + "/" + segment_log_name(seg.base);
  auto fd = open_file(path, O_RDONLY);
  if (!fd)
    return fd.err();
  uint64_t start = 0;
  auto rel = relative(target, seg.base);
  auto index_path = dir + "/" + segment_index_name(seg.base);
  if (seg.memory_index) {
    start = lookup(*seg.memory_index, rel);
  } else if (auto ifd = open_file(index_path, O_RDONLY); ifd && seg.index_bytes >= 8) {
    // Binary search over the index file with pread (no full load).
    size_t lo = 0;
    size_t hi = static_cast<size_t>(seg.index_bytes / 8);
    std::string entry;
    bool found = false;
    index_entry best{};
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (!pread_exact(ifd->get(), mid * 8, 8, entry, index_path))
        break;
      index_entry e{get_u32(entry, 0), get_u32(entry, 4)};
      if (e.relative_offset <= rel) {
        best = e;
        found = true;
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (found && best.position < seg.size) {
      // Trust the entry only if the batch there starts where the index says.
      std::string head;
      if (pread_exact(fd->get(), best.position, batch_log_overhead, head, path)) {
        auto info = peek_batch_size(head);
        int64_t head_base = 0;
        for (int i = 0; i < 8; ++i)
          head_base = static_cast<int64_t>((static_cast<uint64_t>(head_base) << 8) |
                                           static_cast<uint8_t>(head[static_cast<size_t>(i)]));
        if (info && head_base == seg.base.value + best.relative_offset)
          start = best.position;
      }
    }
  }
  return read_segment(fd->get(), path, seg.size, start, target, max_bytes);
}

result<bool> check_closed_segment(const std::string& dir, closed_segment& seg,
                                  size_t index_interval_bytes) {
  auto path = dir + "/" + segment_log_name(seg.base);
  auto fd = open_file(path, O_RDONLY);
  if (!fd)
    return fd.err();
  auto size = file_size(fd->get(), path);
  if (!size)
    return size.err();
  seg.size = *size;
  auto index_path = dir + "/" + segment_index_name(seg.base);
  std::string bytes;
  auto ec = util::read_file(index_path, bytes);
  if (!ec && decode_index(bytes, seg.size) && (!bytes.empty() || seg.size == 0)) {
    seg.index_bytes = bytes.size();
    return false;
  }
  auto scan = scan_segment(fd->get(), path, seg.base, seg.size, index_interval_bytes);
  if (!scan)
    return scan.err();
  if (scan->valid_bytes < seg.size) {
    auto why = scan->stopped ? *scan->stopped : make_error(errc::short_buffer, "scan stopped early");
    auto e = damage_error(path, scan->valid_bytes, scan->next_offset, why);
    e.damaged->sealed = true;
    return e;
  }
  auto encoded = encode_index(scan->index);
  if (auto wec = util::write_file_atomic(index_path, encoded); wec) {
    auto e = make_error(errc::io_error, "write index path=" + index_path + ": " + wec.message());
    e.sys_errno = wec.value();
    return e;
  }
  seg.index_bytes = encoded.size();
  seg.max_timestamp = scan->max_timestamp;
  log::get("storage")->info("segment.index_rebuilt path={} entries={}", index_path,
                            scan->index.size());
  return true;
}

status walk_segment_headers(const std::string& path, uint64_t size,
                            const std::function<bool(const batch_header_info&, uint64_t)>& visit) {
  auto fd = open_file(path, O_RDONLY);
  if (!fd)
    return fd.err();
  // Headers are read through a 64 KiB window, so a segment of small
  // batches costs one pread per window, not one per batch. After a batch
  // of a quarter window or more, only the next header is read: a window
  // per large batch would copy 64 KiB to read ~70 bytes (a takeover walks
  // every header of a partition's history, bench/shared).
  constexpr uint64_t window_bytes = 64 * 1024;
  std::string window;
  uint64_t window_pos = 0;
  uint64_t pos = 0;
  uint64_t last_batch = 0;
  while (pos < size) {
    // The header, and the first record key of a control batch (its marker
    // type) when the batch reaches that far.
    size_t n = static_cast<size_t>(std::min<uint64_t>(batch_header_size + control_key_reach, size - pos));
    if (pos < window_pos || pos + n > window_pos + window.size()) {
      window_pos = pos;
      const uint64_t want = last_batch >= window_bytes / 4 ? n : window_bytes;
      auto st = pread_exact(fd->get(), pos, static_cast<size_t>(std::min(want, size - pos)), window, path);
      if (!st)
        return st.err().code == errc::io_error ? st.err() : corrupt(path, pos, st.err());
    }
    auto info = peek_batch_header(std::string_view(window).substr(static_cast<size_t>(pos - window_pos), n));
    if (!info || info->size > size - pos)
      break;
    if (!visit(*info, pos))
      break;
    pos += info->size;
    last_batch = info->size;
  }
  return {};
}

result<int64_t> closed_segment_max_timestamp(const std::string& dir, const closed_segment& seg) {
  int64_t max_ts = -1;
  auto st = walk_segment_headers(dir + "/" + segment_log_name(seg.base), seg.size,
                                 [&](const batch_header_info& h, uint64_t) {
                                   max_ts = std::max(max_ts, h.max_timestamp);
                                   return true;
                                 });
  if (!st)
    return st.err();
  return max_ts;
}

result<std::optional<timestamp_offset>> find_offset_by_timestamp(const std::string& path,
                                                                 uint64_t size, int64_t target,
                                                                 offset min_offset) {
  std::optional<timestamp_offset> found;
  std::optional<error> failed;
  unique_fd fd;  // for whole candidate batches; opened at the first one
  std::string batch;
  auto st = walk_segment_headers(path, size, [&](const batch_header_info& h, uint64_t pos) {
    if (h.max_timestamp < target || h.last < min_offset)
      return true;
    if (!fd.valid()) {
      auto opened = open_file(path, O_RDONLY);
      if (!opened) {
        failed = opened.err();
        return false;
      }
      fd = std::move(*opened);
    }
    auto rd = pread_exact(fd.get(), pos, h.size, batch, path);
    if (!rd) {
      failed = rd.err().code == errc::io_error ? rd.err() : corrupt(path, pos, rd.err());
      return false;
    }
    auto view = batch_view::parse(batch, false);
    if (!view) {
      failed = corrupt(path, pos, view.err());
      return false;
    }
    auto hit = find_timestamp_in_batch(*view, target, min_offset);
    if (!hit) {
      failed = corrupt(path, pos, hit.err());
      return false;
    }
    found = *hit;
    return !found;
  });
  if (!st)
    return st.err();
  if (failed)
    return *failed;
  return found;
}

}  // namespace moonmq::storage

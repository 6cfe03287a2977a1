#include "storage/wal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "storage/group_commit.hpp"
#include "storage/partition_log.hpp"
#include "storage/record_batch.hpp"
#include "storage/recovery_point.hpp"
#include "util/atomic_file.hpp"
#include "util/clock.hpp"
#include "util/logging.hpp"

namespace moonmq::storage {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view header_v1 = "MOONWAL1";
constexpr std::string_view header_v2 = "MOONWAL2";
constexpr size_t header_bytes = 8;
constexpr size_t frame_bytes = 12;  // length, its complement, CRC

void put_u32(std::string& out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
  out.append(b, 4);
}

uint32_t get_u32(std::string_view in, size_t at) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(in[at + i])); };
  return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

/// `<worker>-<seq>.wal` parsed; false for any other name.
bool parse_name(const std::string& name, int& worker, uint64_t& seq) {
  unsigned long long s = 0;
  int w = 0, used = 0;
  if (std::sscanf(name.c_str(), "%d-%20llu.wal%n", &w, &s, &used) != 2 || used != static_cast<int>(name.size())
      || w < 0)
    return false;
  worker = w;
  seq = s;
  return true;
}

std::string file_name(int worker, uint64_t seq) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%d-%020llu.wal", worker, static_cast<unsigned long long>(seq));
  return buf;
}

struct wal_file {
  int worker = 0;
  uint64_t seq = 0;
  std::string path;
};

/// Every WAL file in `dir`, ordered by worker and sequence.
std::vector<wal_file> list_files(const std::string& dir) {
  std::vector<wal_file> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    wal_file f;
    if (it->is_regular_file(ec) && parse_name(it->path().filename().string(), f.worker, f.seq)) {
      f.path = it->path().string();
      out.push_back(std::move(f));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const wal_file& a, const wal_file& b) { return std::tie(a.worker, a.seq) < std::tie(b.worker, b.seq); });
  return out;
}

bool all_zero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

}  // namespace

std::string wal_dir(const std::string& data_dir) { return data_dir + "/.wal"; }

namespace {

std::string dropped_dir(const std::string& dir) { return dir + "/dropped"; }

/// Partition directories named in `<dir>/dropped/`: their entries in the
/// files of `dir` are not replayed.
std::set<std::string> read_dropped(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dropped_dir(dir), ec), end; !ec && it != end; it.increment(ec))
    out.insert(it->path().filename().string());
  return out;
}

}  // namespace

status drop_wal_entries(const std::string& data_dir, const std::string& topic, int32_t partition) {
  const auto dir = dropped_dir(wal_dir(data_dir));
  std::error_code ec;
  const bool made = fs::create_directories(dir, ec);
  if (ec)
    return fs_error("mkdir", dir, ec);
  if (made)
    if (auto st = sync_dir(wal_dir(data_dir)); !st)
      return st;
  auto path = dir + "/" + fs::path(partition_dir(data_dir, topic, partition)).filename().string();
  auto fd = open_file(path, O_WRONLY | O_CREAT);
  if (!fd)
    return fd.err();
  return sync_dir(dir);
}

std::string_view wal_header(wal_format format) { return format == wal_format::v1 ? header_v1 : header_v2; }

void encode_wal_entry(std::string& out, std::string_view topic, int32_t partition, std::string_view batch,
                      wal_format format) {
  const auto body = static_cast<uint32_t>(2 + topic.size() + 4 + batch.size());
  const auto at = out.size();
  put_u32(out, body);
  put_u32(out, ~body);
  put_u32(out, 0);  // CRC, filled in below
  out.push_back(static_cast<char>(topic.size() >> 8));
  out.push_back(static_cast<char>(topic.size()));
  out.append(topic);
  put_u32(out, static_cast<uint32_t>(partition));
  // v2: the batch's own CRC32C covers it from batch_attributes_offset on.
  const size_t covered = 2 + topic.size() + 4
                         + (format == wal_format::v1 ? batch.size() : std::min(batch.size(), batch_attributes_offset));
  out.append(batch);
  auto crc = crc32c(std::string_view(out).substr(at + frame_bytes, covered));
  for (int i = 0; i < 4; ++i)
    out[at + 8 + i] = static_cast<char>(crc >> (24 - 8 * i));
}

wal_scan decode_wal(std::string_view bytes) {
  wal_scan scan;
  const auto head = bytes.substr(0, std::min(bytes.size(), header_bytes));
  if (head != header_v1 && head != header_v2) {
    // A file cut before its header was written (and synced) holds nothing.
    scan.torn_tail = bytes.size() < header_bytes && all_zero(bytes);
    scan.damaged = !scan.torn_tail && !bytes.empty();
    scan.reason = bytes.empty() ? "" : "no WAL header";
    return scan;
  }
  const bool v2 = head == header_v2;
  size_t at = header_bytes;
  scan.valid_bytes = at;
  while (at < bytes.size()) {
    auto rest = bytes.substr(at);
    auto invalid = [&](std::string why, bool runs_past_end) {
      scan.reason = std::move(why);
      scan.torn_tail = runs_past_end || all_zero(rest);
      scan.damaged = !scan.torn_tail;
    };
    if (rest.size() < frame_bytes) {
      invalid("entry header cut at the end of the file", true);
      return scan;
    }
    const auto len = get_u32(rest, 0);
    // A length whose complement does not match was damaged, not cut: it
    // must never pass for an entry running past the end of the file.
    if (get_u32(rest, 4) != ~len) {
      invalid("entry length check mismatch", false);
      return scan;
    }
    if (len < 2 + 4 + 61) {
      invalid("entry length " + std::to_string(len) + " too small", false);
      return scan;
    }
    if (frame_bytes + len > rest.size()) {
      invalid("entry of " + std::to_string(len) + " bytes runs past the end of the file", true);
      return scan;
    }
    auto body = rest.substr(frame_bytes, len);
    const size_t topic_len = (static_cast<size_t>(static_cast<unsigned char>(body[0])) << 8)
                             | static_cast<unsigned char>(body[1]);
    const bool topic_fits = 2 + topic_len + 4 + batch_header_size <= body.size();
    auto topic_too_long = [&] { return "entry topic length " + std::to_string(topic_len) + " exceeds the entry"; };
    // v2 reads the topic length before its CRC is checked: a damaged one
    // fails here or moves the covered range, which the CRC then refuses.
    if (v2 && !topic_fits) {
      invalid(topic_too_long(), false);
      return scan;
    }
    const auto covered = v2 ? body.substr(0, 2 + topic_len + 4 + batch_attributes_offset) : body;
    if (crc32c(covered) != get_u32(rest, 8)) {
      invalid("entry CRC mismatch", false);
      return scan;
    }
    if (!topic_fits) {
      invalid(topic_too_long(), false);
      return scan;
    }
    const auto batch = body.substr(2 + topic_len + 4);
    if (v2) {
      // The batch's own CRC covers what the entry's does not.
      auto size = peek_batch_size(batch);
      if (!size || *size != batch.size()) {
        invalid("entry batch length does not match the entry", false);
        return scan;
      }
      if (crc32c(batch.substr(batch_attributes_offset)) != get_u32(batch, batch_crc_offset)) {
        invalid("entry batch CRC mismatch", false);
        return scan;
      }
    }
    wal_entry e;
    e.topic = std::string(body.substr(2, topic_len));
    e.partition = static_cast<int32_t>(get_u32(body, 2 + topic_len));
    e.batch = std::string(batch);
    scan.entries.push_back(std::move(e));
    at += frame_bytes + len;
    scan.valid_bytes = at;
  }
  return scan;
}

result<wal_writer> wal_writer::open(const std::string& data_dir, int worker) {
  wal_writer w;
  w.dir_ = wal_dir(data_dir);
  w.worker_ = worker;
  std::error_code ec;
  if (!fs::exists(w.dir_, ec)) {
    fs::create_directories(w.dir_, ec);
    if (ec)
      return fs_error("mkdir", w.dir_, ec);
    if (auto st = sync_dir(data_dir); !st)
      return st.err();
  }
  for (const auto& f : list_files(w.dir_))
    if (f.worker == worker) {
      w.seq_ = std::max(w.seq_, f.seq);
      w.older_.push_back(f.path);
    }
  if (auto st = w.start_file(); !st)
    return st.err();
  return w;
}

status wal_writer::start_file() {
  auto path = dir_ + "/" + file_name(worker_, ++seq_);
  auto fd = open_file(path, O_RDWR | O_CREAT | O_TRUNC);
  if (!fd)
    return fd.err();
  if (auto st = pwrite_all(fd->get(), 0, header_v2, path); !st)
    return st;
  if (::fdatasync(fd->get()) != 0)
    return io_error("fdatasync", path);
  if (auto st = sync_dir(dir_); !st)
    return st;
  if (!path_.empty())
    older_.push_back(path_);
  path_ = std::move(path);
  fd_ = std::move(*fd);
  file_bytes_ = header_v2.size();
  return {};
}

status wal_writer::commit() {
  if (buffer_.empty())
    return {};
  auto job = begin_commit();
  auto result = run_commit(job);
  end_commit(result);
  return result;
}

wal_writer::commit_job wal_writer::begin_commit() {
  assert(!committing_);  // one commit at a time: callers end the one under way first
  committing_bytes_.clear();
  std::swap(buffer_, committing_bytes_);
  committing_ = true;
  return {fd_.get(), file_bytes_, &committing_bytes_, &path_};
}

status wal_writer::run_commit(const commit_job& job) {
  if (job.bytes->empty())
    return {};
  if (auto st = pwrite_all(job.fd, job.offset, *job.bytes, *job.path); !st)
    return st;
  if (::fdatasync(job.fd) != 0)
    return io_error("fdatasync", *job.path);
  return {};
}

void wal_writer::end_commit(const status& result) {
  if (result)
    file_bytes_ += committing_bytes_.size();
  committing_bytes_.clear();
  committing_ = false;
}

status wal_writer::restart() {
  if (committing_)
    return make_error(errc::invalid_argument, "WAL restart while a commit of " + path_ + " is under way");
  buffer_.clear();
  if (auto st = start_file(); !st)
    return st;
  for (const auto& old : older_)
    if (::unlink(old.c_str()) != 0 && errno != ENOENT)
      return io_error("unlink", old);
  older_.clear();
  return sync_dir(dir_);
}

status wal_writer::remove_all() {
  if (committing_)
    return make_error(errc::invalid_argument, "WAL removal while a commit of " + path_ + " is under way");
  buffer_.clear();
  fd_.reset();
  older_.push_back(path_);
  for (const auto& old : older_)
    if (::unlink(old.c_str()) != 0 && errno != ENOENT)
      return io_error("unlink", old);
  older_.clear();
  return sync_dir(dir_);
}

wal_replay_report replay_wal(const std::string& data_dir) {
  wal_replay_report report;
  const auto dir = wal_dir(data_dir);
  auto files = list_files(dir);
  if (files.empty()) {
    // Notes of dropped partitions name entries of files that are gone: they
    // must not apply to the files a new run writes.
    std::error_code ec;
    fs::remove_all(dropped_dir(dir), ec);
    return report;
  }
  auto logger = log::get("storage");
  const auto t0 = std::chrono::steady_clock::now();
  auto problem = [&](std::string what) {
    logger->error("wal.replay_problem {}", what);
    report.problems.push_back(std::move(what));
  };
  // Entries per partition directory, in order (one partition's entries are
  // in one worker's files, which are read in sequence order).
  std::map<std::string, std::vector<wal_entry>> by_dir;
  for (const auto& f : files) {
    ++report.files;
    std::string bytes;
    if (auto ec = util::read_file(f.path, bytes); ec) {
      problem("file=" + f.path + " error=\"cannot read: " + ec.message() + "\"");
      continue;
    }
    report.bytes += bytes.size();
    auto scan = decode_wal(bytes);
    // Only a worker's newest file can end in a commit a crash cut short:
    // an older one was complete before the next file was started.
    const bool newest = &f == &files.back() || (&f + 1)->worker != f.worker;
    if (scan.torn_tail && !newest && scan.valid_bytes < bytes.size()) {
      scan.torn_tail = false;
      scan.damaged = true;
      scan.reason += " (in a file a later one of its worker followed)";
    }
    if (scan.damaged)
      problem("file=" + f.path + " position=" + std::to_string(scan.valid_bytes) + " error=\"" + scan.reason
              + "; the entries after it cannot be read\"");
    else if (scan.torn_tail)
      logger->info("wal.torn_tail file={} position={} bytes={} reason=\"{}\"", f.path, scan.valid_bytes,
                   bytes.size() - scan.valid_bytes, scan.reason);
    report.entries += scan.entries.size();
    for (auto& e : scan.entries) {
      auto pdir = partition_dir(data_dir, e.topic, e.partition);
      by_dir[pdir].push_back(std::move(e));
    }
  }
  report.partitions = by_dir.size();
  const auto dropped = read_dropped(dir);
  // End offset of the entries of each partition that replay could not
  // apply: the log is marked to end no lower (see raise_recovery_point).
  std::map<std::string, int64_t> unapplied;
  auto wal_end = [](const std::vector<wal_entry>& entries) {
    int64_t end = 0;
    for (const auto& e : entries)
      if (auto head = peek_batch_header(e.batch))
        end = std::max(end, head->last.value + 1);
    return end;
  };
  std::vector<std::unique_ptr<partition_log>> logs;
  for (auto& [pdir, entries] : by_dir) {
    if (dropped.count(fs::path(pdir).filename().string())) {
      logger->info("wal.skipped partition={} entries={} reason=\"deleted or reset after the WAL stopped\"", pdir,
                   entries.size());
      continue;
    }
    // A partition whose directory is gone was deleted (a worker's WAL only
    // acknowledges appends to a log whose directory was synced): its
    // entries must not bring it back.
    std::error_code gone;
    if (!fs::is_directory(pdir, gone)) {
      logger->info("wal.skipped partition={} entries={} reason=\"its directory is gone (deleted)\"", pdir,
                   entries.size());
      continue;
    }
    auto opened = partition_log::open(pdir);
    if (!opened) {
      problem("partition=" + pdir + " entries=" + std::to_string(entries.size()) + " error=\"" + opened.err().message
              + "\" msg=\"its entries are kept with the WAL files; the partition opens offline\"");
      unapplied[pdir] = wal_end(entries);
      continue;
    }
    auto lg = std::make_unique<partition_log>(std::move(opened.value()));
    for (const auto& e : entries) {
      auto head = peek_batch_header(e.batch);
      if (!head) {
        problem("partition=" + pdir + " error=\"unreadable batch header in the WAL\"");
        break;
      }
      if (head->last < lg->log_end())
        continue;  // its segment kept it
      if (head->base != lg->log_end()) {
        problem("partition=" + pdir + " batch=[" + std::to_string(head->base.value) + ","
                + std::to_string(head->last.value + 1) + ") log_end=" + std::to_string(lg->log_end().value)
                + " error=\"the batch does not continue the log\"");
        break;
      }
      if (auto r = lg->append_with_offsets(e.batch); !r) {
        problem("partition=" + pdir + " offset=" + std::to_string(head->base.value) + " error=\""
                + std::string(to_string(r.err().code)) + ": " + r.err().message + "\"");
        break;
      }
      ++report.batches_applied;
    }
    if (auto end = wal_end(entries); lg->log_end().value < end)
      unapplied[pdir] = end;
    logs.push_back(std::move(lg));
  }
  std::vector<partition_log*> raw;
  for (auto& lg : logs)
    raw.push_back(lg.get());
  syncfs_handles handles(data_dir);
  sync_round_stats stats;
  auto closed = close_together(raw, handles, stats);
  for (size_t i = 0; i < raw.size(); ++i)
    if (!closed[i])
      problem("partition=" + raw[i]->dir() + " error=\"close after replay failed: " + closed[i].err().message + "\"");
  logs.clear();
  // A partition the WAL could not complete must not give the offsets it
  // acknowledged to other records: its recovery point goes to the WAL's
  // end for it, so the log opens offline ("ends below its recovery point")
  // and a repair continues at or above that offset (docs/storage.md
  // "Repair").
  for (const auto& [pdir, end] : unapplied) {
    auto now = read_recovery_checkpoint(pdir);
    const int64_t point = now && now->state == loaded_checkpoint::kind::valid ? now->value.point.value : 0;
    if (end <= point)
      continue;
    if (auto st = write_recovery_checkpoint(pdir, {offset{end}, false}); !st)
      problem("partition=" + pdir + " error=\"cannot raise its recovery point to " + std::to_string(end) + ": "
              + st.err().message + "\"");
    else
      logger->error("wal.unapplied partition={} recovery_point={} msg=\"the log lacks acknowledged offsets the "
                    "WAL could not put back; it opens offline until repaired\"",
                    pdir, end);
  }

  if (report.problems.empty()) {
    for (const auto& f : files)
      if (::unlink(f.path.c_str()) != 0 && errno != ENOENT)
        problem("file=" + f.path + " error=\"cannot delete after replay\"");
    std::error_code ec;
    fs::remove_all(dropped_dir(dir), ec);
    (void)sync_dir(dir);
  }
  if (!report.problems.empty()) {
    auto keep = dir + "/retained-" + std::to_string(util::wall_ms());
    std::error_code ec;
    fs::create_directories(keep, ec);
    if (ec)
      logger->error("wal.retain_failed dir={} error=\"{}\"", keep, ec.message());
    for (const auto& f : files) {
      std::error_code moved;
      fs::rename(f.path, keep + "/" + fs::path(f.path).filename().string(), moved);
      if (moved && fs::exists(f.path))
        logger->error("wal.retain_failed file={} dir={} error=\"{}\"", f.path, keep, moved.message());
    }
    if (!dropped.empty()) {
      std::error_code moved;
      fs::rename(dropped_dir(dir), keep + "/dropped", moved);
      if (moved)
        fs::remove_all(dropped_dir(dir), moved);
    }
    (void)sync_dir(keep);
    (void)sync_dir(dir);
    report.retained_in = keep;
  }
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  logger->info("wal.replayed files={} bytes={} entries={} partitions={} batches_applied={} problems={} "
               "retained_in=\"{}\" ms={:.1f}",
               report.files, report.bytes, report.entries, report.partitions, report.batches_applied,
               report.problems.size(), report.retained_in, ms);
  return report;
}

}  // namespace moonmq::storage

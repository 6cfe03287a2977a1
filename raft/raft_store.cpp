#include "raft/raft_store.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

#include <array>

#include <boost/crc.hpp>
#include <boost/endian/conversion.hpp>
#include <nlohmann/json.hpp>

#include "util/atomic_file.hpp"
#include "util/logging.hpp"

namespace moonmq::raft {

using nlohmann::json;
namespace fs = std::filesystem;

uint32_t crc32(const std::string& data) {
  boost::crc_32_type crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

std::string encode_log_record(const log_entry& e) {
  std::string body = to_json(e).dump();
  char head[16];
  std::snprintf(head, sizeof head, "%08x ", crc32(body));
  return std::string(head) + body + "\n";
}

namespace {

error io_err(const std::string& file, const std::string& what, int err) {
  return error{errc::io_error, file + ": " + what + ": " + std::strerror(err), {}, err};
}

error io_err(const std::string& file, const std::string& what, std::error_code ec) {
  return error{errc::io_error, file + ": " + what + ": " + ec.message(), {}, ec.value()};
}

error corrupt(const std::string& file, const std::string& why) {
  return error{errc::corrupt_state, file + ": " + why, {}, 0};
}

/// Reads and parses a JSON file; corrupt_state naming the file on any failure.
result<json> read_json(const std::string& file) {
  std::string text;
  if (auto ec = util::read_file(file, text))
    return io_err(file, "read", ec);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded())
    return corrupt(file, "not valid JSON (truncated or malformed)");
  return j;
}

bool parse_hex8(const std::string& s, std::size_t pos, uint32_t& out) {
  out = 0;
  for (std::size_t i = pos; i < pos + 8; ++i) {
    char c = s[i];
    uint32_t d;
    if (c >= '0' && c <= '9')
      d = static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<uint32_t>(c - 'a' + 10);
    else
      return false;
    out = (out << 4) | d;
  }
  return true;
}

struct log_scan {
  std::vector<log_entry> entries;
  bool dropped_torn_tail = false;
};

/// Parses raft-log per the recovery rule in raft_store.hpp.
result<log_scan> scan_log(const std::string& file, const std::string& data) {
  log_scan out;
  std::size_t pos = 0;
  while (pos < data.size()) {
    std::size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) {  // final record without its newline: torn append
      out.dropped_torn_tail = true;
      break;
    }
    uint32_t want = 0;
    bool framed = nl - pos > 9 && data[pos + 8] == ' ' && parse_hex8(data, pos, want);
    std::string body = framed ? data.substr(pos + 9, nl - pos - 9) : std::string();
    if (!framed || crc32(body) != want) {
      if (nl + 1 == data.size()) {  // the last record: torn append, never acknowledged
        out.dropped_torn_tail = true;
        break;
      }
      return corrupt(file, "bad record (framing or CRC) at byte " + std::to_string(pos) + " followed by more data");
    }
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded())
      return corrupt(file, "record at byte " + std::to_string(pos) + " has a valid CRC but invalid JSON");
    auto e = entry_from_json(j);
    if (!e)
      return corrupt(file, "record at byte " + std::to_string(pos) + ": " + e.err().message);
    if (!out.entries.empty() && e->index != out.entries.back().index.next())
      return corrupt(file, "record at byte " + std::to_string(pos) + " has index " + std::to_string(e->index.value) +
                               ", expected " + std::to_string(out.entries.back().index.value + 1));
    out.entries.push_back(std::move(*e));
    pos = nl + 1;
  }
  return out;
}

// raft-commit slots (layout in raft_store.hpp): slot 0 at byte 0, slot 1 at
// byte 4096, so that a torn write of one never touches the other's sector
// or page.
constexpr std::size_t commit_slot_bytes = 32;
constexpr std::size_t commit_slot_stride = 4096;
constexpr char commit_magic[4] = {'M', 'Q', 'C', 'I'};

struct commit_slot {
  uint64_t seq = 0;
  uint64_t commit = 0;
};

uint32_t slot_crc(const char* slot) {
  boost::crc_32_type crc;
  crc.process_bytes(slot + 8, commit_slot_bytes - 8);
  return crc.checksum();
}

std::array<char, commit_slot_bytes> encode_slot(commit_slot s) {
  std::array<char, commit_slot_bytes> out{};
  std::memcpy(out.data(), commit_magic, 4);
  boost::endian::store_little_u64(reinterpret_cast<unsigned char*>(out.data() + 8), s.seq);
  boost::endian::store_little_u64(reinterpret_cast<unsigned char*>(out.data() + 16), s.commit);
  boost::endian::store_little_u32(reinterpret_cast<unsigned char*>(out.data() + 4), slot_crc(out.data()));
  return out;
}

/// The valid slot with the highest sequence in raft-commit's bytes, if any.
std::optional<commit_slot> best_slot(const std::string& data) {
  std::optional<commit_slot> best;
  for (std::size_t at = 0; at + commit_slot_bytes <= data.size() && at <= commit_slot_stride;
       at += commit_slot_stride) {
    const char* p = data.data() + at;
    const auto* u = reinterpret_cast<const unsigned char*>(p);
    if (std::memcmp(p, commit_magic, 4) != 0 || boost::endian::load_little_u32(u + 4) != slot_crc(p))
      continue;
    commit_slot s{boost::endian::load_little_u64(u + 8), boost::endian::load_little_u64(u + 16)};
    if (!best || s.seq > best->seq)
      best = s;
  }
  return best;
}

log_index next_index(const persisted_state& p) {
  if (!p.entries.empty())
    return p.entries.back().index.next();
  return p.snap ? p.snap->last_index.next() : log_index{1};
}

}  // namespace

result<raft_store> raft_store::open(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return io_err(dir, "create directory", ec);
  raft_store s(dir);
  const std::string state_path = s.path(state_file);
  const std::string snap_path = s.path(snapshot_file);
  const std::string log_path = s.path(log_file);
  bool has_state = fs::exists(state_path, ec);
  bool has_snap = fs::exists(snap_path, ec);
  bool has_log = fs::exists(log_path, ec);

  if (!has_state) {
    const bool has_commit = fs::exists(s.path(commit_file), ec);
    if (has_snap || has_log || has_commit)
      return corrupt(state_path, "missing while "
                                   + std::string(has_log ? log_file : has_snap ? snapshot_file : commit_file)
                                   + " exists (refusing to forget the term and vote)");
    if (auto wec = util::write_file_atomic(state_path, to_json(hard_state{}).dump()))
      return io_err(state_path, "write", wec);
    return s;
  }

  auto sj = read_json(state_path);
  if (!sj)
    return sj.err();
  auto hs = hard_state_from_json(*sj);
  if (!hs)
    return corrupt(state_path, hs.err().message);

  std::optional<snapshot> snap;
  if (has_snap) {
    auto nj = read_json(snap_path);
    if (!nj)
      return nj.err();
    auto sn = snapshot_from_json(*nj);
    if (!sn)
      return corrupt(snap_path, sn.err().message);
    snap = std::move(*sn);
  }

  log_scan scan;
  if (has_log) {
    std::string data;
    if (auto rec = util::read_file(log_path, data))
      return io_err(log_path, "read", rec);
    auto sc = scan_log(log_path, data);
    if (!sc)
      return sc.err();
    scan = std::move(*sc);
  }

  // The commit index: the larger of raft-state.json's and raft-commit's.
  std::string commit_from = state_path;
  const std::string commit_path = s.path(commit_file);
  if (fs::exists(commit_path, ec)) {
    std::string data;
    if (auto rec = util::read_file(commit_path, data))
      return io_err(commit_path, "read", rec);
    auto slot = best_slot(data);
    if (!slot && !data.empty())
      log::get("raft")->warn("raft.commit_file_unreadable file={} bytes={} msg=\"no valid slot; the commit index of "
                             "{} ({}) is used, and later entries apply once the leader confirms them\"",
                             commit_path, data.size(), state_file, hs->commit.value);
    if (slot) {
      s.commit_seq_ = slot->seq;
      if (slot->commit > hs->commit.value) {
        hs->commit = log_index{slot->commit};
        commit_from = commit_path;
      }
    }
  }

  persisted_state p;
  p.hard = *hs;
  p.entries = std::move(scan.entries);
  std::size_t raw_count = p.entries.size();
  if (snap) {
    ready_batch rd;
    rd.snap = std::move(snap);
    (void)apply_ready(p, rd);  // the snapshot step cannot fail
  }
  if (auto st = check_persisted(p); !st)
    return corrupt(st.err().message.find("commit") != std::string::npos ? commit_from : log_path, st.err().message);
  s.state_ = std::move(p);
  if (scan.dropped_torn_tail || s.state_.entries.size() != raw_count) {
    log::get("raft")->warn("raft.store_recovered dir={} torn_tail={} dropped_entries={}", dir, scan.dropped_torn_tail,
                           raw_count - s.state_.entries.size());
    if (auto st = s.rewrite_log(); !st)
      return st.err();
  }
  return s;
}

status raft_store::rewrite_log() {
  std::string data;
  for (const auto& e : state_.entries)
    data += encode_log_record(e);
  const std::string p = path(log_file);
  if (auto ec = util::write_file_atomic(p, data))
    return io_err(p, "write", ec);
  return {};
}

status raft_store::append_log(const std::vector<log_entry>& entries) {
  if (entries.empty())
    return {};
  std::string data;
  for (const auto& e : entries)
    data += encode_log_record(e);
  const std::string p = path(log_file);
  std::error_code ec;
  bool existed = fs::exists(p, ec);
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_err(p, "open", errno);
  std::string_view rest = data;
  while (!rest.empty()) {
    ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      int err = errno;
      ::close(fd);
      return io_err(p, "write", err);
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return io_err(p, "fsync", err);
  }
  ::close(fd);
  if (!existed)
    if (auto dec = util::fsync_dir(dir_))
      return io_err(dir_, "fsync directory", dec);
  return {};
}

status raft_store::save(const ready_batch& rd) {
  persisted_state next = state_;
  if (auto st = apply_ready(next, rd); !st)
    return st;
  bool rewrite = false;
  if (rd.snap) {
    const std::string p = path(snapshot_file);
    if (auto ec = util::write_file_atomic(p, to_json(*rd.snap).dump()))
      return io_err(p, "write", ec);
    rewrite = true;
  }
  bool append = false;
  if (rd.truncate_from) {
    if (!rewrite && *rd.truncate_from == next_index(state_))
      append = true;
    else
      rewrite = true;
  }
  bool hard_changed = next.hard != state_.hard;
  bool commit_only = next.hard.current_term == state_.hard.current_term && next.hard.voted_for == state_.hard.voted_for;
  state_ = std::move(next);
  if (rewrite) {
    if (auto st = rewrite_log(); !st)
      return st;
  } else if (append) {
    if (auto st = append_log(rd.entries); !st)
      return st;
  }
  if (hard_changed && commit_only)
    return write_commit(state_.hard.commit);
  if (hard_changed) {
    const std::string p = path(state_file);
    if (auto ec = util::write_file_atomic(p, to_json(state_.hard).dump()))
      return io_err(p, "write", ec);
  }
  return {};
}

status raft_store::write_commit(log_index commit) {
  const std::string p = path(commit_file);
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_err(p, "open", errno);
  commit_slot next{commit_seq_ + 1, commit.value};
  auto bytes = encode_slot(next);
  auto at = static_cast<off_t>((next.seq % 2) * commit_slot_stride);
  ssize_t n;
  do
    n = ::pwrite(fd, bytes.data(), bytes.size(), at);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(bytes.size())) {
    int err = n < 0 ? errno : EIO;
    ::close(fd);
    return io_err(p, "write", err);
  }
  if (::fdatasync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return io_err(p, "fdatasync", err);
  }
  ::close(fd);
  // The file's directory entry is made durable once per process (it may
  // have been created by a run that died before its directory fsync).
  if (!commit_dir_synced_) {
    if (auto dec = util::fsync_dir(dir_))
      return io_err(dir_, "fsync directory", dec);
    commit_dir_synced_ = true;
  }
  commit_seq_ = next.seq;
  return {};
}

}  // namespace moonmq::raft

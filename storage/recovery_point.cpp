#include "storage/recovery_point.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>

#include <fcntl.h>
#include <unistd.h>

#include "storage/file_io.hpp"
#include "storage/record_batch.hpp"
#include "util/atomic_file.hpp"

namespace moonmq::storage {
namespace {

constexpr std::string_view prefix = "moonmq-recovery-point v1 offset=";
constexpr std::string_view crc_key = " crc32c=";
constexpr std::string_view log_start_prefix = "moonmq-log-start v1 offset=";

std::string path_in(const std::string& dir) { return dir + "/" + recovery_point_file_name; }

error file_error(const char* what, const std::string& path, const std::error_code& ec) {
  auto e = make_error(errc::io_error, std::string(what) + " path=" + path + ": " + ec.message());
  e.sys_errno = ec.value();
  return e;
}

}  // namespace

std::string seal_line(std::string body) {
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", crc32c(body));
  return body + std::string(crc_key) + crc + "\n";
}

std::optional<std::string_view> unseal_line(std::string_view text, std::string_view head) {
  if (text.size() < head.size() || text.substr(0, head.size()) != head || text.back() != '\n')
    return std::nullopt;
  auto crc_at = text.rfind(crc_key);
  if (crc_at == std::string_view::npos || crc_at < head.size())
    return std::nullopt;
  auto body = text.substr(0, crc_at);
  auto crc_text = text.substr(crc_at + crc_key.size());
  crc_text.remove_suffix(1);  // the newline
  uint32_t crc = 0;
  if (crc_text.size() != 8 || crc_text.find_first_not_of("0123456789abcdef") != std::string_view::npos)
    return std::nullopt;  // exactly what seal_line writes: 8 lower-case hex digits
  auto [crc_end, crc_ec] = std::from_chars(crc_text.data(), crc_text.data() + 8, crc, 16);
  if (crc_ec != std::errc{} || crc_end != crc_text.data() + 8 || crc != crc32c(body))
    return std::nullopt;
  return body.substr(head.size());
}

namespace {

/// Reads `<dir>/<name>` and decodes it: missing, valid (`value` set) or
/// unreadable. Errors: io_error when it exists but cannot be read.
template <class Loaded, class Decode>
result<Loaded> read_decoded(const std::string& dir, const char* name, Decode decode) {
  Loaded out;
  std::string text;
  auto path = dir + "/" + name;
  if (auto ec = util::read_file(path, text); ec) {
    if (ec.value() == ENOENT)
      return out;
    return file_error("read", path, ec);
  }
  if (auto value = decode(text)) {
    out.state = loaded_checkpoint::kind::valid;
    out.value = *value;
  } else {
    out.state = loaded_checkpoint::kind::unreadable;
  }
  return out;
}

/// Removes `<dir>/<name>` and fsyncs `dir`; missing is not an error.
status remove_state_file(const std::string& dir, const char* name) {
  auto path = dir + "/" + name;
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT)
      return {};
    return io_error("unlink", path);
  }
  if (auto ec = util::fsync_dir(dir); ec)
    return file_error("fsync_dir", dir, ec);
  return {};
}

}  // namespace

std::string encode_recovery_checkpoint(const recovery_checkpoint& cp) {
  return seal_line(std::string(prefix) + std::to_string(cp.point.value) + " clean=" + (cp.clean ? "1" : "0"));
}

std::optional<recovery_checkpoint> decode_recovery_checkpoint(std::string_view text) {
  auto rest = unseal_line(text, prefix);
  if (!rest)
    return std::nullopt;
  int64_t point = -1;
  auto [num_end, num_ec] = std::from_chars(rest->data(), rest->data() + rest->size(), point);
  if (num_ec != std::errc{} || point < 0)
    return std::nullopt;
  auto tail = rest->substr(static_cast<size_t>(num_end - rest->data()));
  if (tail != " clean=0" && tail != " clean=1")
    return std::nullopt;
  return recovery_checkpoint{offset{point}, tail == " clean=1"};
}

result<loaded_checkpoint> read_recovery_checkpoint(const std::string& dir) {
  return read_decoded<loaded_checkpoint>(dir, recovery_point_file_name, decode_recovery_checkpoint);
}

status write_recovery_checkpoint(const std::string& dir, const recovery_checkpoint& cp, bool durable) {
  auto path = path_in(dir);
  if (durable) {
    if (auto ec = util::write_file_atomic(path, encode_recovery_checkpoint(cp)); ec)
      return file_error("write", path, ec);
    return {};
  }
  // In place: no new inode per write (a partition writes this every
  // checkpoint interval). A crash mid-write leaves a line whose CRC fails,
  // which open reads as unreadable: the recovery point is then unknown,
  // the strict case, never a higher point.
  auto line = encode_recovery_checkpoint(cp);
  auto fd = open_file(path, O_WRONLY | O_CREAT);
  if (!fd)
    return fd.err();
  if (auto st = pwrite_all(fd->get(), 0, line, path); !st)
    return st;
  if (::ftruncate(fd->get(), static_cast<off_t>(line.size())) != 0)
    return io_error("ftruncate", path);
  return {};
}

status remove_recovery_checkpoint(const std::string& dir) {
  return remove_state_file(dir, recovery_point_file_name);
}

std::string encode_log_start(offset start) {
  return seal_line(std::string(log_start_prefix) + std::to_string(start.value));
}

std::optional<offset> decode_log_start(std::string_view text) {
  auto rest = unseal_line(text, log_start_prefix);
  if (!rest)
    return std::nullopt;
  int64_t start = -1;
  auto [num_end, num_ec] = std::from_chars(rest->data(), rest->data() + rest->size(), start);
  if (num_ec != std::errc{} || start < 0 || num_end != rest->data() + rest->size())
    return std::nullopt;
  return offset{start};
}

result<loaded_log_start> read_log_start(const std::string& dir) {
  return read_decoded<loaded_log_start>(dir, log_start_file_name, decode_log_start);
}

status write_log_start(const std::string& dir, offset start) {
  auto path = dir + "/" + log_start_file_name;
  if (auto ec = util::write_file_atomic(path, encode_log_start(start)); ec)
    return file_error("write", path, ec);
  return {};
}

status remove_log_start(const std::string& dir) { return remove_state_file(dir, log_start_file_name); }

}  // namespace moonmq::storage

#pragma once
// The recovery-point checkpoint of one partition log: `<dir>/recovery-point`,
// Kafka's recovery-point-offset-checkpoint and clean-shutdown marker in one
// small file per partition directory. It records an offset below which
// every record was fdatasynced, and whether the log was closed cleanly.
//
// Format: one text line,
//   "moonmq-recovery-point v1 offset=<decimal> clean=<0|1> crc32c=<8 hex digits>\n"
// where the CRC32C (storage/record_batch.hpp crc32c) covers every byte
// before " crc32c=". Written only with util::write_file_atomic (temp file,
// fsync, rename, directory fsync), so a reader sees the old or the new line,
// never a mix; a line that does not decode is reported as unreadable.
//
// The log-start file of one partition log: `<dir>/log-start`, Kafka's
// log-start-offset-checkpoint for one partition. It records the log-start
// offset that DeleteRecords advanced (records below it are deleted even
// where they share a segment, or a batch, with later ones). Format:
//   "moonmq-log-start v1 offset=<decimal> crc32c=<8 hex digits>\n"
// sealed with the same CRC as the recovery point and always written with
// util::write_file_atomic, so a crash leaves the old or the new offset.

#include <optional>
#include <string>
#include <string_view>

#include "storage/types.hpp"

namespace moonmq::storage {

/// `body` + " crc32c=<8 lower-case hex digits>\n", the CRC32C over `body`:
/// the sealed line of every small state file of a log directory.
std::string seal_line(std::string body);

/// The part of a sealed line between `head` and " crc32c=", or nullopt
/// when the head, trailing newline or CRC is wrong.
std::optional<std::string_view> unseal_line(std::string_view text, std::string_view head);

/// File name of the checkpoint inside a partition directory.
inline constexpr const char* recovery_point_file_name = "recovery-point";

/// What the checkpoint says.
struct recovery_checkpoint {
  offset point{0};     ///< every offset below it was fdatasynced (a batch boundary)
  bool clean = false;  ///< written by partition_log::close: nothing was appended since
};

/// The line described above.
std::string encode_recovery_checkpoint(const recovery_checkpoint& cp);

/// Parses a checkpoint line; nullopt when the prefix, version, numbers,
/// trailing newline or CRC are wrong.
std::optional<recovery_checkpoint> decode_recovery_checkpoint(std::string_view text);

/// What reading the checkpoint of a directory found.
struct loaded_checkpoint {
  enum class kind { missing, valid, unreadable } state = kind::missing;
  recovery_checkpoint value;  ///< meaningful when state == valid
};

/// Reads `<dir>/recovery-point`. A missing file is `missing`, a file that
/// does not decode is `unreadable` (never an error). Errors: io_error when
/// the file exists but cannot be read.
result<loaded_checkpoint> read_recovery_checkpoint(const std::string& dir);

/// Replaces `<dir>/recovery-point` atomically and durably. Errors: io_error
/// (the old file is then unchanged). `durable` false writes the line in
/// place without any fsync: a crash may then leave the old line or an
/// unreadable one, so use it only where either is safe and a later sync
/// covers it (a group commit round, partition_log::close_synced).
status write_recovery_checkpoint(const std::string& dir, const recovery_checkpoint& cp, bool durable = true);

/// Removes `<dir>/recovery-point` (durably: the directory is fsynced).
/// Missing is not an error. Errors: io_error.
status remove_recovery_checkpoint(const std::string& dir);

/// File name of the log-start offset inside a partition directory.
inline constexpr const char* log_start_file_name = "log-start";

/// The log-start line described above.
std::string encode_log_start(offset start);

/// Parses a log-start line; nullopt when the prefix, version, number,
/// trailing newline or CRC are wrong.
std::optional<offset> decode_log_start(std::string_view text);

/// What reading the log-start file of a directory found (`value` is
/// meaningful when state == valid).
struct loaded_log_start {
  loaded_checkpoint::kind state = loaded_checkpoint::kind::missing;
  offset value{0};
};

/// Reads `<dir>/log-start`: missing, valid, or unreadable (a line that does
/// not decode; never an error). Errors: io_error when the file exists but
/// cannot be read.
result<loaded_log_start> read_log_start(const std::string& dir);

/// Replaces `<dir>/log-start` atomically and durably (temp file, fsync,
/// rename, directory fsync). Errors: io_error (the old file is unchanged).
status write_log_start(const std::string& dir, offset start);

/// Removes `<dir>/log-start` durably. Missing is not an error. Errors: io_error.
status remove_log_start(const std::string& dir);

}  // namespace moonmq::storage

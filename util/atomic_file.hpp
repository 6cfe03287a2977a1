#pragma once
// Durable file helpers shared by every component that persists state
// (ownership table, controller fence, group offsets, journals, raft store).

#include <string>
#include <string_view>
#include <system_error>

namespace moonmq::util {

/// Replaces `path` with `contents` atomically and durably: writes
/// `path.tmp`, fsyncs it, renames it over `path`, then fsyncs the parent
/// directory so the rename itself survives a crash (POSIX rename(2) is atomic
/// within one file system). Returns an empty error_code on success, else the
/// errno of the failing step; `path` then still holds its old contents.
std::error_code write_file_atomic(const std::string& path, std::string_view contents);

/// Reads the whole file at `path` into `out`. Returns ENOENT as an error_code
/// when the file does not exist.
std::error_code read_file(const std::string& path, std::string& out);

/// fsyncs the directory `dir` (makes creations, renames and unlinks in it
/// durable).
std::error_code fsync_dir(const std::string& dir);

}  // namespace moonmq::util

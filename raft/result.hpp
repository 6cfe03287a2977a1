#pragma once
// Error values of the raft module and a small result<T>: every fallible call
// that crosses the module boundary (propose, JSON decoding, the durable store)
// returns one of these instead of throwing.

#include <string>
#include <utility>
#include <variant>

namespace moonmq::raft {

/// Every way a raft operation can fail.
enum class errc {
  not_leader = 1,  ///< propose on a non-leader; error::leader names the known leader ("" if none)
  malformed,       ///< a wire message or entry failed validation (message says which field)
  io_error,        ///< a system call failed (sys_errno set, message names the file)
  corrupt_state,   ///< a persisted file is truncated or malformed (message names the file)
  invalid_argument ///< caller passed a value outside the documented domain
};

/// Stable lower-case name of `code` ("not_leader", "malformed", ...).
const char* to_string(errc code);

/// An error value. `leader` is only set for errc::not_leader (may be empty
/// when no leader is known); `sys_errno` only for errc::io_error.
struct error {
  errc code = errc::invalid_argument;
  std::string message;
  std::string leader;
  int sys_errno = 0;
};

/// Either a T or an error. Access value() only after checking ok().
template <class T>
class [[nodiscard]] result {
 public:
  result(T v) : data_(std::move(v)) {}      // NOLINT: implicit by design
  result(error e) : data_(std::move(e)) {}  // NOLINT: implicit by design

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(data_); }
  const T& value() const { return std::get<0>(data_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  const error& err() const { return std::get<1>(data_); }

 private:
  std::variant<T, error> data_;
};

/// result<void> equivalent: ok() or an error.
class [[nodiscard]] status {
 public:
  status() = default;
  status(error e) : err_(std::move(e)), ok_(false) {}  // NOLINT: implicit by design
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const error& err() const { return err_; }

 private:
  error err_;
  bool ok_ = true;
};

}  // namespace moonmq::raft

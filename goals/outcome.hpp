#pragma once
// Errors are values across module boundaries: outcome<T> holds either a
// value or a human-readable error message.

#include <optional>
#include <string>
#include <utility>

namespace moonmq::goals {

template <class T>
class outcome {
 public:
  outcome(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  static outcome failure(std::string message) {
    outcome o;
    o.error_ = std::move(message);
    return o;
  }
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  /// Empty when ok().
  const std::string& error() const { return error_; }

 private:
  outcome() = default;
  std::optional<T> value_;
  std::string error_;
};

}  // namespace moonmq::goals

#pragma once
// Errors as values across module boundaries: basic_result<T, E> holds a T or
// an E, and basic_result<void, E> is success or an E. Each module defines its
// own error struct and aliases:
//
//   template <class T> using result = util::basic_result<T, error>;
//   using status = result<void>;

#include <optional>
#include <utility>
#include <variant>

namespace moonmq::util {

template <class T, class E>
class [[nodiscard]] basic_result {
public:
  basic_result(T v) : data_(std::move(v)) {}  // NOLINT: implicit by design
  basic_result(E e) : data_(std::move(e)) {}  // NOLINT: implicit by design

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }
  /// The value; only after checking ok().
  T& value() & { return std::get<0>(data_); }
  const T& value() const& { return std::get<0>(data_); }
  T&& value() && { return std::get<0>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  /// The error; only after checking !ok().
  const E& err() const { return std::get<1>(data_); }

private:
  std::variant<T, E> data_;
};

template <class E>
class [[nodiscard]] basic_result<void, E> {
public:
  basic_result() = default;
  basic_result(E e) : err_(std::move(e)) {}  // NOLINT: implicit by design

  bool ok() const { return !err_.has_value(); }
  explicit operator bool() const { return ok(); }
  const E& err() const { return *err_; }

private:
  std::optional<E> err_;
};

}  // namespace moonmq::util

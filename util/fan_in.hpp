#pragma once
// Fan-in of answers that arrive on any thread (actor replies, peer answers,
// I/O completions): each answer changes a shared `State` under one mutex,
// and once the last of `parts` has, `done` gets the state, once, outside
// the lock. `done` may hold the last reference to the fan-in (a lambda that
// captured it): it is moved out before it runs, which breaks that cycle.
//
//   auto in = util::fan_in<std::vector<answer>>::make(n, std::vector<answer>(n),
//                                                     [](std::vector<answer>& all) { ... });
//   ... later, on any thread: in->add([&](std::vector<answer>& all) { all[i] = a; });

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

namespace moonmq::util {

template <class State>
class fan_in {
public:
  using done_fn = std::function<void(State&)>;

  /// A fan-in of `parts` answers starting from `initial`; with no parts,
  /// `done` runs at once, here.
  static std::shared_ptr<fan_in> make(std::size_t parts, State initial, done_fn done) {
    auto in = std::shared_ptr<fan_in>(new fan_in(parts, std::move(initial), std::move(done)));
    if (parts == 0)
      in->finish();
    return in;
  }

  /// One answer: `fill(State&)` runs under the lock; after the last part,
  /// `done` runs (outside it). Further calls change nothing.
  template <class Fill>
  void add(Fill&& fill) {
    std::unique_lock<std::mutex> lock{mtx_};
    if (left_ == 0)
      return;
    fill(state_);
    if (--left_ != 0)
      return;
    lock.unlock();
    finish();
  }

private:
  fan_in(std::size_t parts, State initial, done_fn done)
      : left_(parts), state_(std::move(initial)), done_(std::move(done)) {}

  void finish() {
    auto f = std::move(done_);
    done_ = nullptr;
    if (f)
      f(state_);
  }

  std::mutex mtx_;
  std::size_t left_;
  State state_;
  done_fn done_;
};

}  // namespace moonmq::util

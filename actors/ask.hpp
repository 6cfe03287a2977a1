#pragma once
// The HTTP → actor bridge (TOOLCHAIN.md): a short-lived actor sends one
// request with a timeout and hands the reply, or the error, to a callback.
// The callbacks run on a CAF thread and must not block; HTTP handlers pass a
// transport::responder, which posts the answer back to the connection.
// Include only from .cpp files (CAF templates).

#include <chrono>
#include <functional>
#include <utility>

#include <caf/all.hpp>

namespace moonmq {

namespace detail {
template <class Reply, class Handle, class... Ts>
void ask_actor(caf::event_based_actor* self, Handle dest, std::chrono::milliseconds timeout,
               std::function<void(Reply&)> ok, std::function<void(const caf::error&)> fail, Ts... xs) {
  self->request(dest, timeout, std::move(xs)...)
    .then([ok](Reply& r) { ok(r); }, [fail](caf::error& e) { fail(e); });
}
template <class R1, class R2, class Handle, class... Ts>
void ask_many_actor(caf::event_based_actor* self, Handle dest, std::chrono::milliseconds timeout,
                    std::function<void(R1&, R2&)> ok, std::function<void(const caf::error&)> fail, Ts... xs) {
  self->request(dest, timeout, std::move(xs)...)
    .then([ok](R1& a, R2& b) { ok(a, b); }, [fail](caf::error& e) { fail(e); });
}
}  // namespace detail

/// Sends `xs...` to `dest` and calls `ok(reply)` or `fail(error)` (timeout:
/// sec::request_timeout). Exactly one of them is called.
template <class Reply, class Handle, class... Ts>
void ask(caf::actor_system& sys, const Handle& dest, std::chrono::milliseconds timeout,
         std::function<void(Reply&)> ok, std::function<void(const caf::error&)> fail, Ts... xs) {
  sys.spawn(detail::ask_actor<Reply, Handle, Ts...>, dest, timeout, std::move(ok), std::move(fail),
            std::move(xs)...);
}

/// As ask, for a reply of two values.
template <class R1, class R2, class Handle, class... Ts>
void ask_many(caf::actor_system& sys, const Handle& dest, std::chrono::milliseconds timeout,
              std::function<void(R1&, R2&)> ok, std::function<void(const caf::error&)> fail, Ts... xs) {
  sys.spawn(detail::ask_many_actor<R1, R2, Handle, Ts...>, dest, timeout, std::move(ok), std::move(fail),
            std::move(xs)...);
}

}  // namespace moonmq

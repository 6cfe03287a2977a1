#include "actors/ordered_appends.hpp"

#include <memory>

#include <caf/all.hpp>

namespace moonmq {
namespace {

struct append_job {
  partition_actor dest;
  std::chrono::milliseconds timeout{0};
  std::string batch;
  bool durable = false;
  std::function<void(int64_t)> ok;
  std::function<void(const caf::error&)> fail;
};

}  // namespace
}  // namespace moonmq

// Local messages only (handed over within one process).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<moonmq::append_job>)

namespace moonmq {
namespace {

caf::behavior dispatcher_fn(caf::event_based_actor* self, caf::actor lifetime,
                            std::shared_ptr<std::atomic<bool>> stopped) {
  self->monitor(lifetime);
  self->set_down_handler([self, stopped](caf::down_msg&) {
    *stopped = true;  // before the mailbox closes: later appends fail at once
    self->quit();
  });
  return {
    [self](std::shared_ptr<append_job>& job) {
      self->request(job->dest, job->timeout, append_atom::value, std::move(job->batch), job->durable)
        .then([job](int64_t base) { job->ok(base); }, [job](caf::error& e) { job->fail(e); });
    },
  };
}

}  // namespace

ordered_appends::ordered_appends(caf::actor_system& sys, const caf::actor& lifetime)
    : dispatcher_(std::make_unique<caf::actor>(sys.spawn(dispatcher_fn, lifetime, stopped_))) {}

ordered_appends::~ordered_appends() {
  *stopped_ = true;
  caf::anon_send_exit(*dispatcher_, caf::exit_reason::user_shutdown);
}

void ordered_appends::append(const partition_actor& dest, std::chrono::milliseconds timeout, std::string batch,
                             bool durable, std::function<void(int64_t)> ok,
                             std::function<void(const caf::error&)> fail) const {
  if (*stopped_) {
    fail(caf::make_error(caf::sec::request_receiver_down));
    return;
  }
  auto job = std::make_shared<append_job>();
  job->dest = dest;
  job->timeout = timeout;
  job->batch = std::move(batch);
  job->durable = durable;
  job->ok = std::move(ok);
  job->fail = std::move(fail);
  caf::anon_send(*dispatcher_, std::move(job));
}

}  // namespace moonmq

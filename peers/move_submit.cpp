#include "peers/move_submit.hpp"

#include <cstdio>
#include <memory>
#include <random>

#include "util/clock.hpp"

namespace moonmq::transport {
namespace {

void attempt(const cluster_peer& peer, std::shared_ptr<const std::string> body, int64_t epoch,
             const std::string& controller, std::chrono::milliseconds timeout, int made, bool unsent,
             std::shared_ptr<std::function<void(move_submit_outcome)>> done) {
  call_peer_reply(peer, "POST", "/cluster/moves", *body, epoch, controller, timeout,
                  [peer, body, epoch, controller, timeout, made, unsent, done](peer_reply r) {
                    // Known unsent only while every exchange so far is.
                    const bool none_left = unsent && r.status == 0 && r.unsent;
                    if ((r.status == 0 || r.status >= 500) && made + 1 < move_submit_attempts) {
                      attempt(peer, body, epoch, controller, timeout, made + 1, none_left, done);
                      return;
                    }
                    (*done)(move_submit_outcome{r.status, std::move(r.body), std::move(r.error), made + 1, none_left});
                  });
}

}  // namespace

std::string new_submission_token(const std::string& prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char random[17];
  std::snprintf(random, sizeof random, "%016llx", static_cast<unsigned long long>(rng()));
  return prefix + "-" + std::to_string(util::wall_ms()) + "-" + random;
}

void submit_move(const cluster_peer& peer, cluster::move_request move, int64_t epoch, const std::string& controller,
                 std::chrono::milliseconds timeout, std::function<void(move_submit_outcome)> done) {
  if (move.submission.empty())
    move.submission = new_submission_token(controller.empty() ? std::string{"m"} : controller);
  attempt(peer, std::make_shared<const std::string>(cluster::to_json(move).dump()), epoch, controller, timeout, 0, true,
          std::make_shared<std::function<void(move_submit_outcome)>>(std::move(done)));
}

}  // namespace moonmq::transport

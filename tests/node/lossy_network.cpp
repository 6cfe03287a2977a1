#include "tests/node/lossy_network.hpp"

#include <algorithm>
#include <system_error>

#include <caf/logger.hpp>

namespace moonmq::test {

namespace {

/// A failed exchange; `unsent`: the request never reached the peer, as a
/// refused connection tells a real link (peer_result::unsent).
transport::peer_result failed(std::errc e, std::string why, bool unsent) {
  transport::peer_result r;
  r.error = std::make_error_code(e);
  r.error_message = std::move(why);
  r.attempts = 1;
  r.unsent = unsent;
  return r;
}

}  // namespace

/// One broker's link to one peer. Delayed work of the link sits in the
/// network's timer queue, tagged with the link, so that close() can fail it
/// at once: every callback runs exactly once, and none after close()
/// returned (the peer_link contract).
class lossy_network::link : public transport::peer_link, public std::enable_shared_from_this<link> {
public:
  link(lossy_network& net, uint64_t id, std::string from, std::string to, std::shared_ptr<transport::peer_link> real)
      : net_(net), id_(id), from_(std::move(from)), to_(std::move(to)), real_(std::move(real)) {}

  void request(transport::peer_request req, transport::peer_callback done) override {
    if (closed()) {  // at once, on the caller's thread, as a closed HTTP client fails
      done(failed(std::errc::operation_canceled, "link closed", true));
      return;
    }
    auto [what, delay] = net_.judge(from_, to_, req.method + " " + req.target);
    auto self = shared_from_this();
    switch (what) {
      case fate::cut:
        return answer(std::move(done), failed(std::errc::connection_refused, "cut off from " + to_, true), delay);
      case fate::drop_request:
        return answer(std::move(done), failed(std::errc::connection_refused, "request to " + to_ + " lost", true), delay);
      case fate::drop_answer:
      case fate::deliver:
        break;
    }
    bool lose_answer = what == fate::drop_answer;
    auto shared_done = std::make_shared<transport::peer_callback>(std::move(done));
    auto shared_req = std::make_shared<transport::peer_request>(std::move(req));
    auto send = [self, shared_req, shared_done, lose_answer, delay] {
      if (self->closed()) {
        (*shared_done)(failed(std::errc::operation_canceled, "link closed", true));
        return;
      }
      self->real_->request(std::move(*shared_req), [self, shared_done, lose_answer, delay](transport::peer_result r) {
        if (lose_answer)
          r = failed(std::errc::connection_reset, "answer from " + self->to_ + " lost", false);
        self->answer(std::move(*shared_done), std::move(r), delay);
      });
    };
    if (delay.count() == 0) {
      send();
      return;
    }
    net_.later(delay, id_, send, [shared_done] { (*shared_done)(failed(std::errc::operation_canceled, "link closed", true)); });
  }

  void close() override {
    {
      std::lock_guard<std::mutex> g{mtx_};
      closed_ = true;
    }
    net_.forget(id_);  // fails this link's queued work now, and any queued later
    real_->close();
  }
  int open_connections() const override { return real_->open_connections(); }
  int connections_opened() const override { return real_->connections_opened(); }

  bool closed() const {
    std::lock_guard<std::mutex> g{mtx_};
    return closed_;
  }

private:
  /// Hands `r` to `done` after `delay` (at once when 0).
  void answer(transport::peer_callback done, transport::peer_result r, std::chrono::milliseconds delay) {
    if (delay.count() == 0 || closed()) {  // none queued once close() began
      done(std::move(r));
      return;
    }
    auto shared_done = std::make_shared<transport::peer_callback>(std::move(done));
    auto result = std::make_shared<transport::peer_result>(std::move(r));
    net_.later(delay, id_, [shared_done, result] { (*shared_done)(std::move(*result)); },
               [shared_done] { (*shared_done)(failed(std::errc::operation_canceled, "link closed", false)); });
  }

  lossy_network& net_;
  uint64_t id_;
  std::string from_, to_;
  std::shared_ptr<transport::peer_link> real_;
  mutable std::mutex mtx_;
  bool closed_ = false;
};

lossy_network::lossy_network(uint64_t seed) : rng_(seed), timer_([this] { run_timer(); }) {}

lossy_network::~lossy_network() {
  {
    std::lock_guard<std::mutex> g{mtx_};
    stopping_ = true;
  }
  wake_.notify_all();
  timer_.join();
  for (auto& t : queue_)  // links never closed: their callbacks still run once
    t.cancel();
}

std::shared_ptr<transport::peer_link> lossy_network::wrap(const std::string& from, const std::string& to,
                                                          std::shared_ptr<transport::peer_link> real) {
  if (!real)
    return nullptr;
  uint64_t id;
  {
    std::lock_guard<std::mutex> g{mtx_};
    id = ++next_link_;
  }
  return std::make_shared<link>(*this, id, from, to, std::move(real));
}

void lossy_network::set_faults(network_faults f) {
  std::lock_guard<std::mutex> g{mtx_};
  faults_ = f;
}

void lossy_network::cut(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> g{mtx_};
  cuts_.insert({a, b});
  cuts_.insert({b, a});
}

void lossy_network::heal_cuts() {
  std::lock_guard<std::mutex> g{mtx_};
  cuts_.clear();
}

void lossy_network::heal() {
  std::lock_guard<std::mutex> g{mtx_};
  cuts_.clear();
  faults_ = {};
}

lossy_network::counts lossy_network::tally() const {
  std::lock_guard<std::mutex> g{mtx_};
  return counts_;
}

uint64_t lossy_network::draw(uint64_t n) {
  std::lock_guard<std::mutex> g{mtx_};
  return std::uniform_int_distribution<uint64_t>{0, n - 1}(rng_);
}

void lossy_network::lose_next(const std::string& from, const std::string& to, const std::string& target_part,
                              int count, bool answer, const std::string& after) {
  std::lock_guard<std::mutex> g{mtx_};
  rules_.push_back(
    {from, to, target_part, count, answer ? fate::drop_answer : fate::drop_request, after, after.empty(), {}});
}

void lossy_network::hold_next(const std::string& from, const std::string& to, const std::string& target_part,
                              int count, std::chrono::milliseconds hold) {
  std::lock_guard<std::mutex> g{mtx_};
  rules_.push_back({from, to, target_part, count, fate::deliver, {}, true, hold});
}

std::pair<lossy_network::fate, std::chrono::milliseconds> lossy_network::judge(const std::string& from,
                                                                              const std::string& to,
                                                                              const std::string& target) {
  std::lock_guard<std::mutex> g{mtx_};
  ++counts_.sent;
  std::uniform_real_distribution<double> coin{0.0, 1.0};
  auto delay = std::chrono::milliseconds{
    faults_.max_delay.count() > 0 ? std::uniform_int_distribution<int64_t>{0, faults_.max_delay.count()}(rng_) : 0};
  if (cuts_.count({from, to})) {
    ++counts_.cut;
    return {fate::cut, delay};
  }
  auto on_link = [&](const loss_rule& r) { return r.from == from && r.to == to; };
  loss_rule* hit = nullptr;
  for (auto& r : rules_)
    if (r.count > 0 && r.armed && on_link(r) && target.find(r.target_part) != std::string::npos) {
      hit = &r;
      break;
    }
  for (auto& r : rules_)  // armed by this request: the ones after it
    if (!r.armed && on_link(r) && target.find(r.after) != std::string::npos)
      r.armed = true;
  if (hit) {
    --hit->count;
    ++counts_.targeted;
    if (hit->what == fate::drop_request)
      ++counts_.dropped_requests;
    else if (hit->what == fate::drop_answer)
      ++counts_.dropped_answers;
    return {hit->what, delay + hit->hold};
  }
  double draw_request = coin(rng_), draw_answer = coin(rng_);
  if (draw_request < faults_.drop_request) {
    ++counts_.dropped_requests;
    return {fate::drop_request, delay};
  }
  if (draw_answer < faults_.drop_answer) {
    ++counts_.dropped_answers;
    return {fate::drop_answer, delay};
  }
  return {fate::deliver, delay};
}

void lossy_network::later(std::chrono::milliseconds delay, uint64_t owner, std::function<void()> fn,
                          std::function<void()> cancel) {
  {
    std::unique_lock<std::mutex> g{mtx_};
    if (closed_links_.count(owner)) {  // closed meanwhile: nothing is queued after close()
      g.unlock();
      cancel();
      return;
    }
    queue_.push_back({std::chrono::steady_clock::now() + delay, next_order_++, owner, std::move(fn), std::move(cancel)});
    std::push_heap(queue_.begin(), queue_.end(), later_first);
  }
  wake_.notify_all();
}

void lossy_network::forget(uint64_t owner) {
  std::vector<timed> mine;
  {
    std::unique_lock<std::mutex> g{mtx_};
    closed_links_.insert(owner);
    // The timer may be running one of this link's items right now: wait for it.
    wake_.wait(g, [&] { return running_ != owner; });
    auto split = std::partition(queue_.begin(), queue_.end(), [&](const timed& t) { return t.owner != owner; });
    mine.assign(std::make_move_iterator(split), std::make_move_iterator(queue_.end()));
    queue_.erase(split, queue_.end());
    std::make_heap(queue_.begin(), queue_.end(), later_first);
  }
  for (auto& t : mine)
    t.cancel();
}

void lossy_network::run_timer() {
  std::unique_lock<std::mutex> g{mtx_};
  for (;;) {
    if (stopping_)
      return;
    if (queue_.empty()) {
      wake_.wait(g);
      continue;
    }
    auto at = queue_.front().at;
    if (std::chrono::steady_clock::now() < at) {
      wake_.wait_until(g, at);
      continue;
    }
    std::pop_heap(queue_.begin(), queue_.end(), later_first);
    auto item = std::move(queue_.back());
    queue_.pop_back();
    running_ = item.owner;
    g.unlock();
    item.fn();
    // A callback that spawned or sent made this thread hold that broker's
    // CAF logger, and ~actor_system waits for its logger to go: let it go.
    caf::logger::set_current_actor_system(nullptr);
    g.lock();
    running_ = 0;
    wake_.notify_all();
  }
}

}  // namespace moonmq::test

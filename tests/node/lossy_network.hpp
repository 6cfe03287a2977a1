#pragma once
// A seeded faulty network between brokers running in one process
// (node_hooks::wrap_peer_link): every request a broker sends a peer goes
// through it and may be delayed, lost before it arrives, or have its answer
// lost after the peer acted on it; a pair of brokers can be cut off from
// each other and healed. The faults are drawn from one seeded generator, so
// a failing seed names the same fault schedule (the brokers' own timing
// still varies from run to run: real threads, real clocks).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "peers/peer_link.hpp"

namespace moonmq::test {

/// The odds of each fault, per request.
struct network_faults {
  double drop_request = 0;  ///< the request never arrives (the sender sees a refused connection: known unsent)
  double drop_answer = 0;   ///< the peer acts on it, the answer is lost (a connection reset: it may have acted)
  std::chrono::milliseconds max_delay{0};  ///< each request and answer waits a uniform [0, max_delay]
};

class lossy_network {
public:
  explicit lossy_network(uint64_t seed);
  ~lossy_network();
  lossy_network(const lossy_network&) = delete;
  lossy_network& operator=(const lossy_network&) = delete;

  /// The link `from` uses to reach `to`, wrapping the real one.
  std::shared_ptr<transport::peer_link> wrap(const std::string& from, const std::string& to,
                                             std::shared_ptr<transport::peer_link> real);

  void set_faults(network_faults f);
  /// Cuts `a` and `b` off from each other (both directions) until heal().
  void cut(const std::string& a, const std::string& b);
  /// Loses the next `count` requests from `from` to `to` whose method and
  /// target ("POST /cluster/moves") hold `target_part` (before they
  /// arrive), or their answers (after the peer acted) when `answer`. With
  /// `after`, only requests sent after one on that link whose method and
  /// target hold `after` (a later step of a move: "sync=true" for the
  /// drain's appends). Rules apply in the order given, each once its
  /// predecessors for the same link and target are used up.
  void lose_next(const std::string& from, const std::string& to, const std::string& target_part, int count,
                 bool answer, const std::string& after = {});
  /// Delivers the next `count` such requests `hold` later than the faults
  /// would (a slow step of a move: time for a producer to write a tail the
  /// drain must send). Counted as targeted; rules apply in the order given.
  void hold_next(const std::string& from, const std::string& to, const std::string& target_part, int count,
                 std::chrono::milliseconds hold);
  /// Ends every cut (the faults stay).
  void heal_cuts();
  /// Ends every cut and fault.
  void heal();

  /// Requests sent, lost before arrival, answers lost, requests refused by a cut.
  struct counts {
    int64_t sent = 0, dropped_requests = 0, dropped_answers = 0, cut = 0;
    int64_t targeted = 0;  ///< lost by a lose_next rule (also counted above)
  };
  counts tally() const;

  /// A uniform draw in [0, n) from the network's generator (for a test's
  /// own seeded choices).
  uint64_t draw(uint64_t n);

private:
  class link;
  enum class fate { deliver, drop_request, drop_answer, cut };
  /// The fate of one request from `from` to `to` for `target` (its method,
  /// a space and its target), and its delay.
  std::pair<fate, std::chrono::milliseconds> judge(const std::string& from, const std::string& to,
                                                   const std::string& target);
  /// Runs `fn` after `delay` on the network's timer thread; `cancel`
  /// instead when link `owner` closes first or the network goes, and at
  /// once (on the calling thread) when it has closed already.
  void later(std::chrono::milliseconds delay, uint64_t owner, std::function<void()> fn, std::function<void()> cancel);
  /// Marks link `owner` closed and cancels its queued items now (after the
  /// one the timer may be running for it).
  void forget(uint64_t owner);
  void run_timer();

  mutable std::mutex mtx_;
  std::mt19937_64 rng_;
  network_faults faults_;
  std::set<std::pair<std::string, std::string>> cuts_;
  struct loss_rule {
    std::string from, to, target_part;
    int count;
    fate what;
    std::string after;  ///< "": armed from the start
    bool armed;
    std::chrono::milliseconds hold;  ///< extra delay of a delivered request (hold_next)
  };
  std::vector<loss_rule> rules_;
  counts counts_;
  struct timed {
    std::chrono::steady_clock::time_point at;
    uint64_t order;
    uint64_t owner;
    std::function<void()> fn;
    std::function<void()> cancel;
  };
  /// The heap order: the earliest (then the first queued) on top.
  static bool later_first(const timed& a, const timed& b) { return a.at != b.at ? a.at > b.at : a.order > b.order; }
  uint64_t running_ = 0;           ///< the link whose item the timer runs now (0: none)
  uint64_t next_link_ = 0;         ///< the last link id given (ids start at 1)
  std::set<uint64_t> closed_links_;
  std::vector<timed> queue_;  ///< a heap by (at, order)
  uint64_t next_order_ = 0;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread timer_;
};

}  // namespace moonmq::test

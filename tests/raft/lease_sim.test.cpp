// The broker lease driven by real raft_cores (raft/core_lease.hpp, the glue
// the raft_node actor uses) on a lossless in-process cluster with a logical
// clock: one tick is 100 ms, each message hop 1 ms. Checks the claims of
// docs/shared-storage.md "The lease" end to end: an isolated broker's lease
// ends within LeaseMs of the last leader message it received, and an
// isolated leader's within LeaseMs of its isolation.

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>

#include "cluster/lease.hpp"
#include "core_fixture.hpp"
#include "raft/core_lease.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;
using moonmq::cluster::broker_lease;
using std::chrono::milliseconds;

namespace {

constexpr int64_t tick_ms = 100;
constexpr int64_t lease_ms = 500;  // above the heartbeat (2 ticks), below the election timeout (10-20 ticks)

class lease_cluster {
 public:
  explicit lease_cluster(std::vector<const char*> members) {
    for (auto* m : members) {
      auto c = config(m, members);
      c.seed = 11 + nodes_.size() * 31;
      nodes_.emplace(m, node{open_core(c)});
    }
  }

  broker_lease::time_point now() const { return broker_lease::time_point{milliseconds(now_ms_)}; }
  int64_t now_ms() const { return now_ms_; }
  raft_core& core(const std::string& n) { return nodes_.at(n).core; }
  bool valid(const std::string& n) { return nodes_.at(n).lease.valid(now()); }
  /// Time of the last append_request node `n` accepted from a leader (-1 = none).
  int64_t last_heard_ms(const std::string& n) { return last_heard_.count(n) ? last_heard_.at(n) : -1; }
  void isolate(const std::string& n) { isolated_.insert(n); }

  void tick() {
    ++ticks_;
    now_ms_ = ticks_ * tick_ms;
    for (auto& [name, n] : nodes_) {
      n.core.tick();
      update(n);
    }
    settle();
  }

  std::optional<std::string> leader() {
    std::optional<std::string> best;
    term best_term;
    for (auto& [name, n] : nodes_)
      if (n.core.current_role() == role::leader && n.core.current_term() >= best_term) {
        best = name;
        best_term = n.core.current_term();
      }
    return best;
  }

 private:
  struct node {
    explicit node(raft_core c) : core(std::move(c)) {}
    raft_core core;
    persisted_state disk;
    broker_lease lease{milliseconds(lease_ms)};
  };

  void update(node& n) { n.lease.update(lease_position(n.core, n.core.applied_index())); }

  void settle() {
    for (int round = 0; round < 1000; ++round) {
      std::vector<message> out;
      for (auto& [name, n] : nodes_) {
        if (!n.core.has_ready())
          continue;
        ready_batch rd = n.core.ready();
        (void)apply_ready(n.disk, rd);
        n.core.advance();
        for (auto& m : rd.messages) {
          if (auto seq = request_seq(m))
            n.lease.request_sent(seq, now());
          out.push_back(std::move(m));
        }
        update(n);  // applied: renews what waited for it
      }
      if (out.empty())
        return;
      now_ms_ += 1;  // one hop
      for (auto& m : out) {
        if (isolated_.count(m.from.str()) || isolated_.count(m.to.str()))
          continue;
        auto& dst = nodes_.at(m.to.str());
        auto before = dst.core.last_leader_contact().count;
        dst.core.step(m);
        update(dst);
        note_leader_contact(dst.core, before, dst.lease, now());
        if (dst.core.last_leader_contact().count != before)
          last_heard_[m.to.str()] = now_ms_;
      }
    }
  }

  std::map<std::string, node> nodes_;
  std::set<std::string> isolated_;
  std::map<std::string, int64_t> last_heard_;
  int64_t ticks_ = 0;
  int64_t now_ms_ = 0;
};

/// Ticks until a leader exists and every broker holds a valid lease.
std::string settle_with_leases(lease_cluster& c, const std::vector<std::string>& names) {
  for (int i = 0; i < 300; ++i) {
    c.tick();
    auto l = c.leader();
    bool all = l.has_value();
    for (const auto& n : names)
      all = all && c.valid(n);
    if (all)
      return *l;
  }
  FAIL("no leader with every lease valid within 300 ticks");
  return {};
}

}  // namespace

TEST_CASE("an isolated follower's lease ends within LeaseMs of the last leader message it received",
          "[raft][lease][simulation]") {
  std::vector<std::string> names{"b1", "b2", "b3"};
  lease_cluster c({"b1", "b2", "b3"});
  auto leader = settle_with_leases(c, names);
  for (int i = 0; i < 10; ++i)  // leases keep being renewed in steady state
    c.tick();
  for (const auto& n : names)
    REQUIRE(c.valid(n));
  std::string f = leader == "b1" ? "b2" : "b1";
  c.isolate(f);
  int64_t last = c.last_heard_ms(f);
  REQUIRE(last > 0);
  bool expired = false;
  while (c.now_ms() < last + lease_ms + 3 * tick_ms) {
    c.tick();
    if (c.now_ms() >= last + lease_ms) {
      CHECK_FALSE(c.valid(f));  // never valid LeaseMs after the last receipt
      expired = true;
    }
    // The rest of the cluster keeps its leases: a majority still answers.
    for (const auto& n : names)
      if (n != f)
        CHECK(c.valid(n));
  }
  CHECK(expired);
  CHECK(c.last_heard_ms(f) == last);  // nothing reached it meanwhile
}

TEST_CASE("an isolated leader's lease ends within LeaseMs of its isolation, and a new leader's lease follows",
          "[raft][lease][simulation]") {
  std::vector<std::string> names{"b1", "b2", "b3"};
  lease_cluster c({"b1", "b2", "b3"});
  auto leader = settle_with_leases(c, names);
  for (int i = 0; i < 10; ++i)
    c.tick();
  REQUIRE(c.valid(leader));
  c.isolate(leader);
  int64_t cut = c.now_ms();
  // Requests sent after `cut` are never answered: no renewal counts from later.
  std::optional<std::string> next;
  for (int i = 0; i < 100; ++i) {
    c.tick();
    if (c.now_ms() >= cut + lease_ms)
      CHECK_FALSE(c.valid(leader));
    auto l = c.leader();
    if (l && *l != leader && c.valid(*l)) {
      next = l;
      break;
    }
  }
  REQUIRE(next);
  CHECK_FALSE(c.valid(leader));
  CHECK(c.core(*next).committed_in_term());
}

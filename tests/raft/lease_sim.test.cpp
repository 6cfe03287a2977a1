// The broker lease driven by real raft_cores (raft/core_lease.hpp, the glue
// the raft_node actor uses) on a lossless in-process cluster with a logical
// clock: one tick is 100 ms, each message hop 1 ms. Checks the claims of
// docs/shared-storage.md "The lease" end to end: an isolated broker's lease
// ends within LeaseMs of the last leader message it received, an isolated
// leader's within LeaseMs of its isolation, and a frozen broker reading a
// burst of old leader messages gets no lease from them. After every tick
// and every burst it checks the bound the proof needs: a follower's lease
// never ends later than LeaseMs after the current leader last received an
// answer from it.

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
  /// As if the process got SIGSTOP: `n` neither ticks nor reads; messages
  /// to it wait (in its socket) until thaw().
  void freeze(const std::string& n) { frozen_.insert(n); }
  /// SIGCONT: `n` reads every waiting message at once, now, applies what
  /// they committed and sends its answers (they arrive in the next
  /// settle()). Returns how many leader messages it read.
  int thaw(const std::string& n) {
    frozen_.erase(n);
    auto held = std::move(held_[n]);
    held_.erase(n);
    auto& dst = nodes_.at(n);
    int contacts = 0;
    for (auto& m : held) {
      auto before = dst.core.last_leader_contact().count;
      deliver(m);
      contacts += dst.core.last_leader_contact().count != before;
    }
    while (dst.core.has_ready())
      flush(dst, in_flight_);
    check_bound();
    return contacts;
  }

  void tick() {
    ++ticks_;
    now_ms_ = ticks_ * tick_ms;
    for (auto& [name, n] : nodes_) {
      if (frozen_.count(name))
        continue;
      n.core.tick();
      update(n);
    }
    settle();
    check_bound();
  }

  /// The proof's step 1: a follower's lease ends no later than LeaseMs
  /// after the leader of its term last received an answer from it.
  void check_bound() {
    for (auto& [name, n] : nodes_) {
      if (n.lease.role() != moonmq::cluster::lease_role::follower || n.lease.deadline() == broker_lease::time_point::min())
        continue;
      auto it = answered_.find(name);
      INFO("broker " << name << " at " << now_ms_ << " ms");
      REQUIRE(it != answered_.end());
      REQUIRE(it->second.first == n.lease.term());
      CHECK(n.lease.deadline() <= broker_lease::time_point{milliseconds(it->second.second + lease_ms)});
    }
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

  /// Persists, applies and sends one ready batch of `n` (answers stamped
  /// and requests recorded at the send time, as raft_node's send() does).
  void flush(node& n, std::vector<message>& out) {
    ready_batch rd = n.core.ready();
    (void)apply_ready(n.disk, rd);
    n.core.advance();
    for (auto& m : rd.messages) {
      if (auto seq = request_seq(m))
        n.lease.request_sent(seq, now());
      stamp_answer(m, n.lease, now());
      out.push_back(std::move(m));
    }
    update(n);  // applied: renews what waited for it
  }

  /// Steps `m` into its destination now (the driver loop of core_lease.hpp).
  void deliver(const message& m) {
    auto& dst = nodes_.at(m.to.str());
    bool to_leader = dst.core.current_role() == role::leader && m.msg_term == dst.core.current_term();
    bool answer = std::holds_alternative<append_response>(m.body) || std::holds_alternative<snapshot_response>(m.body);
    auto before = dst.core.last_leader_contact().count;
    dst.core.step(m);
    update(dst);
    note_leader_contact(dst.core, before, dst.lease);
    if (dst.core.last_leader_contact().count != before)
      last_heard_[m.to.str()] = now_ms_;
    if (to_leader && answer)
      answered_[m.from.str()] = {m.msg_term.value, now_ms_};
  }

  void settle() {
    for (int round = 0; round < 1000; ++round) {
      std::vector<message> out = std::move(in_flight_);
      in_flight_.clear();
      for (auto& [name, n] : nodes_)
        if (!frozen_.count(name) && n.core.has_ready())
          flush(n, out);
      if (out.empty())
        return;
      now_ms_ += 1;  // one hop
      for (auto& m : out) {
        if (isolated_.count(m.from.str()) || isolated_.count(m.to.str()))
          continue;
        if (frozen_.count(m.to.str())) {
          held_[m.to.str()].push_back(std::move(m));
          continue;
        }
        deliver(m);
      }
    }
  }

  std::map<std::string, node> nodes_;
  std::set<std::string> isolated_;
  std::map<std::string, int64_t> last_heard_;
  std::set<std::string> frozen_;
  std::map<std::string, std::vector<message>> held_;
  std::vector<message> in_flight_;  ///< sent by a thawed broker, delivered by the next settle()
  /// Per broker: the term and time a leader of that term last received an answer from it.
  std::map<std::string, std::pair<uint64_t, int64_t>> answered_;
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

TEST_CASE("a frozen follower reading a burst of old leader messages gets no lease until a fresh round trip",
          "[raft][lease][simulation]") {
  // SIGSTOP: the leader's heartbeats queue in the follower's socket; the
  // controller hears nothing from it. SIGCONT: it reads them all at once.
  // They echo the answer it sent before the freeze, so they renew nothing
  // (renewing from their receipt would give it LeaseMs from now, after
  // its partitions may have moved).
  std::vector<std::string> names{"b1", "b2", "b3"};
  lease_cluster c({"b1", "b2", "b3"});
  auto leader = settle_with_leases(c, names);
  for (int i = 0; i < 10; ++i)
    c.tick();
  std::string f = leader == "b1" ? "b2" : "b1";
  REQUIRE(c.valid(f));
  c.freeze(f);
  for (int i = 0; i < 30; ++i)  // 3 s: well past LeaseMs, and no election (a majority answers)
    c.tick();
  REQUIRE(c.leader() == leader);
  CHECK_FALSE(c.valid(f));
  auto applied_before = c.core(f).applied_index();
  int read = c.thaw(f);
  CHECK(read >= 10);  // the queued heartbeats, accepted from the leader of its term
  CHECK(c.core(f).applied_index() >= applied_before);
  CHECK(c.core(f).last_leader_contact().commit_in_term);
  CHECK_FALSE(c.valid(f));  // nothing in the burst renews it
  // Its answers reach the leader, the next heartbeat echoes one: renewed.
  bool renewed = false;
  for (int i = 0; i < 5 && !renewed; ++i) {
    c.tick();
    renewed = c.valid(f);
  }
  CHECK(renewed);
}

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "cluster/lease.hpp"
#include "cluster/lease_gate.hpp"

using namespace moonmq::cluster;
using std::chrono::milliseconds;
using time_point = broker_lease::time_point;

namespace {

/// An injected clock: milliseconds since an arbitrary origin.
time_point at_ms(int64_t ms) { return time_point{milliseconds(ms)}; }

raft_position follower(uint64_t term, uint64_t applied) {
  raft_position p;
  p.term = term;
  p.role = lease_role::follower;
  p.applied = applied;
  return p;
}

raft_position leader(uint64_t term, uint64_t quorum_seq, bool committed_in_term = true) {
  raft_position p;
  p.term = term;
  p.role = lease_role::leader;
  p.applied = 10;
  p.committed_in_term = committed_in_term;
  p.quorum_seq = quorum_seq;
  return p;
}

}  // namespace

TEST_CASE("a new lease is not valid", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  CHECK(l.deadline() == time_point::min());
  CHECK_FALSE(l.valid(at_ms(0)));
  l.update(follower(1, 0));
  CHECK_FALSE(l.valid(at_ms(0)));
}

TEST_CASE("a follower's lease counts from its echoed answer's send time, not from receipt or apply",
          "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(follower(2, 5));
  l.answer_sent(at_ms(1000));
  // The leader's message echoing that answer is received at 1400 ms carrying
  // commit 8, which is applied only at 1700 ms.
  l.heard_from_leader(2, 8, true, at_ms(1000));
  CHECK_FALSE(l.valid(at_ms(1401)));  // entries 6..8 are not applied yet
  l.update(follower(2, 8));           // the driver applies them at 1700 ms
  CHECK(l.deadline() == at_ms(4000));
  CHECK(l.valid(at_ms(3999)));
  CHECK_FALSE(l.valid(at_ms(4000)));  // expired LeaseMs after the answer was sent
}

TEST_CASE("a leader message received long after its echo's stamp gives a lease that may be over already",
          "[cluster][lease]") {
  // A follower frozen (SIGSTOP) for 10 s reads a heartbeat queued in its
  // socket: it echoes the answer sent before the freeze. The lease is that
  // answer's send time + LeaseMs, over long ago, however recent the receipt.
  broker_lease l{milliseconds(3000)};
  l.update(follower(2, 9));
  l.answer_sent(at_ms(1000));
  l.heard_from_leader(2, 9, true, at_ms(1000));  // processed at 11000 ms
  CHECK(l.deadline() == at_ms(4000));
  CHECK_FALSE(l.valid(at_ms(11000)));
  // Answers sent after thawing renew only once the leader echoes one back.
  l.answer_sent(at_ms(11001));
  l.heard_from_leader(2, 9, true, at_ms(1000));  // the burst's next stale heartbeat
  CHECK_FALSE(l.valid(at_ms(11002)));
  l.heard_from_leader(2, 9, true, at_ms(11001));  // a fresh round trip
  CHECK(l.deadline() == at_ms(14001));
}

TEST_CASE("an echo this follower never sent renews nothing", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(follower(2, 9));
  l.answer_sent(at_ms(1000));
  l.heard_from_leader(2, 9, true, at_ms(999));   // not a stamp of ours
  l.heard_from_leader(2, 9, true, at_ms(5000));  // from the future (another life of the process)
  l.heard_from_leader(2, 9, true, time_point{});  // none
  CHECK(l.deadline() == time_point::min());
  // Stamps are kept per term: a new term forgets them.
  l.update(follower(3, 9));
  l.heard_from_leader(3, 9, true, at_ms(1000));
  CHECK(l.deadline() == time_point::min());
}

TEST_CASE("a follower records its answers only while it follows", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  raft_position p = follower(2, 9);
  p.role = lease_role::other;
  l.update(p);
  l.answer_sent(at_ms(1000));
  l.update(follower(2, 9));
  l.heard_from_leader(2, 9, true, at_ms(1000));
  CHECK(l.deadline() == time_point::min());
}

TEST_CASE("a follower's lease waits for every entry up to the carried commit index", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(follower(2, 5));
  l.answer_sent(at_ms(1000));
  l.heard_from_leader(2, 9, true, at_ms(1000));
  l.update(follower(2, 8));  // one entry short
  CHECK_FALSE(l.valid(at_ms(1500)));
  l.update(follower(2, 9));
  CHECK(l.deadline() == at_ms(4000));
}

TEST_CASE("a follower renews at once when the carried commit index is already applied", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(follower(2, 9));
  l.answer_sent(at_ms(1000));
  l.answer_sent(at_ms(2000));
  l.heard_from_leader(2, 9, true, at_ms(1000));
  CHECK(l.deadline() == at_ms(4000));
  l.heard_from_leader(2, 7, true, at_ms(2000));  // a delayed heartbeat echoing a later answer
  CHECK(l.deadline() == at_ms(5000));
}

TEST_CASE("a message whose commit index is not of the leader's term renews nothing", "[cluster][lease]") {
  // A new leader's commit index may lag entries its predecessor committed:
  // until it commits one of its own term, its messages prove nothing about
  // this broker's image.
  broker_lease l{milliseconds(3000)};
  l.update(follower(3, 9));
  l.answer_sent(at_ms(1000));
  l.answer_sent(at_ms(1200));
  l.heard_from_leader(3, 7, false, at_ms(1000));
  CHECK_FALSE(l.valid(at_ms(1000)));
  l.heard_from_leader(3, 10, true, at_ms(1200));
  l.update(follower(3, 10));
  CHECK(l.deadline() == at_ms(4200));
}

TEST_CASE("a later echo needing less applied replaces earlier ones and an older echo needing more is dropped",
          "[cluster][lease]") {
  broker_lease l{milliseconds(1000)};
  l.update(follower(2, 0));
  for (int t : {100, 200, 300})
    l.answer_sent(at_ms(t));
  l.heard_from_leader(2, 10, true, at_ms(100));
  l.heard_from_leader(2, 12, true, at_ms(200));
  l.heard_from_leader(2, 11, true, at_ms(300));  // replaces 12 (needs less, renews more)
  l.heard_from_leader(2, 13, true, at_ms(200));  // beaten by 11: needs more, renews less
  l.update(follower(2, 10));
  CHECK(l.deadline() == at_ms(1100));
  l.update(follower(2, 11));
  CHECK(l.deadline() == at_ms(1300));
  l.update(follower(2, 13));
  CHECK(l.deadline() == at_ms(1300));  // nothing left that needs 12 or 13
}

TEST_CASE("an older echo needing less applied waits beside a newer one needing more", "[cluster][lease]") {
  broker_lease l{milliseconds(1000)};
  l.update(follower(2, 0));
  l.answer_sent(at_ms(100));
  l.answer_sent(at_ms(300));
  l.heard_from_leader(2, 12, true, at_ms(300));
  l.heard_from_leader(2, 10, true, at_ms(100));  // overtaken answer echoed late
  l.update(follower(2, 10));
  CHECK(l.deadline() == at_ms(1100));
  l.update(follower(2, 12));
  CHECK(l.deadline() == at_ms(1300));
}

TEST_CASE("renewals never shorten the lease", "[cluster][lease]") {
  broker_lease l{milliseconds(1000)};
  l.update(follower(2, 10));
  l.answer_sent(at_ms(300));
  l.answer_sent(at_ms(500));
  l.heard_from_leader(2, 10, true, at_ms(500));
  l.heard_from_leader(2, 10, true, at_ms(300));  // stepped later, echoes an earlier answer
  CHECK(l.deadline() == at_ms(1500));
}

TEST_CASE("a message of another term, or heard without a known leader, renews nothing", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(follower(2, 10));
  l.answer_sent(at_ms(1000));
  l.heard_from_leader(1, 10, true, at_ms(1000));
  CHECK_FALSE(l.valid(at_ms(1000)));
  raft_position p = follower(2, 10);
  p.role = lease_role::other;
  l.update(p);
  l.heard_from_leader(2, 10, true, at_ms(1000));
  CHECK_FALSE(l.valid(at_ms(1000)));
}

TEST_CASE("a term change ends a follower's lease at once", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(follower(2, 10));
  l.answer_sent(at_ms(1000));
  l.answer_sent(at_ms(1400));
  l.heard_from_leader(2, 10, true, at_ms(1000));
  REQUIRE(l.valid(at_ms(1500)));
  l.heard_from_leader(2, 12, true, at_ms(1400));  // pending, waiting for apply
  l.update(follower(3, 12));
  CHECK_FALSE(l.valid(at_ms(1500)));
  // The message of term 2 is forgotten: applying 12 in term 3 renews nothing.
  CHECK(l.deadline() == time_point::min());
  // The new leader renews it, from an answer sent to it.
  l.answer_sent(at_ms(1600));
  l.heard_from_leader(3, 12, true, at_ms(1600));
  CHECK(l.deadline() == at_ms(4600));
}

TEST_CASE("a follower that starts campaigning loses its lease", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(follower(2, 10));
  l.answer_sent(at_ms(1000));
  l.heard_from_leader(2, 10, true, at_ms(1000));
  REQUIRE(l.valid(at_ms(1001)));
  raft_position p = follower(2, 10);
  p.role = lease_role::other;  // pre-candidate: same term, no leader
  l.update(p);
  CHECK_FALSE(l.valid(at_ms(1001)));
}

TEST_CASE("the leader's lease counts from the send time of the newest request a majority answered",
          "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(leader(4, 0));
  l.request_sent(1, at_ms(100));
  l.request_sent(2, at_ms(100));
  l.request_sent(3, at_ms(600));
  l.request_sent(4, at_ms(600));
  CHECK_FALSE(l.valid(at_ms(700)));  // no majority answered yet
  l.update(leader(4, 2));            // answered at, say, 650 ms: counts from 100
  CHECK(l.deadline() == at_ms(3100));
  l.update(leader(4, 4));
  CHECK(l.deadline() == at_ms(3600));
  CHECK_FALSE(l.valid(at_ms(3600)));
}

TEST_CASE("an answered request whose send time was not recorded maps to an earlier one", "[cluster][lease]") {
  broker_lease l{milliseconds(1000)};
  l.update(leader(4, 0));
  l.request_sent(10, at_ms(100));
  l.request_sent(20, at_ms(500));
  l.update(leader(4, 15));  // 15 was never handed to the transport here: 10's time is a lower bound
  CHECK(l.deadline() == at_ms(1100));
  broker_lease m{milliseconds(1000)};
  m.update(leader(4, 0));
  m.request_sent(10, at_ms(100));
  m.update(leader(4, 5));  // older than anything recorded: no renewal
  CHECK_FALSE(m.valid(at_ms(100)));
}

TEST_CASE("the leader renews only once it has committed an entry of its term", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(leader(5, 0, false));
  l.request_sent(1, at_ms(100));
  l.update(leader(5, 1, false));
  CHECK_FALSE(l.valid(at_ms(200)));
  l.request_sent(2, at_ms(300));
  l.update(leader(5, 2, true));
  CHECK(l.deadline() == at_ms(3300));
}

TEST_CASE("a leader alone is valid while it leads, and losing leadership ends its lease", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  raft_position p = leader(1, 0);
  p.alone = true;
  l.update(p);
  CHECK(l.deadline() == time_point::max());
  CHECK(l.valid(at_ms(1000000000)));
  l.update(follower(1, 10));  // stepped down in the same term
  CHECK_FALSE(l.valid(at_ms(0)));
}

TEST_CASE("stepping down ends the leader's lease at once and forgets its requests", "[cluster][lease]") {
  broker_lease l{milliseconds(3000)};
  l.update(leader(4, 0));
  l.request_sent(1, at_ms(100));
  l.update(leader(4, 1));
  REQUIRE(l.valid(at_ms(200)));
  raft_position p = leader(4, 1);
  p.role = lease_role::other;  // check-quorum stepped it down
  l.update(p);
  CHECK_FALSE(l.valid(at_ms(200)));
  l.update(leader(6, 1));  // leader again in a later term: request 1 was of term 4
  CHECK_FALSE(l.valid(at_ms(200)));
}

TEST_CASE("a follower ignores request send times and a leader ignores leader messages", "[cluster][lease]") {
  broker_lease l{milliseconds(1000)};
  l.update(follower(2, 10));
  l.request_sent(1, at_ms(100));
  l.update(leader(2, 1));  // role change: forgets anything anyway
  CHECK_FALSE(l.valid(at_ms(100)));
  l.heard_from_leader(2, 1, true, at_ms(100));
  CHECK_FALSE(l.valid(at_ms(100)));
}

TEST_CASE("end() ends the lease", "[cluster][lease]") {
  broker_lease l{milliseconds(1000)};
  l.update(follower(2, 10));
  l.answer_sent(at_ms(100));
  l.heard_from_leader(2, 10, true, at_ms(100));
  REQUIRE(l.valid(at_ms(100)));
  l.end();
  CHECK_FALSE(l.valid(at_ms(100)));
}

TEST_CASE("the gate publishes the deadline to readers on other threads", "[cluster][lease]") {
  lease_gate g;
  auto now = lease_gate::clock::now();
  CHECK_FALSE(g.valid(now));
  CHECK(g.remaining_ms(now) == 0);
  g.publish(now + milliseconds(1500));
  CHECK(g.valid(now));
  CHECK(g.remaining_ms(now) == 1500);
  CHECK(g.remaining_ms(now + milliseconds(1499) + std::chrono::microseconds(1)) == 0);
  CHECK_FALSE(g.valid(now + milliseconds(1500)));
  g.publish(lease_gate::clock::time_point::max());
  CHECK(g.deadline_ns() == lease_gate::unbounded);
  CHECK(g.valid_now());
  CHECK_FALSE(g.remaining_now().has_value());
  g.publish(lease_gate::clock::time_point::min());
  CHECK(g.deadline_ns() == lease_gate::none);
  bool seen = true;
  std::thread reader([&] { seen = g.valid_now(); });
  reader.join();
  CHECK_FALSE(seen);
  g.publish(lease_gate::clock::now() + std::chrono::hours(1));
  std::thread reader2([&] { seen = g.valid_now(); });
  reader2.join();
  CHECK(seen);
}

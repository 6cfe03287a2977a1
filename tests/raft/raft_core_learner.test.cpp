// raft_core learners: a broker that is not a voter joins by a register entry,
// receives the log (entries or a snapshot), follows leader changes, never
// campaigns and never counts towards commit or check-quorum.

#include <catch2/catch.hpp>

#include "core_fixture.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;

namespace {

broker_entry registration(const char* b) {
  broker_entry e{id(b), broker_change::register_broker, {}};
  e.endpoints.cluster = std::string("127.0.0.1:71") + b;
  return e;
}

/// Proposes `p` on the leader and settles; returns its index.
log_index propose_on(mini_cluster& c, const std::string& leader, entry_payload p) {
  auto idx = c.core(leader.c_str()).propose(std::move(p));
  REQUIRE(idx);
  c.settle();
  return *idx;
}

/// Starts learner b4 and commits its registration through `leader`, then
/// lets `ticks` ticks pass.
void join_b4(mini_cluster& c, const std::string& leader, int ticks) {
  c.add_learner("b4");
  propose_on(c, leader, registration("b4"));
  c.ticks(ticks);
}

}  // namespace

TEST_CASE("a learner receives the log once its register entry commits, and never votes", "[raft][learner]") {
  mini_cluster c({"b1", "b2", "b3"});
  auto leader = c.elect_any();
  REQUIRE(leader);
  propose_on(c, *leader, owner_entry{"orders", 0, id("b1")});
  c.add_learner("b4");
  c.ticks(30);
  // Not registered yet: nobody sends it anything, it knows no leader and
  // does not campaign however long it waits.
  CHECK(c.core("b4").commit_index() == log_index{0});
  CHECK(c.core("b4").current_role() == role::follower);
  CHECK(c.core("b4").leader().empty());
  CHECK_FALSE(c.core("b4").is_voter());

  auto reg = propose_on(c, *leader, registration("b4"));
  c.ticks(5);
  CHECK(c.core(leader->c_str()).learners() == std::vector<node_id>{id("b4")});
  CHECK(c.core("b4").leader() == node_id{*leader});
  CHECK(c.core("b4").commit_index() >= reg);
  CHECK(c.applied("b4").owner_of({"orders", 0}) == id("b1"));
  CHECK(c.applied("b4").registered().count(id("b4")) == 1);
  // Every voter knows the learner, so whichever leads next replicates to it.
  for (const char* v : {"b1", "b2", "b3"})
    CHECK(c.core(v).learners() == std::vector<node_id>{id("b4")});
  CHECK(c.core("b4").current_term() == c.core(leader->c_str()).current_term());
}

TEST_CASE("a learner never counts towards commit or check-quorum", "[raft][learner]") {
  mini_cluster c({"b1", "b2", "b3"});
  auto leader = c.elect_any();
  REQUIRE(leader);
  join_b4(c, *leader, 5);
  // The leader keeps only the learner: the two other voters are cut off.
  for (const char* v : {"b1", "b2", "b3"})
    if (*leader != std::string(v))
      c.isolate(v);
  auto before = c.core(leader->c_str()).commit_index();
  auto idx = c.core(leader->c_str()).propose(owner_entry{"orders", 1, id("b4")});
  REQUIRE(idx);
  c.settle();
  CHECK(c.core(leader->c_str()).commit_index() == before);  // b4's copy is not a majority
  CHECK(c.core("b4").log().last_index() >= *idx);              // though it holds the entry
  CHECK(c.core("b4").commit_index() < *idx);
  c.ticks(40);
  // Check-quorum: the learner's answers do not keep the leader in office.
  CHECK(c.core(leader->c_str()).current_role() != role::leader);
  CHECK(c.core("b4").current_role() == role::follower);  // and the learner never ran
  c.heal();
  auto next = c.elect_any();
  REQUIRE(next);
  CHECK(*next != std::string("b4"));
  c.ticks(10);
  CHECK(c.core("b4").leader() == node_id{*next});
}

TEST_CASE("a learner that lags behind compaction catches up by snapshot and follows a new leader",
          "[raft][learner]") {
  mini_cluster c({"b1", "b2", "b3"}, 8);
  auto leader = c.elect_any();
  REQUIRE(leader);
  for (int p = 0; p < 30; ++p)
    propose_on(c, *leader, owner_entry{"orders", p, id("b2")});
  join_b4(c, *leader, 10);
  REQUIRE(c.core(leader->c_str()).log().snapshot_index() > log_index{0});
  CHECK(c.core("b4").latest_snapshot().has_value());  // the prefix came as a snapshot
  CHECK(c.applied("b4").owners() == c.applied(leader->c_str()).owners());
  CHECK(c.core("b4").state().registered().count(id("b4")) == 1);

  c.crash(leader->c_str());
  auto next = c.elect_any();
  REQUIRE(next);
  CHECK(*next != std::string("b4"));
  propose_on(c, *next, owner_entry{"orders", 0, id("b4")});
  c.ticks(10);
  CHECK(c.core("b4").leader() == node_id{*next});
  CHECK(c.core("b4").state().owner_of({"orders", 0}) == id("b4"));
}

TEST_CASE("a removed broker is no longer replicated to", "[raft][learner]") {
  mini_cluster c({"b1", "b2", "b3"});
  auto leader = c.elect_any();
  REQUIRE(leader);
  c.add_learner("b4");
  propose_on(c, *leader, registration("b4"));
  propose_on(c, *leader, broker_entry{id("b4"), broker_change::drain, {}});
  propose_on(c, *leader, broker_entry{id("b4"), broker_change::remove, {}});
  c.ticks(5);
  CHECK(c.core(leader->c_str()).learners().empty());
  CHECK(c.core(leader->c_str()).state().removed().count(id("b4")) == 1);
  auto seen = c.core("b4").log().last_index();
  propose_on(c, *leader, owner_entry{"orders", 0, id("b1")});
  c.ticks(5);
  CHECK(c.core("b4").log().last_index() == seen);
  // Registering again admits it again.
  propose_on(c, *leader, registration("b4"));
  c.ticks(5);
  CHECK(c.core(leader->c_str()).learners() == std::vector<node_id>{id("b4")});
  CHECK(c.core("b4").log().last_index() == c.core(leader->c_str()).log().last_index());
}

TEST_CASE("a core whose self is neither voter nor learner is refused", "[raft][learner]") {
  auto cfg = config("b4");
  auto r = raft_core::open(cfg, {});
  REQUIRE_FALSE(r);
  CHECK(r.err().message.find("neither a member nor a learner") != std::string::npos);
  cfg.learners.push_back(id("b4"));
  CHECK(raft_core::open(cfg, {}));
}

TEST_CASE("vote messages from a learner change nothing, not even the term", "[raft][learner]") {
  mini_cluster c({"b1", "b2", "b3"});
  auto leader = c.elect_any();
  REQUIRE(leader);
  join_b4(c, *leader, 5);
  auto t = c.core(leader->c_str()).current_term();
  // A learner misconfigured as a candidate: its requests at a higher term are ignored.
  c.core(leader->c_str()).step(msg("b4", leader->c_str(), t.value + 5, vote_request{log_index{100}, term{t.value}, false}));
  c.core(leader->c_str()).step(msg("b4", leader->c_str(), t.value + 5, vote_response{true, false}));
  CHECK(c.core(leader->c_str()).current_term() == t);
  CHECK(c.core(leader->c_str()).current_role() == role::leader);
}

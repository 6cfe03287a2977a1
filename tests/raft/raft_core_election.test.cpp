// raft_core elections: terms, votes, pre-vote, stickiness, check-quorum.

#include <catch2/catch.hpp>

#include <filesystem>

#include <unistd.h>

#include "core_fixture.hpp"
#include "raft/raft_store.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;

TEST_CASE("a message with a higher term turns a leader into a follower of that term", "[raft][election]") {
  raft_core c = open_core(config("b1"));
  elect(c);
  REQUIRE(c.current_role() == role::leader);
  REQUIRE(c.current_term() == term{1});
  drain(c);
  c.step(msg("b2", "b1", 7, append_response{false, log_index{0}, log_index{1}, term{0}, log_index{1}}));
  CHECK(c.current_role() == role::follower);
  CHECK(c.current_term() == term{7});
  CHECK(c.voted_for().empty());
  CHECK(c.leader().empty());
  auto rd = drain(c);
  REQUIRE(rd.hard);
  CHECK(rd.hard->current_term == term{7});
}

TEST_CASE("an append from a stale term is rejected with the current term", "[raft][election]") {
  raft_core c = open_core(config("b1"), log_of_terms({1, 2}, 5));
  c.step(msg("b2", "b1", 3, append_request{log_index{2}, term{2}, log_index{2}, {owner_at(3, 3)}}));
  auto rd = drain(c);
  auto replies = of_type<append_response>(rd.messages);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].first.msg_term == term{5});
  CHECK_FALSE(replies[0].second.success);
  CHECK(c.log().last_index() == log_index{2});
  CHECK(c.current_term() == term{5});
  CHECK(c.commit_index() == log_index{0});
  CHECK(c.leader().empty());
}

TEST_CASE("a vote request from a stale term is not granted", "[raft][election]") {
  raft_core c = open_core(config("b1"), log_of_terms({}, 5));
  c.step(msg("b2", "b1", 4, vote_request{log_index{9}, term{4}, false}));
  auto rd = drain(c);
  CHECK(of_type<vote_response>(rd.messages).empty());
  CHECK(c.voted_for().empty());
  CHECK(c.current_term() == term{5});
}

TEST_CASE("one vote per term, and the vote survives a restart from the store", "[raft][election]") {
  auto dir = std::filesystem::temp_directory_path() / ("moonmq-raft-vote-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    auto store = raft_store::open(dir.string());
    REQUIRE(store.ok());
    raft_core c = open_core(config("b1"), store->state());
    c.step(msg("b2", "b1", 2, vote_request{log_index{0}, term{0}, false}));
    c.step(msg("b3", "b1", 2, vote_request{log_index{0}, term{0}, false}));
    ready_batch rd = c.ready();
    REQUIRE(store->save(rd).ok());  // persisted before the replies go out
    c.advance();
    auto votes = of_type<vote_response>(rd.messages);
    REQUIRE(votes.size() == 2);
    CHECK(votes[0].first.to == id("b2"));
    CHECK(votes[0].second.granted);
    CHECK(votes[1].first.to == id("b3"));
    CHECK_FALSE(votes[1].second.granted);
  }
  auto store = raft_store::open(dir.string());
  REQUIRE(store.ok());
  CHECK(store->state().hard.voted_for == id("b2"));
  raft_core c = open_core(config("b1"), store->state());
  CHECK(c.current_term() == term{2});
  c.step(msg("b3", "b1", 2, vote_request{log_index{0}, term{0}, false}));
  c.step(msg("b2", "b1", 2, vote_request{log_index{0}, term{0}, false}));
  auto votes = of_type<vote_response>(drain(c).messages);
  REQUIRE(votes.size() == 2);
  CHECK_FALSE(votes[0].second.granted);  // b3 still refused after the restart
  CHECK(votes[1].second.granted);        // a repeated request from b2 is granted again
  std::filesystem::remove_all(dir);
}

TEST_CASE("a vote needs a log at least as up-to-date (last term, then length)", "[raft][election]") {
  // Voter log: terms 1,2,2 (last = 2/3).
  auto ask = [](uint64_t last_term, uint64_t last_index) {
    raft_core c = open_core(config("b1"), log_of_terms({1, 2, 2}, 2));
    c.step(msg("b2", "b1", 3, vote_request{log_index{last_index}, term{last_term}, false}));
    auto votes = of_type<vote_response>(drain(c).messages);
    REQUIRE(votes.size() == 1);
    return votes[0].second.granted;
  };
  CHECK_FALSE(ask(1, 10));  // longer log, older last term
  CHECK_FALSE(ask(2, 2));   // same last term, shorter
  CHECK(ask(2, 3));         // identical
  CHECK(ask(3, 1));         // newer last term wins regardless of length
}

TEST_CASE("pre-vote: an isolated node keeps its term while it campaigns", "[raft][election][prevote]") {
  raft_core c = open_core(config("b3"), log_of_terms({1}, 1));
  std::vector<message> sent;
  for (int i = 0; i < 200; ++i) {
    c.tick();
    auto rd = drain(c);
    sent.insert(sent.end(), rd.messages.begin(), rd.messages.end());
  }
  CHECK(c.current_term() == term{1});
  CHECK(c.current_role() == role::pre_candidate);
  auto reqs = of_type<vote_request>(sent);
  REQUIRE(reqs.size() >= 4);
  for (auto& [m, v] : reqs) {
    CHECK(v.pre_vote);
    CHECK(m.msg_term == term{2});  // the term it would use, not its own
  }
  // A voter that receives the pre-vote does not adopt its term either.
  raft_core voter = open_core(config("b1"), log_of_terms({1}, 1));
  voter.step(reqs[0].first);
  auto votes = of_type<vote_response>(drain(voter).messages);
  REQUIRE(votes.size() == 1);
  CHECK(votes[0].second.granted);
  CHECK(votes[0].second.pre_vote);
  CHECK(voter.current_term() == term{1});
  CHECK(voter.voted_for().empty());
}

TEST_CASE("pre-vote: a rejoining node does not depose a healthy leader", "[raft][election][prevote]") {
  mini_cluster cl({"b1", "b2", "b3"});
  auto leader = cl.elect_any();
  REQUIRE(leader);
  term t = cl.core(leader->c_str()).current_term();
  const char* outsider = *leader == "b3" ? "b1" : "b3";
  cl.isolate(outsider);
  cl.ticks(150);
  CHECK(cl.core(outsider).current_term() == t);
  cl.heal();
  cl.ticks(60);
  CHECK(cl.leader() == leader);
  CHECK(cl.core(leader->c_str()).current_term() == t);
  CHECK(cl.core(outsider).current_role() == role::follower);
  CHECK(cl.core(outsider).leader() == id(leader->c_str()));
}

TEST_CASE("leader stickiness: a follower that heard from its leader ignores vote requests", "[raft][election]") {
  raft_core c = open_core(config("b1"), log_of_terms({1}, 1));
  c.step(msg("b2", "b1", 1, append_request{log_index{1}, term{1}, log_index{1}, {}}));
  drain(c);
  REQUIRE(c.leader() == id("b2"));
  c.step(msg("b3", "b1", 2, vote_request{log_index{5}, term{1}, false}));
  c.step(msg("b3", "b1", 2, vote_request{log_index{5}, term{1}, true}));
  auto rd = drain(c);
  CHECK(of_type<vote_response>(rd.messages).empty());
  CHECK(c.current_term() == term{1});
  CHECK(c.voted_for().empty());
  // Once the election timeout passed without the leader, the same request is granted.
  for (int i = 0; i < 10; ++i)
    c.tick();
  c.step(msg("b3", "b1", 2, vote_request{log_index{5}, term{1}, false}));
  auto votes = of_type<vote_response>(drain(c).messages);
  REQUIRE(votes.size() == 1);
  CHECK(votes[0].second.granted);
  CHECK(c.current_term() == term{2});
}

TEST_CASE("check-quorum: a leader cut off from the majority steps down within an election timeout",
          "[raft][election]") {
  mini_cluster cl({"b1", "b2", "b3"});
  auto leader = cl.elect_any();
  REQUIRE(leader);
  cl.ticks(30);  // healthy: still leader after several timeouts
  REQUIRE(cl.core(leader->c_str()).current_role() == role::leader);
  cl.isolate(leader->c_str());
  cl.ticks(5);  // answers arrive every heartbeat (2 ticks): still within the window
  CHECK(cl.core(leader->c_str()).current_role() == role::leader);
  cl.ticks(5);  // one election timeout (10 ticks) after the cut
  CHECK(cl.core(leader->c_str()).current_role() != role::leader);
  // the majority side elects a new leader in a higher term
  cl.ticks(60);
  auto next = cl.leader();
  REQUIRE(next);
  CHECK(*next != *leader);
}

TEST_CASE("a single-node cluster elects itself and commits its proposals", "[raft][election]") {
  raft_core c = open_core(config("b1", {"b1"}));
  persisted_state disk;
  for (int i = 0; i < 30 && c.current_role() != role::leader; ++i) {
    c.tick();
    drain(c, &disk);
  }
  REQUIRE(c.current_role() == role::leader);
  CHECK(c.current_term() == term{1});
  auto idx = c.propose(owner_entry{"orders", 1, id("b1")});
  REQUIRE(idx.ok());
  auto rd = drain(c, &disk);
  REQUIRE(rd.committed.size() >= 1);
  CHECK(rd.committed.back().index == *idx);
  CHECK(c.state().owner_of({"orders", 1}) == id("b1"));
  CHECK(c.state().controller() == id("b1"));
  CHECK(disk.hard.commit == *idx);
}

TEST_CASE("propose on a follower returns not_leader naming the known leader", "[raft][election]") {
  raft_core c = open_core(config("b1"));
  auto none = c.propose(owner_entry{"orders", 0, id("b1")});
  REQUIRE_FALSE(none.ok());
  CHECK(none.err().code == errc::not_leader);
  CHECK(none.err().leader.empty());
  c.step(msg("b2", "b1", 1, append_request{log_index{0}, term{0}, log_index{0}, {}}));
  auto r = c.propose(owner_entry{"orders", 0, id("b1")});
  REQUIRE_FALSE(r.ok());
  CHECK(r.err().code == errc::not_leader);
  CHECK(r.err().leader == "b2");
}

TEST_CASE("a new leader writes a controller entry naming itself in its term", "[raft][election]") {
  raft_core c = open_core(config("b2"), log_of_terms({1, 1}, 1));
  elect(c);
  REQUIRE(c.current_role() == role::leader);
  const log_entry& e = c.log().at(log_index{3});
  CHECK(e.entry_term == term{2});
  REQUIRE(std::holds_alternative<controller_entry>(e.payload));
  CHECK(std::get<controller_entry>(e.payload).leader == id("b2"));
}

TEST_CASE("raft_core::open refuses a bad config or an inconsistent persisted image", "[raft][election]") {
  auto cfg = config("b9");
  auto r = raft_core::open(cfg, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.err().code == errc::invalid_argument);
  CHECK_THAT(r.err().message, Catch::Contains("neither a member nor a learner"));

  cfg = config("b1");
  cfg.heartbeat_ticks = cfg.election_ticks;
  CHECK(raft_core::open(cfg, {}).err().code == errc::invalid_argument);

  persisted_state gap = log_of_terms({1, 1, 1}, 1);
  gap.entries.erase(gap.entries.begin() + 1);
  auto g = raft_core::open(config("b1"), gap);
  REQUIRE_FALSE(g.ok());
  CHECK(g.err().code == errc::corrupt_state);

  persisted_state commit_past_end = log_of_terms({1}, 1, 5);
  CHECK(raft_core::open(config("b1"), commit_past_end).err().code == errc::corrupt_state);

  persisted_state stranger = log_of_terms({}, 2);
  stranger.hard.voted_for = id("b7");
  CHECK(raft_core::open(config("b1"), stranger).err().code == errc::corrupt_state);
}

TEST_CASE("a restarted node re-applies exactly its committed prefix", "[raft][election]") {
  persisted_state p = log_of_terms({1, 1, 2, 2}, 2, 3);
  raft_core c = open_core(config("b1"), p);
  CHECK(c.current_role() == role::follower);
  CHECK(c.leader().empty());
  auto rd = drain(c);
  REQUIRE(rd.committed.size() == 3);
  CHECK(rd.committed.back().index == log_index{3});
  CHECK_FALSE(rd.hard);  // nothing changed, nothing to rewrite
  CHECK(c.state().applied_index() == log_index{3});
}

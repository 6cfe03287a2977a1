// raft_core replication: consistency check, back-off, overwrite rules, commit rules, apply order.

#include <catch2/catch.hpp>

#include "core_fixture.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;

namespace {

std::vector<uint64_t> terms_of(const raft_log& l) {
  std::vector<uint64_t> out;
  for (log_index i = l.first_index(); i <= l.last_index(); i = i.next())
    out.push_back(l.at(i).entry_term.value);
  return out;
}

append_response only_append_reply(raft_core& c) {
  auto replies = of_type<append_response>(drain(c).messages);
  REQUIRE(replies.size() == 1);
  return replies[0].second;
}

}  // namespace

TEST_CASE("prev-entry mismatch: follower rejects with the conflicting term and its first index",
          "[raft][replication]") {
  raft_core f = open_core(config("b1"), log_of_terms({1, 1, 2, 2, 2}, 2));
  f.step(msg("b2", "b1", 3, append_request{log_index{5}, term{3}, log_index{0}, {owner_at(3, 6)}}));
  append_response r = only_append_reply(f);
  CHECK_FALSE(r.success);
  CHECK(r.reject_index == log_index{5});
  CHECK(r.conflict_term == term{2});
  CHECK(r.conflict_index == log_index{3});
  CHECK(f.log().last_index() == log_index{5});  // a rejection changes nothing

  // A follower whose log is too short reports its length instead.
  raft_core g = open_core(config("b1"), log_of_terms({1, 1}, 2));
  g.step(msg("b2", "b1", 3, append_request{log_index{5}, term{3}, log_index{0}, {}}));
  append_response s = only_append_reply(g);
  CHECK_FALSE(s.success);
  CHECK(s.conflict_term == term{0});
  CHECK(s.conflict_index == log_index{3});
}

TEST_CASE("leader backs off a whole term per rejection and then repairs the follower", "[raft][replication]") {
  // Leader log 1,1,3,3,3 (+ its controller entry in term 4); follower log 1,1,2,2,2.
  raft_core l = open_core(config("b1"), log_of_terms({1, 1, 3, 3, 3}, 3));
  elect(l);
  REQUIRE(l.current_role() == role::leader);
  REQUIRE(l.current_term() == term{4});
  raft_core f = open_core(config("b2"), log_of_terms({1, 1, 2, 2, 2}, 2));

  std::vector<message> to_f;
  for (auto& m : drain(l).messages)
    if (m.to == id("b2"))
      to_f.push_back(m);
  int round_trips = 0;
  while (!to_f.empty() && round_trips < 10) {
    ++round_trips;
    for (auto& m : to_f)
      f.step(m);
    to_f.clear();
    for (auto& m : drain(f).messages)
      l.step(m);
    for (auto& m : drain(l).messages) {
      auto* a = std::get_if<append_request>(&m.body);
      if (m.to == id("b2") && a && !a->entries.empty())
        to_f.push_back(m);
    }
  }
  // probe at 5 -> reject (term 2 from 3) -> leader has no term 2 -> probe at 2 -> success + entries
  CHECK(round_trips <= 3);
  CHECK(terms_of(f.log()) == std::vector<uint64_t>{1, 1, 3, 3, 3, 4});
}

TEST_CASE("a conflicting suffix is overwritten", "[raft][replication]") {
  raft_core f = open_core(config("b1"), log_of_terms({1, 1, 1, 1}, 1));
  f.step(msg("b2", "b1", 2, append_request{log_index{2}, term{1}, log_index{0}, {owner_at(2, 3, "new", 0)}}));
  append_response r = only_append_reply(f);
  CHECK(r.success);
  CHECK(r.match_index == log_index{3});
  CHECK(terms_of(f.log()) == std::vector<uint64_t>{1, 1, 2});
  CHECK(std::get<owner_entry>(f.log().at(log_index{3}).payload).topic == "new");
}

TEST_CASE("a duplicate or stale append never truncates", "[raft][replication]") {
  raft_core f = open_core(config("b1"), log_of_terms({1, 1, 1, 1, 1}, 1));
  persisted_state disk = log_of_terms({1, 1, 1, 1, 1}, 1);
  // An old append carrying entries 2..3 (which we already hold) arrives late.
  f.step(msg("b2", "b1", 1,
             append_request{log_index{1}, term{1}, log_index{0}, {owner_at(1, 2, "orders", 1), owner_at(1, 3, "orders", 2)}}));
  ready_batch rd = drain(f, &disk);
  auto replies = of_type<append_response>(rd.messages);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].second.success);
  CHECK(replies[0].second.match_index == log_index{3});
  CHECK(f.log().last_index() == log_index{5});
  CHECK_FALSE(rd.truncate_from);  // nothing to rewrite on disk either
  CHECK(disk.entries.size() == 5);
}

TEST_CASE("Figure 8: an earlier-term entry is not committed by counting replicas", "[raft][replication][commit]") {
  // b1 holds an uncommitted term-2 entry at index 2 and becomes leader of term 4.
  raft_core l = open_core(config("b1"), log_of_terms({1, 2}, 3));
  elect(l);
  REQUIRE(l.current_term() == term{4});
  REQUIRE(l.log().last_index() == log_index{3});  // its controller entry
  drain(l);
  // b2 reports holding index 2 only: a majority stores index 2, but it is from term 2.
  l.step(msg("b2", "b1", 4, append_response{true, log_index{2}, log_index{0}, term{0}, log_index{0}}));
  drain(l);
  CHECK(l.commit_index() == log_index{0});
  // Once the current-term entry is on a majority, everything up to it commits.
  l.step(msg("b2", "b1", 4, append_response{true, log_index{3}, log_index{0}, term{0}, log_index{0}}));
  auto rd = drain(l);
  CHECK(l.commit_index() == log_index{3});
  REQUIRE(rd.committed.size() == 3);
  CHECK(rd.committed[1].index == log_index{2});
}

TEST_CASE("commit index is the highest index stored on a majority", "[raft][replication][commit]") {
  raft_core l = open_core(config("b1", {"b1", "b2", "b3", "b4", "b5"}));
  elect(l);
  REQUIRE(l.current_role() == role::leader);
  for (int i = 0; i < 4; ++i)
    REQUIRE(l.propose(owner_entry{"orders", i, id("b2")}).ok());
  REQUIRE(l.log().last_index() == log_index{5});
  drain(l);
  auto ack = [&](const char* from, uint64_t match) {
    l.step(msg(from, "b1", 1, append_response{true, log_index{match}, log_index{0}, term{0}, log_index{0}}));
  };
  ack("b2", 5);
  CHECK(l.commit_index() == log_index{0});  // 2 of 5
  ack("b3", 3);
  CHECK(l.commit_index() == log_index{3});  // b1=5, b2=5, b3=3 -> third highest is 3
  ack("b4", 1);
  CHECK(l.commit_index() == log_index{3});
  ack("b4", 4);
  CHECK(l.commit_index() == log_index{4});
  ack("b5", 5);
  CHECK(l.commit_index() == log_index{5});
}

TEST_CASE("committed entries are applied in order, only up to the commit index", "[raft][replication]") {
  raft_core f = open_core(config("b1"));
  std::vector<log_entry> entries;
  for (uint64_t i = 1; i <= 5; ++i)
    entries.push_back(owner_at(1, i, "orders", 0, i % 2 ? "b2" : "b3"));
  f.step(msg("b2", "b1", 1, append_request{log_index{0}, term{0}, log_index{3}, entries}));
  auto rd = drain(f);
  REQUIRE(rd.committed.size() == 3);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(rd.committed[i].index == log_index{i + 1});
  CHECK(f.state().applied_index() == log_index{3});
  CHECK(f.state().owner_of({"orders", 0}) == id("b2"));
  CHECK(rd.entries.size() == 5);  // all five are persisted in the same batch
  f.step(msg("b2", "b1", 1, append_request{log_index{5}, term{1}, log_index{5}, {}}));
  rd = drain(f);
  REQUIRE(rd.committed.size() == 2);
  CHECK(rd.committed[0].index == log_index{4});
  CHECK(rd.committed[1].index == log_index{5});
  CHECK(f.state().owner_of({"orders", 0}) == id("b2"));
  CHECK(f.state().applied_index() == log_index{5});
}

TEST_CASE("the follower's commit index never passes the entries it verified", "[raft][replication][commit]") {
  raft_core f = open_core(config("b1"), log_of_terms({1, 1, 1}, 1));
  // The leader's commit is 9 but this append only proves entries up to 2.
  f.step(msg("b2", "b1", 1, append_request{log_index{2}, term{1}, log_index{9}, {}}));
  drain(f);
  CHECK(f.commit_index() == log_index{2});
}

TEST_CASE("messages that depend on persisted state come in the same batch as that state", "[raft][replication]") {
  raft_core f = open_core(config("b1"));
  f.step(msg("b2", "b1", 3, append_request{log_index{0}, term{0}, log_index{0}, {owner_at(3, 1)}}));
  ready_batch rd = f.ready();
  REQUIRE(rd.hard);
  CHECK(rd.hard->current_term == term{3});
  REQUIRE(rd.truncate_from);
  CHECK(*rd.truncate_from == log_index{1});
  REQUIRE(rd.entries.size() == 1);
  REQUIRE(of_type<append_response>(rd.messages).size() == 1);  // the ack goes out only after the driver persisted
  f.advance();
  CHECK_FALSE(f.has_ready());
}

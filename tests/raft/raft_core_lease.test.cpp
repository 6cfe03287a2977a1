// raft_core's part of the broker lease (docs/shared-storage.md "The lease"):
// numbered leader requests echoed by followers, the request a majority
// answered, the commit index a leader message carried, and whether a
// commit index covers the earlier terms.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core_fixture.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;

namespace {

/// The append requests among `ms` (in order) to `to`.
std::vector<message> requests_to(const std::vector<message>& ms, const char* to) {
  std::vector<message> out;
  for (const auto& m : ms)
    if (m.to == id(to) && std::holds_alternative<append_request>(m.body))
      out.push_back(m);
  return out;
}

uint64_t seq_of(const message& m) {
  if (const auto* a = std::get_if<append_request>(&m.body))
    return a->seq;
  if (const auto* a = std::get_if<append_response>(&m.body))
    return a->seq;
  if (const auto* s = std::get_if<snapshot_request>(&m.body))
    return s->seq;
  if (const auto* s = std::get_if<snapshot_response>(&m.body))
    return s->seq;
  return 0;
}

}  // namespace

TEST_CASE("a leader numbers its requests and followers echo the number, in a rejection too", "[raft][lease]") {
  raft_core l = open_core(config("b1"));
  elect(l);
  REQUIRE(l.current_role() == role::leader);
  auto out = drain(l).messages;
  auto to_b2 = requests_to(out, "b2");
  auto to_b3 = requests_to(out, "b3");
  REQUIRE(to_b2.size() == 1);
  REQUIRE(to_b3.size() == 1);
  CHECK(seq_of(to_b2[0]) != 0);
  CHECK(seq_of(to_b3[0]) != seq_of(to_b2[0]));
  CHECK(l.last_seq() == std::max(seq_of(to_b2[0]), seq_of(to_b3[0])));

  raft_core f = open_core(config("b2"));
  f.step(to_b2[0]);
  auto replies = of_type<append_response>(drain(f).messages);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].second.success);
  CHECK(replies[0].second.seq == seq_of(to_b2[0]));

  // A follower whose log does not match rejects, echoing the number.
  raft_core g = open_core(config("b3"), log_of_terms({1, 1, 2}, 2));
  g.step(msg("b1", "b3", 3, append_request{log_index{3}, term{3}, log_index{0}, {}, 77}));
  auto rejects = of_type<append_response>(drain(g).messages);
  REQUIRE(rejects.size() == 1);
  CHECK_FALSE(rejects[0].second.success);
  CHECK(rejects[0].second.seq == 77);

  // A stale leader's request is refused with the number 0 (it counts for nothing).
  g.step(msg("b1", "b3", 1, append_request{log_index{0}, term{0}, log_index{0}, {}, 78}));
  auto stale = of_type<append_response>(drain(g).messages);
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].second.seq == 0);
}

TEST_CASE("a snapshot request is numbered and its answer echoes the number", "[raft][lease]") {
  snapshot s;
  s.last_index = log_index{12};
  s.last_term = term{3};
  s.controller = id("b1");
  raft_core f = open_core(config("b2"));
  f.step(msg("b1", "b2", 3, snapshot_request{s, 41}));
  auto replies = of_type<snapshot_response>(drain(f).messages);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].second.seq == 41);
  f.step(msg("b1", "b2", 3, snapshot_request{s, 42}));  // stale now: refused, still echoed
  replies = of_type<snapshot_response>(drain(f).messages);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].second.seq == 42);
}

TEST_CASE("the quorum's answered request is the majority's, the leader counting itself", "[raft][lease]") {
  raft_core l = open_core(config("b1", {"b1", "b2", "b3", "b4", "b5"}));
  elect(l);
  REQUIRE(l.current_role() == role::leader);
  (void)drain(l);
  for (int i = 0; i < 6; ++i)  // three heartbeat rounds: requests 1..16 given out
    l.tick();
  (void)drain(l);
  REQUIRE(l.last_seq() == 16);
  CHECK(l.quorum_answered_seq() == 0);
  auto t = l.current_term().value;
  auto answer = [&](const char* from, uint64_t seq) {
    l.step(msg(from, "b1", t, append_response{true, log_index{0}, log_index{0}, term{0}, log_index{0}, seq}));
  };
  answer("b2", 9);
  CHECK(l.quorum_answered_seq() == 0);  // the leader and b2: 2 of 5
  answer("b3", 4);
  CHECK(l.quorum_answered_seq() == 4);  // 3 of 5 answered 4 or later
  answer("b4", 7);
  CHECK(l.quorum_answered_seq() == 7);
  answer("b2", 3);  // an older answer arriving late lowers nothing
  CHECK(l.quorum_answered_seq() == 7);
  answer("b5", 1000000);  // a number it never gave out counts for nothing
  CHECK(l.quorum_answered_seq() == 7);
  // An answer of an older term is refused before it is counted.
  l.step(msg("b5", "b1", t - 1,
             append_response{true, log_index{0}, log_index{0}, term{0}, log_index{0}, l.last_seq()}));
  CHECK(l.quorum_answered_seq() == 7);
}

TEST_CASE("learners' answers never make the quorum, and a follower reports 0", "[raft][lease]") {
  auto c = config("b1", {"b1", "b2", "b3"});
  c.learners.push_back(id("b4"));
  c.learners.push_back(id("b5"));
  raft_core l = open_core(c);
  elect(l);
  REQUIRE(l.current_role() == role::leader);
  (void)drain(l);
  auto t = l.current_term().value;
  for (const char* learner : {"b4", "b5"})
    l.step(msg(learner, "b1", t, append_response{true, log_index{0}, log_index{0}, term{0}, log_index{0}, 1}));
  CHECK(l.quorum_answered_seq() == 0);
  l.step(msg("b2", "b1", t, append_response{false, log_index{0}, log_index{1}, term{0}, log_index{1}, 1}));
  CHECK(l.quorum_answered_seq() == 1);  // a rejection in this term still answers

  raft_core f = open_core(config("b2"));
  CHECK(f.quorum_answered_seq() == 0);
}

TEST_CASE("one voter answers every request itself", "[raft][lease]") {
  raft_core l = open_core(config("b1", {"b1"}));
  elect(l);
  REQUIRE(l.current_role() == role::leader);
  CHECK(l.quorum_answered_seq() == l.last_seq());
}

TEST_CASE("a leader's commit index covers earlier terms once it committed its own entry", "[raft][lease]") {
  mini_cluster c({"b1", "b2", "b3"});
  auto leader = c.elect_any();
  REQUIRE(leader);
  raft_core& l = c.core(leader->c_str());
  CHECK(l.committed_in_term());

  // A fresh leader with an uncommitted tail: its commit index is of an older term.
  raft_core n = open_core(config("b1"), log_of_terms({1, 1, 2}, 2, 2));
  elect(n);
  REQUIRE(n.current_role() == role::leader);
  CHECK_FALSE(n.committed_in_term());
}

TEST_CASE("a follower records the commit index a leader's append carried and whether it is of the leader's term",
          "[raft][lease]") {
  raft_core f = open_core(config("b2"), log_of_terms({1, 1, 2}, 2, 2));
  CHECK(f.last_leader_contact().count == 0);
  // A new leader in term 3 that has not committed in its term yet: commit 2 is of term 1.
  f.step(msg("b1", "b2", 3, append_request{log_index{3}, term{2}, log_index{2}, {owner_at(3, 4)}, 5}));
  auto c1 = f.last_leader_contact();
  CHECK(c1.count == 1);
  CHECK(c1.leader_term == term{3});
  CHECK(c1.commit == log_index{2});
  CHECK_FALSE(c1.commit_in_term);
  // Its first entry committed: commit 4 is of term 3.
  f.step(msg("b1", "b2", 3, append_request{log_index{4}, term{3}, log_index{4}, {}, 6}));
  auto c2 = f.last_leader_contact();
  CHECK(c2.count == 2);
  CHECK(c2.commit == log_index{4});
  CHECK(c2.commit_in_term);
  // A carried commit index past this log's end is not known to be of the term.
  f.step(msg("b1", "b2", 3, append_request{log_index{9}, term{3}, log_index{9}, {}, 7}));
  CHECK(f.last_leader_contact().count == 3);
  CHECK_FALSE(f.last_leader_contact().commit_in_term);
  // Vote traffic and a stale leader's append are no contact.
  f.step(msg("b3", "b2", 1, append_request{log_index{0}, term{0}, log_index{0}, {}, 1}));
  f.step(msg("b3", "b2", 3, vote_request{log_index{9}, term{3}, true}));
  CHECK(f.last_leader_contact().count == 3);
}

TEST_CASE("request numbers travel in the wire JSON and are optional there", "[raft][lease][wire]") {
  message a = msg("b1", "b2", 4, append_request{log_index{2}, term{1}, log_index{2}, {}, 12});
  auto back = message_from_json(to_json(a));
  REQUIRE(back);
  CHECK(std::get<append_request>(back->body).seq == 12);
  message r = msg("b2", "b1", 4, append_response{true, log_index{2}, log_index{0}, term{0}, log_index{0}, 12});
  auto rj = to_json(r);
  CHECK(rj["seq"] == 12);
  back = message_from_json(rj);
  REQUIRE(back);
  CHECK(std::get<append_response>(back->body).seq == 12);
  // A broker of an earlier version sends no "seq": it reads as 0.
  rj.erase("seq");
  back = message_from_json(rj);
  REQUIRE(back);
  CHECK(std::get<append_response>(back->body).seq == 0);
  // A mistyped one is refused like any other field.
  rj["seq"] = "twelve";
  CHECK_FALSE(message_from_json(rj));
  snapshot s;
  s.last_index = log_index{3};
  s.last_term = term{1};
  back = message_from_json(to_json(msg("b1", "b2", 4, snapshot_request{s, 5})));
  REQUIRE(back);
  CHECK(std::get<snapshot_request>(back->body).seq == 5);
  back = message_from_json(to_json(msg("b2", "b1", 4, snapshot_response{log_index{3}, 5})));
  REQUIRE(back);
  CHECK(std::get<snapshot_response>(back->body).seq == 5);
}

TEST_CASE("a leader echoes each peer's last answer stamp in its later appends to that peer", "[raft][lease]") {
  raft_core l = open_core(config("b1"));
  elect(l);
  REQUIRE(l.current_role() == role::leader);
  auto first = drain(l).messages;
  for (const auto& m : requests_to(first, "b2"))
    CHECK(std::get<append_request>(m.body).echo == 0);  // nothing answered yet
  auto t = l.current_term().value;
  auto answer = [&](const char* from, uint64_t stamp) {
    append_response r{true, log_index{0}, log_index{0}, term{0}, log_index{0}, l.last_seq()};
    r.stamp = stamp;
    l.step(msg(from, "b1", t, r));
  };
  auto echoes_after_heartbeat = [&](const char* to) {
    for (int i = 0; i < 2; ++i)
      l.tick();
    auto out = requests_to(drain(l).messages, to);
    REQUIRE_FALSE(out.empty());
    return std::get<append_request>(out.back().body).echo;
  };
  answer("b2", 111);
  answer("b3", 222);
  (void)drain(l);
  CHECK(echoes_after_heartbeat("b2") == 111);
  CHECK(echoes_after_heartbeat("b3") == 222);
  // The last stamp received, not the largest (a restarted follower's clock
  // may start lower), and an answer without one keeps the last.
  answer("b2", 50);
  answer("b2", 0);
  (void)drain(l);
  CHECK(echoes_after_heartbeat("b2") == 50);
  // A snapshot answer and a rejection carry stamps too.
  snapshot_response sr{log_index{0}, l.last_seq()};
  sr.stamp = 333;
  l.step(msg("b3", "b1", t, sr));
  (void)drain(l);
  CHECK(echoes_after_heartbeat("b3") == 333);
  append_response rej{false, log_index{0}, l.log().last_index(), term{0}, log_index{1}, l.last_seq()};
  rej.stamp = 444;
  l.step(msg("b3", "b1", t, rej));  // stale for the back-off, still an answer in this term
  (void)drain(l);
  CHECK(echoes_after_heartbeat("b3") == 444);
  // An answer of an older term is refused before its stamp is kept.
  append_response old{true, log_index{0}, log_index{0}, term{0}, log_index{0}, 0};
  old.stamp = 999;
  l.step(msg("b2", "b1", t - 1, old));
  (void)drain(l);
  CHECK(echoes_after_heartbeat("b2") == 50);
}

TEST_CASE("a new term starts with no echo: a stamp speaks for one leadership", "[raft][lease]") {
  raft_core l = open_core(config("b1"));
  elect(l);
  auto t = l.current_term().value;
  append_response r{true, log_index{0}, log_index{0}, term{0}, log_index{0}, l.last_seq()};
  r.stamp = 111;
  l.step(msg("b2", "b1", t, r));
  (void)drain(l);
  // Deposed by a higher term, then elected again.
  l.step(msg("b3", "b1", t + 1, append_request{log_index{0}, term{0}, log_index{0}, {}, 1}));
  (void)drain(l);
  REQUIRE(l.current_role() == role::follower);
  elect(l);
  REQUIRE(l.current_role() == role::leader);
  auto out = requests_to(drain(l).messages, "b2");
  REQUIRE_FALSE(out.empty());
  for (const auto& m : out)
    CHECK(std::get<append_request>(m.body).echo == 0);
}

TEST_CASE("a follower records the echo a leader's append carried, and leaves its answers unstamped",
          "[raft][lease]") {
  raft_core f = open_core(config("b2"));
  append_request a{log_index{0}, term{0}, log_index{0}, {}, 5};
  a.echo = 123456789;
  f.step(msg("b1", "b2", 2, a));
  CHECK(f.last_leader_contact().echo == 123456789);
  auto replies = of_type<append_response>(drain(f).messages);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].second.stamp == 0);  // the driver stamps it as it sends (raft/core_lease.hpp)
  f.step(msg("b1", "b2", 2, append_request{log_index{0}, term{0}, log_index{0}, {}, 6}));
  CHECK(f.last_leader_contact().echo == 0);  // none carried: none recorded
}

TEST_CASE("stamps and echoes travel in the wire JSON and are optional there", "[raft][lease][wire]") {
  append_request a{log_index{2}, term{1}, log_index{2}, {}, 12};
  a.echo = 77;
  auto aj = to_json(msg("b1", "b2", 4, a));
  CHECK(aj["echo"] == 77);
  auto back = message_from_json(aj);
  REQUIRE(back);
  CHECK(std::get<append_request>(back->body).echo == 77);
  aj.erase("echo");
  back = message_from_json(aj);
  REQUIRE(back);
  CHECK(std::get<append_request>(back->body).echo == 0);

  append_response r{true, log_index{2}, log_index{0}, term{0}, log_index{0}, 12};
  r.stamp = 88;
  auto rj = to_json(msg("b2", "b1", 4, r));
  back = message_from_json(rj);
  REQUIRE(back);
  CHECK(std::get<append_response>(back->body).stamp == 88);
  rj.erase("stamp");
  back = message_from_json(rj);
  REQUIRE(back);
  CHECK(std::get<append_response>(back->body).stamp == 0);
  rj["stamp"] = "late";
  CHECK_FALSE(message_from_json(rj));

  snapshot_response sr{log_index{3}, 5};
  sr.stamp = 99;
  back = message_from_json(to_json(msg("b2", "b1", 4, sr)));
  REQUIRE(back);
  CHECK(std::get<snapshot_response>(back->body).stamp == 99);
}

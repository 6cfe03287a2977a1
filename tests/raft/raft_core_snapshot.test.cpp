// raft_core compaction and snapshots; ownership_state.

#include <catch2/catch.hpp>

#include "core_fixture.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;

TEST_CASE("ownership_state applies entries in order and round-trips through a snapshot", "[raft][snapshot]") {
  ownership_state s;
  REQUIRE(s.apply(log_entry{term{1}, log_index{1}, controller_entry{id("b1")}}).ok());
  REQUIRE(s.apply(owner_at(1, 2, "orders", 3, "b2")).ok());
  REQUIRE(s.apply(owner_at(1, 3, "orders", 3, "b3")).ok());
  auto gap = s.apply(owner_at(1, 5));
  REQUIRE_FALSE(gap.ok());
  CHECK(gap.err().code == errc::invalid_argument);
  CHECK(s.applied_index() == log_index{3});
  CHECK(s.owner_of({"orders", 3}) == id("b3"));
  CHECK_FALSE(s.owner_of({"orders", 4}));
  CHECK(s.controller() == id("b1"));

  snapshot snap = s.to_snapshot();
  CHECK(snap.last_index == log_index{3});
  CHECK(snap.last_term == term{1});
  ownership_state t;
  t.load(snap);
  CHECK(t == s);
}

TEST_CASE("the log is compacted into a snapshot once it holds more than max_log_entries", "[raft][snapshot]") {
  raft_core c = open_core(config("b1", {"b1"}, 4));
  persisted_state disk;
  for (int i = 0; i < 30 && c.current_role() != role::leader; ++i) {
    c.tick();
    drain(c, &disk);
  }
  REQUIRE(c.current_role() == role::leader);
  bool saw_snapshot = false;
  for (int i = 0; i < 10; ++i) {
    REQUIRE(c.propose(owner_entry{"orders", i, id("b1")}).ok());
    ready_batch rd = drain(c, &disk);
    saw_snapshot = saw_snapshot || rd.snap.has_value();
    drain(c, &disk);  // the batch carrying the snapshot produced by advance()
  }
  CHECK(c.log().size() <= 4);
  REQUIRE(c.latest_snapshot());
  const snapshot& s = *c.latest_snapshot();
  CHECK(s.last_index == c.log().snapshot_index());
  CHECK(s.controller == id("b1"));
  CHECK(s.owners.size() == static_cast<std::size_t>(s.last_index.value - 1));  // 1 controller entry + owners
  // the durable image matches: snapshot plus the entries after it
  REQUIRE(disk.snap);
  CHECK(*disk.snap == s);
  CHECK(disk.entries.front().index == s.last_index.next());
  CHECK(check_persisted(disk).ok());
  // and a restart from it yields the same applied state
  raft_core r = open_core(config("b1", {"b1"}, 4), disk);
  drain(r);
  CHECK(r.state() == c.state());
}

TEST_CASE("a follower behind the snapshot receives it, installs it and catches up", "[raft][snapshot]") {
  mini_cluster cl({"b1", "b2", "b3"}, 5);
  auto leader = cl.elect_any();
  REQUIRE(leader);
  const char* lag = *leader == "b3" ? "b2" : "b3";
  cl.isolate(lag);
  raft_core& l = cl.core(leader->c_str());
  for (int i = 0; i < 20; ++i) {
    REQUIRE(l.propose(owner_entry{"orders", i, id("b1")}).ok());
    cl.tick();
  }
  REQUIRE(l.log().snapshot_index() > cl.core(lag).log().last_index());
  uint64_t installs_before = cl.core(lag).log().snapshot_index().value;
  cl.heal();
  cl.ticks(10);
  REQUIRE(cl.core(lag).log().snapshot_index().value > installs_before);
  CHECK(cl.disk(lag).snap);
  CHECK(cl.core(lag).snapshots_installed() == 1);          // one install, counted
  CHECK(cl.core(leader->c_str()).snapshots_installed() == 0);  // the leader only compacted
  REQUIRE(l.propose(owner_entry{"audit", 0, id("b3")}).ok());
  cl.ticks(5);
  CHECK(cl.core(lag).commit_index() == l.commit_index());
  CHECK(cl.applied(lag) == cl.applied(leader->c_str()));
  CHECK(cl.applied(lag).owner_of({"audit", 0}) == id("b3"));
  CHECK(cl.applied(lag).owner_of({"orders", 7}) == id("b1"));
}

TEST_CASE("a stale snapshot is refused", "[raft][snapshot]") {
  raft_core f = open_core(config("b1"), log_of_terms({1, 1, 1, 1, 1, 1}, 1, 6));
  drain(f);
  REQUIRE(f.commit_index() == log_index{6});
  snapshot old;
  old.last_index = log_index{4};
  old.last_term = term{1};
  old.controller = id("b2");
  old.owners[{"orders", 0}] = id("b9");
  f.step(msg("b2", "b1", 1, snapshot_request{old}));
  ready_batch rd = drain(f);
  CHECK_FALSE(rd.snap);
  auto replies = of_type<snapshot_response>(rd.messages);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].second.match_index == log_index{6});
  CHECK(f.log().last_index() == log_index{6});
  CHECK(f.log().snapshot_index() == log_index{0});
  CHECK(f.state().owner_of({"orders", 0}) == id("b2"));  // unchanged (from entry 1)
  CHECK(f.snapshots_installed() == 0);
}

TEST_CASE("a snapshot that conflicts with the follower's log replaces the whole log", "[raft][snapshot]") {
  raft_core f = open_core(config("b1"), log_of_terms({1, 1, 2, 2}, 2, 2));
  persisted_state disk = log_of_terms({1, 1, 2, 2}, 2, 2);
  drain(f, &disk);
  snapshot s;
  s.last_index = log_index{3};
  s.last_term = term{3};
  s.controller = id("b2");
  s.owners[{"orders", 5}] = id("b3");
  f.step(msg("b2", "b1", 3, snapshot_request{s}));
  ready_batch rd = drain(f, &disk);
  REQUIRE(rd.snap);
  CHECK(f.log().snapshot_index() == log_index{3});
  CHECK(f.log().last_index() == log_index{3});  // entry 4 (term 2) is gone
  CHECK(f.commit_index() == log_index{3});
  CHECK(f.state().owner_of({"orders", 5}) == id("b3"));
  CHECK(disk.entries.empty());
  CHECK(disk.snap->last_index == log_index{3});
  auto replies = of_type<snapshot_response>(rd.messages);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].second.match_index == log_index{3});
}

TEST_CASE("a snapshot whose last entry the follower holds keeps the log after it", "[raft][snapshot]") {
  raft_core f = open_core(config("b1"), log_of_terms({1, 1, 1, 1}, 1));
  snapshot s;
  s.last_index = log_index{2};
  s.last_term = term{1};
  f.step(msg("b2", "b1", 1, snapshot_request{s}));
  ready_batch rd = drain(f);
  CHECK_FALSE(rd.snap);
  CHECK(f.log().last_index() == log_index{4});
  CHECK(f.commit_index() == log_index{2});
  CHECK(rd.committed.size() == 2);
}

// Moves in the metadata log (docs/cluster.md "Moves in the log"): every step
// is a compare-and-set on the move's state in log order, the owner change a
// step implies is in the same entry, and snapshots keep the moves.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core_fixture.hpp"
#include "raft/ownership_state.hpp"

using namespace moonmq::raft;
using namespace moonmq::raft::testing;

namespace {

struct log_fixture {
  ownership_state s;
  uint64_t i = 0;
  /// Applies `p` at the next index; true when it changed the image.
  bool apply(entry_payload p) {
    REQUIRE(s.apply(log_entry{term{1}, log_index{++i}, std::move(p)}).ok());
    return !s.refused(log_index{i});
  }
  static move_entry step(const std::string& move, const std::string& state, std::vector<std::string> expect,
                         uint64_t expect_epoch = 0, int64_t end = -1) {
    move_entry m;
    m.id = move;
    m.topic = "orders";
    m.partition = 0;
    m.from = id("b1");
    m.to = id("b2");
    m.state = state;
    m.expect = std::move(expect);
    m.expect_epoch = expect_epoch;
    m.end = end;
    return m;
  }
};

const topic_partition tp{"orders", 0};

}  // namespace

TEST_CASE("a move is created only by its partition's owner, one unfinished move per partition", "[raft][metadata][move]") {
  log_fixture f;
  REQUIRE(f.apply(topic_entry{"orders", 2, id("b1"), "", false}));
  auto by_other = log_fixture::step("m0", "queued", {});
  by_other.from = id("b3");
  by_other.to = id("b2");
  CHECK_FALSE(f.apply(by_other));  // b3 does not own orders/0
  CHECK(f.apply(log_fixture::step("m1", "queued", {})));
  CHECK(f.s.active_move(tp) == std::optional<std::string>{"m1"});
  CHECK_FALSE(f.apply(log_fixture::step("m2", "queued", {})));  // m1 is unfinished
  CHECK_FALSE(f.apply(log_fixture::step("m1", "queued", {})));  // the id exists
  // A step from a state the move is not in, or one the log does not allow, changes nothing.
  CHECK_FALSE(f.apply(log_fixture::step("m1", "offsets", {"cutover"})));
  CHECK_FALSE(f.apply(log_fixture::step("m1", "offsets", {"queued"})));  // queued → offsets is not a step
  CHECK(f.s.moves().at("m1").state == "queued");
  CHECK(f.apply(log_fixture::step("m1", "cancelled", {"queued", "copying"})));
  CHECK_FALSE(f.s.active_move(tp));
  CHECK(f.apply(log_fixture::step("m2", "queued", {})));  // the partition is free again
}

TEST_CASE("the cutover step names the destination owner and a rollback names the source, in the same entry",
          "[raft][metadata][move]") {
  log_fixture f;
  REQUIRE(f.apply(topic_entry{"orders", 1, id("b1"), "", false}));
  REQUIRE(f.apply(log_fixture::step("m1", "queued", {})));
  REQUIRE(f.apply(log_fixture::step("m1", "copying", {"queued"})));
  CHECK(f.s.owner_of(tp) == id("b1"));
  REQUIRE(f.apply(log_fixture::step("m1", "cutover", {"queued", "copying"})));
  CHECK(f.s.owner_of(tp) == id("b2"));
  CHECK(f.s.epoch_of(tp) == 2);
  CHECK(f.s.moves().at("m1").epoch == 2);
  REQUIRE(f.apply(log_fixture::step("m1", "offsets", {"cutover"}, 0, 812)));
  CHECK(f.s.moves().at("m1").end == 812);
  // The destination confirms (its conditional owner entry bumps the epoch):
  // a take-back conditional on the cutover's epoch is refused, so the
  // partition never has two owners.
  REQUIRE(f.apply(owner_entry{"orders", 0, id("b2"), 2}));
  CHECK_FALSE(f.apply(log_fixture::step("m1", "rolling_back", {"cutover", "offsets"}, 2)));
  CHECK(f.s.owner_of(tp) == id("b2"));
  CHECK(f.apply(log_fixture::step("m1", "done", {"cutover", "offsets"})));
  CHECK(f.s.moves().at("m1").state == "done");
  CHECK_FALSE(f.apply(log_fixture::step("m1", "failed", {"done"})));  // finished is final
}

TEST_CASE("a cancel and the source's cutover race: whichever the log orders first wins", "[raft][metadata][move]") {
  SECTION("the cancel first: the cutover is refused and the source keeps the partition") {
    log_fixture f;
    REQUIRE(f.apply(topic_entry{"orders", 1, id("b1"), "", false}));
    REQUIRE(f.apply(log_fixture::step("m1", "queued", {})));
    REQUIRE(f.apply(log_fixture::step("m1", "cancelled", {"queued", "copying"})));
    CHECK_FALSE(f.apply(log_fixture::step("m1", "cutover", {"queued", "copying"})));
    CHECK(f.s.owner_of(tp) == id("b1"));
    CHECK(f.s.epoch_of(tp) == 1);
  }
  SECTION("the cutover first: the cancel is refused") {
    log_fixture f;
    REQUIRE(f.apply(topic_entry{"orders", 1, id("b1"), "", false}));
    REQUIRE(f.apply(log_fixture::step("m1", "queued", {})));
    REQUIRE(f.apply(log_fixture::step("m1", "cutover", {"queued", "copying"})));
    CHECK_FALSE(f.apply(log_fixture::step("m1", "cancelled", {"queued", "copying"})));
    CHECK(f.s.owner_of(tp) == id("b2"));
  }
}

TEST_CASE("a controller's verdict on a fenced source's move: failed past cutover gives the partition back "
          "unless the destination confirmed",
          "[raft][metadata][move]") {
  log_fixture f;
  REQUIRE(f.apply(topic_entry{"orders", 1, id("b1"), "", false}));
  REQUIRE(f.apply(log_fixture::step("m1", "queued", {})));
  REQUIRE(f.apply(log_fixture::step("m1", "cutover", {"queued", "copying"})));
  REQUIRE(f.apply(log_fixture::step("m1", "failed", {"cutover"}, 2)));
  CHECK(f.s.owner_of(tp) == id("b1"));
  CHECK(f.s.epoch_of(tp) == 3);
  // The destination's late confirm at the cutover's epoch is refused.
  CHECK_FALSE(f.apply(owner_entry{"orders", 0, id("b2"), 2}));
  CHECK(f.s.owner_of(tp) == id("b1"));
  // `done` needs the destination as owner.
  REQUIRE(f.apply(log_fixture::step("m2", "queued", {})));
  REQUIRE(f.apply(log_fixture::step("m2", "rolling_back", {"queued"})) == false);
  REQUIRE(f.apply(log_fixture::step("m2", "cutover", {"queued"})));
  REQUIRE(f.apply(owner_entry{"orders", 0, id("b1"), 0}));  // some later owner change
  CHECK_FALSE(f.apply(log_fixture::step("m2", "done", {"cutover"})));
}

TEST_CASE("moves survive a snapshot and the wire, finished ones beyond the kept number go oldest first",
          "[raft][metadata][move][wire]") {
  log_fixture f;
  REQUIRE(f.apply(topic_entry{"orders", 1, id("b1"), "", false}));
  REQUIRE(f.apply(log_fixture::step("m1", "queued", {})));
  REQUIRE(f.apply(log_fixture::step("m1", "cutover", {"queued"})));
  auto offsets = log_fixture::step("m1", "offsets", {"cutover"}, 0, 77);
  offsets.log_start = 20;  // the sealed source's log start, recorded with its end
  REQUIRE(f.apply(offsets));
  CHECK(f.s.moves().at("m1").log_start == 20);
  auto snap = f.s.to_snapshot();
  auto parsed = snapshot_from_json(to_json(snap));
  REQUIRE(parsed.ok());
  CHECK(*parsed == snap);
  ownership_state copy;
  copy.load(*parsed);
  CHECK(copy == f.s);
  CHECK(copy.moves().at("m1").end == 77);
  CHECK(copy.moves().at("m1").log_start == 20);
  // A snapshot row of an earlier version has no log start: not recorded.
  auto older = to_json(snap);
  older["moves"][0].erase("log_start");
  REQUIRE(snapshot_from_json(older).ok());
  CHECK(snapshot_from_json(older)->moves.at("m1").log_start == -1);
  auto bad_start = to_json(snap);
  bad_start["moves"][0]["log_start"] = "x";
  CHECK_FALSE(snapshot_from_json(bad_start).ok());
  // An older snapshot has no moves.
  auto j = to_json(snap);
  j.erase("moves");
  REQUIRE(snapshot_from_json(j).ok());
  CHECK(snapshot_from_json(j)->moves.empty());
  // The entry's JSON round-trips; a malformed one is refused with the field named.
  auto e = log_fixture::step("m9", "failed", {"cutover", "offsets"}, 4, 12);
  e.error = "why";
  auto wire = entry_from_json(to_json(log_entry{term{2}, log_index{5}, e}));
  REQUIRE(wire.ok());
  CHECK(std::get<move_entry>(wire->payload) == e);
  CHECK_FALSE(to_json(log_entry{term{2}, log_index{5}, e}).contains("log_start"));  // -1: left out
  e.log_start = 3;
  wire = entry_from_json(to_json(log_entry{term{2}, log_index{5}, e}));
  REQUIRE(wire.ok());
  CHECK(std::get<move_entry>(wire->payload).log_start == 3);
  auto bad = to_json(log_entry{term{2}, log_index{5}, e});
  bad["state"] = "draining";  // the log's `cutover` covers the source's drain
  CHECK_FALSE(entry_from_json(bad).ok());
  bad = to_json(log_entry{term{2}, log_index{5}, e});
  bad["to"] = "b1";
  CHECK_FALSE(entry_from_json(bad).ok());
  // Finished moves are pruned oldest first past the kept number.
  log_fixture g;
  REQUIRE(g.apply(topic_entry{"orders", 1, id("b1"), "", false}));
  for (std::size_t n = 0; n < ownership_state::max_finished_moves_kept + 3; ++n) {
    auto name = "m" + std::to_string(n);
    REQUIRE(g.apply(log_fixture::step(name, "queued", {})));
    REQUIRE(g.apply(log_fixture::step(name, "cancelled", {"queued"})));
  }
  CHECK(g.s.moves().size() == ownership_state::max_finished_moves_kept);
  // By the entry that finished them, not by id: m0..m2 went, m10 (which
  // sorts before m3) stays.
  for (auto gone : {"m0", "m1", "m2"})
    CHECK_FALSE(g.s.moves().count(gone));
  CHECK(g.s.moves().count("m3"));
  CHECK(g.s.moves().count("m10"));
  CHECK(g.s.moves().count("m" + std::to_string(ownership_state::max_finished_moves_kept + 2)));
  // A snapshot with two unfinished moves of one partition, a move onto its
  // own source or without an end is refused.
  auto two = to_json(snap);
  auto row = two["moves"][0];
  row["id"] = "m2";
  two["moves"].push_back(row);
  CHECK_FALSE(snapshot_from_json(two).ok());
  auto self_move = to_json(snap);
  self_move["moves"][0]["to"] = "b1";
  CHECK_FALSE(snapshot_from_json(self_move).ok());
  auto no_end = to_json(snap);
  no_end["moves"][0].erase("end");
  CHECK_FALSE(snapshot_from_json(no_end).ok());
}

TEST_CASE("done needs the destination's confirm, a rollback names the cutover's epoch, and a cutover takes the "
          "partition from its source only",
          "[raft][metadata][move]") {
  log_fixture f;
  REQUIRE(f.apply(topic_entry{"orders", 1, id("b1"), "", false}));
  REQUIRE(f.apply(log_fixture::step("m1", "queued", {})));
  REQUIRE(f.apply(log_fixture::step("m1", "cutover", {"queued", "copying"})));
  // Not confirmed yet (the epoch is still the cutover's): no done, which
  // would leave the destination a sealed owner nothing unseals.
  CHECK_FALSE(f.apply(log_fixture::step("m1", "done", {"cutover", "offsets"})));
  // A rollback without the cutover's epoch could apply over a confirm.
  CHECK_FALSE(f.apply(log_fixture::step("m1", "rolling_back", {"cutover", "offsets"})));
  CHECK_FALSE(f.apply(log_fixture::step("m1", "failed", {"cutover"})));
  CHECK(f.s.owner_of(tp) == id("b2"));
  REQUIRE(f.apply(log_fixture::step("m1", "rolling_back", {"cutover", "offsets"}, 2)));
  CHECK(f.s.owner_of(tp) == id("b1"));
  REQUIRE(f.apply(log_fixture::step("m1", "failed", {"rolling_back"})));
  // An owner change between the create and the cutover (nobody's move):
  // the cutover no longer takes the partition from its source.
  REQUIRE(f.apply(log_fixture::step("m2", "queued", {})));
  REQUIRE(f.apply(owner_entry{"orders", 0, id("b3"), 0}));
  CHECK_FALSE(f.apply(log_fixture::step("m2", "cutover", {"queued", "copying"})));
  CHECK(f.s.owner_of(tp) == id("b3"));
  // A source whose cutover never applied ends its move before cutover.
  log_fixture g;
  REQUIRE(g.apply(topic_entry{"orders", 1, id("b1"), "", false}));
  REQUIRE(g.apply(log_fixture::step("m1", "queued", {})));
  CHECK_FALSE(g.apply(log_fixture::step("m1", "rolling_back", {"cutover", "offsets"}, 1)));
  CHECK(g.apply(log_fixture::step("m1", "failed", {"queued", "copying"})));
  CHECK(g.s.owner_of(tp) == id("b1"));
  CHECK(g.s.epoch_of(tp) == 1);
}

TEST_CASE("shared storage: the destination's own done at the cutover's epoch and a take-back exclude each other",
          "[raft][metadata][move]") {
  auto cut_over = [](log_fixture& f) {
    REQUIRE(f.apply(topic_entry{"orders", 1, id("b1"), "", false}));
    REQUIRE(f.apply(log_fixture::step("m1", "queued", {})));
    REQUIRE(f.apply(log_fixture::step("m1", "cutover", {"queued", "copying"})));
    REQUIRE(f.s.epoch_of(tp) == 2);
  };
  SECTION("the done first: the move ends at the cutover's epoch and the take-back is refused") {
    log_fixture f;
    cut_over(f);
    // Naming another epoch than the cutover's, or none, is not the
    // destination's own done.
    CHECK_FALSE(f.apply(log_fixture::step("m1", "done", {"cutover", "offsets"}, 1)));
    CHECK_FALSE(f.apply(log_fixture::step("m1", "done", {"cutover", "offsets"}, 3)));
    CHECK(f.apply(log_fixture::step("m1", "done", {"cutover", "offsets"}, 2)));
    CHECK(f.s.moves().at("m1").state == "done");
    CHECK(f.s.owner_of(tp) == id("b2"));
    CHECK(f.s.epoch_of(tp) == 2);  // no bump: the destination goes on writing where it is
    CHECK_FALSE(f.apply(log_fixture::step("m1", "rolling_back", {"cutover", "offsets"}, 2)));
    CHECK(f.s.owner_of(tp) == id("b2"));
  }
  SECTION("the take-back first: the done is refused and the source owns the partition at the next epoch") {
    log_fixture f;
    cut_over(f);
    REQUIRE(f.apply(log_fixture::step("m1", "rolling_back", {"cutover", "offsets"}, 2)));
    CHECK_FALSE(f.apply(log_fixture::step("m1", "done", {"cutover", "offsets"}, 2)));
    CHECK(f.s.owner_of(tp) == id("b1"));
    CHECK(f.s.epoch_of(tp) == 3);
    CHECK(f.s.moves().at("m1").state == "rolling_back");
  }
}

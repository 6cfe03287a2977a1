#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <utility>

#include "cluster/move_journal.hpp"
#include "tests/support/process.hpp"

using namespace moonmq::cluster;
using moonmq::test::temp_dir;
using m = move_state;

namespace {

std::string file_in(const temp_dir& dir) {
  return dir.path() + "/" + move_journal::file_name;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << text;
}

move_entry make_move(std::string id = "m-1", topic_partition tp = {"orders", 3}) {
  move_entry e;
  e.move_id = std::move(id);
  e.tp = std::move(tp);
  e.from = broker_id{"b1"};
  e.to = broker_id{"b2"};
  e.at = epoch{4};
  e.started_ms = 1000;
  return e;
}

/// Opens a journal in `dir` holding one move driven to `target` along the
/// happy path (or the rollback path for rolling_back / failed-after-cutover).
move_journal journal_at(const temp_dir& dir, move_state target) {
  auto j = move_journal::open(dir.path());
  REQUIRE(j.ok());
  REQUIRE(j->add(make_move()).ok());
  const move_state path[] = {m::copying, m::cutover, m::draining, m::offsets, m::done};
  int64_t now = 2000;
  if (target == m::queued)
    return std::move(j).value();
  if (target == m::rolling_back) {
    REQUIRE(j->transition("m-1", m::copying, now++).ok());
    REQUIRE(j->transition("m-1", m::cutover, now++).ok());
    REQUIRE(j->transition("m-1", m::draining, now++).ok());
    REQUIRE(j->transition("m-1", m::rolling_back, now++, "drain failed: b2 unreachable").ok());
    return std::move(j).value();
  }
  if (target == m::failed || target == m::cancelled) {
    REQUIRE(j->transition("m-1", target, now, "stopped").ok());
    return std::move(j).value();
  }
  for (auto s : path) {
    REQUIRE(j->transition("m-1", s, now++).ok());
    if (s == target)
      break;
  }
  return std::move(j).value();
}

}  // namespace

TEST_CASE("the happy path queued→copying→cutover→draining→offsets→done is journaled durably", "[cluster][journal]") {
  temp_dir dir;
  {
    auto j = move_journal::open(dir.path());
    REQUIRE(j.ok());
    REQUIRE(j->add(make_move()).ok());
    CHECK(j->find("m-1")->state == m::queued);
    REQUIRE(j->transition("m-1", m::copying, 1100).ok());
    REQUIRE(j->record_progress("m-1", 262144, 1048576, 812, 1200).ok());
    REQUIRE(j->transition("m-1", m::cutover, 1300).ok());
    REQUIRE(j->transition("m-1", m::draining, 1400).ok());
    REQUIRE(j->record_progress("m-1", 1048576, 1048600, 4000, 1500).ok());
    REQUIRE(j->transition("m-1", m::offsets, 1600).ok());
  }
  auto j = move_journal::open(dir.path());
  REQUIRE(j.ok());
  const move_entry* e = j->find("m-1");
  REQUIRE(e != nullptr);
  CHECK(e->state == m::offsets);
  CHECK(e->bytes_copied == 1048576);
  CHECK(e->bytes_total == 1048600);
  CHECK(e->copy_position == 4000);
  CHECK(e->started_ms == 1000);
  CHECK(e->updated_ms == 1600);
  CHECK(e->at == epoch{4});
  CHECK(e->from == broker_id{"b1"});
  CHECK(e->to == broker_id{"b2"});
  REQUIRE(j->transition("m-1", m::done, 1700).ok());
  CHECK(j->unfinished().empty());
  CHECK(j->active_for({"orders", 3}) == nullptr);
  CHECK(j->latest_for({"orders", 3})->state == m::done);
}

TEST_CASE("the transition table allows exactly the MOVE protocol's edges", "[cluster][journal]") {
  const move_state all[] = {m::queued, m::copying,  m::cutover, m::draining, m::offsets,
                            m::rolling_back, m::done, m::failed,  m::cancelled};
  std::set<std::pair<move_state, move_state>> allowed = {
      {m::queued, m::copying},         {m::queued, m::failed},       {m::queued, m::cancelled},
      {m::copying, m::cutover},        {m::copying, m::failed},      {m::copying, m::cancelled},
      {m::cutover, m::draining},       {m::cutover, m::rolling_back}, {m::draining, m::offsets},
      {m::draining, m::rolling_back},  {m::offsets, m::done},        {m::rolling_back, m::failed},
      {m::offsets, m::rolling_back},  // a take-back the destination never confirmed (docs/metadata.md)
      {m::cutover, m::offsets},       // shared storage: nothing to drain (docs/shared-storage.md)
  };
  for (auto a : all) {
    for (auto b : all) {
      INFO(to_string(a) << " -> " << to_string(b));
      CHECK(allowed_transition(a, b) == (allowed.count({a, b}) == 1));
    }
  }
}

TEST_CASE("invalid transitions are refused and change nothing", "[cluster][journal]") {
  temp_dir dir;
  auto j = journal_at(dir, m::draining);
  auto r = j.transition("m-1", m::cancelled, 9000, "operator");
  REQUIRE_FALSE(r.ok());
  CHECK(r.err().code == errc::invalid_transition);
  CHECK_THAT(r.err().message, Catch::Contains("draining") && Catch::Contains("cancelled"));
  CHECK(j.transition("m-1", m::failed, 9000, "x").err().code == errc::invalid_transition);  // must roll back first
  CHECK(j.transition("m-1", m::done, 9000).err().code == errc::invalid_transition);
  CHECK(j.transition("nope", m::offsets, 9000).err().code == errc::unknown_move);
  CHECK(j.find("m-1")->state == m::draining);
  auto again = move_journal::open(dir.path());
  REQUIRE(again.ok());
  CHECK(again->find("m-1")->state == m::draining);
}

TEST_CASE("failed, cancelled and rolling_back need an error text", "[cluster][journal]") {
  temp_dir dir;
  auto j = journal_at(dir, m::copying);
  CHECK(j.transition("m-1", m::failed, 3000).err().code == errc::invalid_argument);
  CHECK(j.transition("m-1", m::cancelled, 3000).err().code == errc::invalid_argument);
  REQUIRE(j.transition("m-1", m::cancelled, 3000, "cancelled by operator").ok());
  CHECK(j.find("m-1")->error == "cancelled by operator");
  CHECK(is_terminal(j.find("m-1")->state));
}

TEST_CASE("one unfinished move per partition, ids are unique", "[cluster][journal]") {
  temp_dir dir;
  auto j = move_journal::open(dir.path());
  REQUIRE(j.ok());
  REQUIRE(j->add(make_move("m-1")).ok());
  auto busy = j->add(make_move("m-2"));
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.err().code == errc::move_in_progress);
  CHECK(j->add(make_move("m-1", {"other", 0})).err().code == errc::invalid_argument);
  REQUIRE(j->add(make_move("m-3", {"orders", 4})).ok());
  REQUIRE(j->transition("m-1", m::failed, 1500, "b2 down").ok());
  REQUIRE(j->add(make_move("m-2")).ok());  // the partition is free again
  CHECK(j->active_for({"orders", 3})->move_id == "m-2");
  CHECK(j->unfinished().size() == 2);
}

TEST_CASE("add refuses malformed moves", "[cluster][journal]") {
  temp_dir dir;
  auto j = move_journal::open(dir.path());
  REQUIRE(j.ok());
  auto same = make_move();
  same.to = same.from;
  CHECK(j->add(same).err().code == errc::invalid_argument);
  auto bad_id = make_move("m 1");
  CHECK(j->add(bad_id).err().code == errc::invalid_argument);
  auto started = make_move();
  started.state = m::copying;
  CHECK(j->add(started).err().code == errc::invalid_argument);
  auto negative = make_move();
  negative.tp.partition = -2;
  CHECK(j->add(negative).err().code == errc::invalid_argument);
  CHECK(j->entries().empty());
}

TEST_CASE("progress only while copying or draining, never backwards", "[cluster][journal]") {
  temp_dir dir;
  auto j = journal_at(dir, m::queued);
  CHECK(j.record_progress("m-1", 10, 100, 1, 1100).err().code == errc::invalid_transition);
  REQUIRE(j.transition("m-1", m::copying, 1100).ok());
  REQUIRE(j.record_progress("m-1", 50, 100, 5, 1200).ok());
  CHECK(j.record_progress("m-1", 40, 100, 6, 1300).err().code == errc::invalid_argument);
  CHECK(j.record_progress("m-1", 60, 100, 4, 1300).err().code == errc::invalid_argument);
  CHECK(j.record_progress("m-1", 200, 100, 9, 1300).err().code == errc::invalid_argument);
  CHECK(j.record_progress("x", 1, 1, 1, 1).err().code == errc::unknown_move);
  CHECK(j.find("m-1")->bytes_copied == 50);
  REQUIRE(j.transition("m-1", m::cutover, 1400).ok());
  CHECK(j.record_progress("m-1", 60, 100, 6, 1500).err().code == errc::invalid_transition);
}

TEST_CASE("recovery: moves before cutover abort, owner stays the source", "[cluster][journal][recovery]") {
  temp_dir a;
  auto queued = recovery_decision(*journal_at(a, m::queued).find("m-1"));
  CHECK(queued.action == recovery_action::abort);
  CHECK(queued.next == m::failed);
  CHECK_FALSE(queued.cleanup_destination);  // nothing was sent yet
  CHECK_FALSE(queued.reassert_destination_owner);
  CHECK_FALSE(queued.restore_source_owner);

  temp_dir b;
  auto copying = recovery_decision(*journal_at(b, m::copying).find("m-1"));
  CHECK(copying.action == recovery_action::abort);
  CHECK(copying.next == m::failed);
  CHECK(copying.cleanup_destination);
  CHECK_FALSE(copying.reassert_destination_owner);
  CHECK_THAT(copying.reason, Catch::Contains("b2"));
}

TEST_CASE("recovery: moves past cutover resume forward at their step", "[cluster][journal][recovery]") {
  for (auto s : {m::cutover, m::draining, m::offsets}) {
    temp_dir dir;
    auto j = journal_at(dir, s);
    auto p = recovery_decision(*j.find("m-1"));
    INFO(to_string(s));
    CHECK(p.action == recovery_action::resume);
    CHECK(p.next == s);
    CHECK(p.reassert_destination_owner);
    CHECK_FALSE(p.cleanup_destination);
    CHECK_FALSE(p.restore_source_owner);
  }
}

TEST_CASE("recovery: a rollback in progress is finished", "[cluster][journal][recovery]") {
  temp_dir dir;
  auto j = journal_at(dir, m::rolling_back);
  auto p = recovery_decision(*j.find("m-1"));
  CHECK(p.action == recovery_action::finish_rollback);
  CHECK(p.next == m::failed);
  CHECK(p.restore_source_owner);
  CHECK(p.cleanup_destination);
  CHECK(p.reason == "drain failed: b2 unreachable");
  // The plan's next state is a legal transition from the journaled one.
  REQUIRE(j.transition("m-1", p.next, 9000, p.reason).ok());
}

TEST_CASE("recovery: finished moves need nothing", "[cluster][journal][recovery]") {
  for (auto s : {m::done, m::failed, m::cancelled}) {
    temp_dir dir;
    auto j = journal_at(dir, s);
    INFO(to_string(s));
    CHECK(recovery_decision(*j.find("m-1")).action == recovery_action::none);
  }
}

TEST_CASE("every abort/rollback decision is a legal transition from its state", "[cluster][journal][recovery]") {
  for (auto s : {m::queued, m::copying, m::rolling_back}) {
    move_entry e = make_move();
    e.state = s;
    auto p = recovery_decision(e);
    INFO(to_string(s));
    CHECK(allowed_transition(s, p.next));
  }
}

TEST_CASE("prune_finished drops old terminal rows only", "[cluster][journal]") {
  temp_dir dir;
  auto j = move_journal::open(dir.path());
  REQUIRE(j.ok());
  REQUIRE(j->add(make_move("m-1", {"a", 0})).ok());
  REQUIRE(j->add(make_move("m-2", {"a", 1})).ok());
  REQUIRE(j->add(make_move("m-3", {"a", 2})).ok());
  REQUIRE(j->transition("m-1", m::cancelled, 1500, "op").ok());
  REQUIRE(j->transition("m-2", m::cancelled, 5000, "op").ok());
  auto n = j->prune_finished(2000);
  REQUIRE(n.ok());
  CHECK(*n == 1);
  CHECK(j->find("m-1") == nullptr);
  CHECK(j->find("m-2") != nullptr);
  CHECK(j->find("m-3") != nullptr);
  auto again = move_journal::open(dir.path());
  REQUIRE(again.ok());
  CHECK(again->entries().size() == 2);
}

TEST_CASE("state names round-trip", "[cluster][journal]") {
  for (auto name : {"queued", "copying", "cutover", "draining", "offsets", "rolling_back", "done", "failed",
                    "cancelled"}) {
    auto s = parse_move_state(name);
    REQUIRE(s.has_value());
    CHECK(std::string{to_string(*s)} == name);
  }
  CHECK_FALSE(parse_move_state("rollback").has_value());
  CHECK(is_past_cutover(m::cutover));
  CHECK_FALSE(is_past_cutover(m::copying));
}

TEST_CASE("a corrupt journal is refused with the file named", "[cluster][journal]") {
  const std::string row =
      R"({"move_id":"m-1","topic":"orders","partition":3,"from":"b1","to":"b2","epoch":4,"state":"copying",)"
      R"("bytes_copied":1,"bytes_total":2,"copy_position":0,"error":"","started_ms":1,"updated_ms":2})";
  const std::string bad[] = {
      "",
      R"({"version":1,"moves":[)" + row.substr(0, 40),
      R"({"version":1})",
      R"({"version":1,"moves":[)" + std::string{row}.replace(row.find("copying"), 7, "rollback") + "]}",
      R"({"version":1,"moves":[)" + std::string{row}.replace(row.find("\"b2\""), 4, "\"b1\"") + "]}",
      R"({"version":1,"moves":[)" + std::string{row}.replace(row.find("1,\"bytes_total"), 1, "-1") + "]}",
      R"({"version":1,"moves":[)" + row + "," + row + "]}",  // two unfinished moves of one partition
      R"({"version":1,"moves":[)" + row.substr(0, row.size() - 1) + R"(,"origin":"cron"}]})",
      R"({"version":1,"moves":[)" + row.substr(0, row.size() - 1) + R"(,"origin":7}]})",
      R"({"version":1,"moves":[)" + row.substr(0, row.size() - 1) + R"(,"reason":["x"]}]})",
      R"({"version":1,"moves":[)" + row.substr(0, row.size() - 1) + R"(,"reason":"a\u0007bell"}]})",
  };
  for (const auto& text : bad) {
    temp_dir dir;
    write_text(file_in(dir), text);
    INFO("file contents: " << text);
    auto j = move_journal::open(dir.path());
    REQUIRE_FALSE(j.ok());
    CHECK(j.err().code == errc::corrupt_state);
    CHECK_THAT(j.err().message, Catch::Contains(file_in(dir)));
  }
  // The well-formed row itself loads.
  temp_dir ok;
  write_text(file_in(ok), R"({"version":1,"moves":[)" + row + "]}");
  auto j = move_journal::open(ok.path());
  REQUIRE(j.ok());
  CHECK(j->find("m-1")->state == m::copying);
}

TEST_CASE("a torn temp journal is ignored", "[cluster][journal]") {
  temp_dir dir;
  { (void)journal_at(dir, m::copying); }
  write_text(file_in(dir) + ".tmp", R"({"version":1,"moves":[{"move_id")");
  auto j = move_journal::open(dir.path());
  REQUIRE(j.ok());
  CHECK(j->find("m-1")->state == m::copying);
}

TEST_CASE("a move's origin and reason are journaled and read back, rows without them load with none",
          "[cluster][journal]") {
  temp_dir dir;
  {
    auto j = move_journal::open(dir.path());
    REQUIRE(j.ok());
    auto e = make_move();
    e.origin = "operator";
    e.reason = "ticket OPS-17: empty rack r1 \xe2\x80\x94 maintenance";
    REQUIRE(j->add(e).ok());
    auto b = make_move("m-2", {"orders", 4});
    b.origin = "balancer";
    REQUIRE(j->add(b).ok());
    auto bad = make_move("m-3", {"orders", 5});
    bad.reason = std::string(max_move_reason_bytes + 1, 'x');
    CHECK(j->add(bad).err().code == errc::invalid_argument);
  }
  auto again = move_journal::open(dir.path());
  REQUIRE(again.ok());
  CHECK(again->find("m-1")->origin == "operator");
  CHECK(again->find("m-1")->reason == "ticket OPS-17: empty rack r1 \xe2\x80\x94 maintenance");
  CHECK(again->find("m-2")->origin == "balancer");
  CHECK(again->find("m-2")->reason.empty());
  CHECK(again->find("m-3") == nullptr);
  CHECK(valid_move_origin(""));
  CHECK_FALSE(valid_move_origin("admin"));
}

TEST_CASE("a take-back is proposed only at the cutover's epoch and never overrules a confirm", "[cluster][journal]") {
  move_entry e;
  e.move_id = "m-1";
  e.tp = {"orders", 3};
  e.from = broker_id{"b1"};
  e.to = broker_id{"b2"};
  e.state = m::offsets;
  e.owner_epoch = 2;  // the cutover made b2 owner at epoch 2
  using a = take_back_action;
  // Still at the cutover's epoch: nothing confirmed yet.
  CHECK(take_back_decision(e, "b2", 2, false) == a::propose);
  // Refused, and the image has not shown why: wait, do not propose again.
  CHECK(take_back_decision(e, "b2", 2, true) == a::wait);
  // The destination's confirm moved the epoch (its answer was lost): keep
  // confirming, whether or not a take-back was refused meanwhile.
  CHECK(take_back_decision(e, "b2", 3, false) == a::keep_confirming);
  CHECK(take_back_decision(e, "b2", 5, true) == a::keep_confirming);
  // The source owns it again: a take-back applied; finish the rollback.
  CHECK(take_back_decision(e, "b1", 3, true) == a::rollback);
  CHECK(take_back_decision(e, "b1", 3, false) == a::rollback);
  // Confirmed and moved on to another broker since: the move is over.
  CHECK(take_back_decision(e, "b3", 4, false) == a::done);
  // No epoch recorded (a row from before owner epochs): never taken back.
  e.owner_epoch = 0;
  CHECK(take_back_decision(e, "b2", 2, false) == a::keep_confirming);
  CHECK(take_back_decision(e, "b1", 3, false) == a::rollback);
}

TEST_CASE("the log shows a destination confirmed only while it owns the partition past the cutover's epoch",
          "[cluster][journal]") {
  // The cutover made b2 owner at epoch 4.
  CHECK_FALSE(destination_confirmed("b2", 4, "b2", 4));  // at the cutover's epoch: not yet
  CHECK(destination_confirmed("b2", 4, "b2", 5));        // its conditional owner entry applied
  CHECK(destination_confirmed("b2", 4, "b2", 9));        // and later epochs of its own
  CHECK_FALSE(destination_confirmed("b2", 4, "b1", 5));  // taken back by the source
  CHECK_FALSE(destination_confirmed("b2", 4, "b3", 6));  // moved on (or failed over) since
  CHECK_FALSE(destination_confirmed("b2", 0, "b2", 7));  // no cutover epoch known: never by this rule
  CHECK_FALSE(destination_confirmed("", 4, "", 5));      // no owner at all
}

TEST_CASE("a row's owner epoch is written with its transition and read back, older rows read 0",
          "[cluster][journal]") {
  moonmq::test::temp_dir dir;
  auto j = move_journal::open(dir.path());
  REQUIRE(j.ok());
  move_entry e;
  e.move_id = "m-9";
  e.tp = {"orders", 1};
  e.from = broker_id{"b1"};
  e.to = broker_id{"b2"};
  e.at = epoch{3};
  e.started_ms = 1000;
  REQUIRE(j->add(e).ok());
  for (auto s : {m::copying, m::cutover, m::draining})
    REQUIRE(j->transition("m-9", s, 1100).ok());
  REQUIRE(j->transition("m-9", m::offsets, 1200, {}, 7).ok());
  CHECK(j->find("m-9")->owner_epoch == 7);
  auto again = move_journal::open(dir.path());
  REQUIRE(again.ok());
  CHECK(again->find("m-9")->owner_epoch == 7);
  REQUIRE(again->transition("m-9", m::rolling_back, 1300, "taken back").ok());
  CHECK(again->find("m-9")->owner_epoch == 7);  // kept
}

TEST_CASE("a reason is text of at most 256 bytes, and clipping makes any text one", "[cluster][journal]") {
  CHECK(valid_move_reason(""));
  CHECK(valid_move_reason("drain: b3 empties (rack r1)"));
  CHECK(valid_move_reason("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"));  // é, €, a 4-byte character
  CHECK(valid_move_reason(std::string(max_move_reason_bytes, 'x')));
  CHECK_FALSE(valid_move_reason(std::string(max_move_reason_bytes + 1, 'x')));
  CHECK_FALSE(valid_move_reason("tab\there"));
  CHECK_FALSE(valid_move_reason("del\x7f"));
  CHECK_FALSE(valid_move_reason("c1 \xc2\x85 next line"));        // U+0085
  CHECK_FALSE(valid_move_reason("line \xe2\x80\xa8 separator"));  // U+2028
  CHECK(valid_move_reason("nbsp\xc2\xa0ok"));                     // U+00A0 is text
  CHECK_FALSE(valid_move_reason("\xc3"));          // a cut character
  CHECK_FALSE(valid_move_reason("\xc0\xaf"));      // an overlong form
  CHECK_FALSE(valid_move_reason("\xed\xa0\x80"));  // a surrogate
  CHECK_FALSE(valid_move_reason("\xf4\x90\x80\x80"));  // above U+10FFFF

  CHECK(clip_move_reason("NW_IN: fine") == "NW_IN: fine");
  CHECK(clip_move_reason("a\nb\x01" "c") == "a b c");
  CHECK(clip_move_reason("bad \xff byte") == "bad ? byte");
  CHECK(clip_move_reason("a\xc2\x85" "b\xe2\x80\xa9" "c") == "a b c");
  // Cut at a character boundary, with an ellipsis, whatever the width of
  // the character at the cut.
  for (const std::string unit : {"x", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x9a\x80"}) {
    std::string text;
    while (text.size() < 2 * max_move_reason_bytes)
      text += unit;
    auto clipped = clip_move_reason(text);
    INFO(unit.size());
    CHECK(valid_move_reason(clipped));
    CHECK(clipped.size() <= max_move_reason_bytes);
    CHECK(clipped.size() > max_move_reason_bytes - 3 - unit.size());
    CHECK(clipped.substr(clipped.size() - 3) == "...");
    CHECK(clipped.substr(0, unit.size()) == unit);
  }
}

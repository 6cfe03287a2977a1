// The reassignment journal as planner input (goals/move_history.hpp,
// docs/balancer.md "Stability rules"): running moves are in flight, ended
// moves hold their partition still for the cooldown of their origin, and a
// partition avoids the broker it left or failed to reach for longer.

#include <catch2/catch.hpp>

#include <limits>
#include <nlohmann/json.hpp>

#include "goals/move_history.hpp"
#include "tests/goals/model_builder.hpp"

using namespace moonmq::goals;
using moonmq::test::broker;
using moonmq::test::replica;

namespace {

constexpr std::int64_t kNow = 10'000'000;

// Interval 60 s: cooldown 180 s; operator cooldown 3600 s; avoid 1800 s.
const stability_windows kWindows = make_stability_windows(60, 3600, 1800);

cluster_model three_brokers() {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3")};
  for (int p = 0; p < 4; ++p) m.replicas.push_back(replica("t", p, "b1", 10.0));
  return m;
}

journal_move row(int partition, std::string state, std::int64_t ended_ago_ms, std::string origin = "balancer",
                 std::string from = "b1", std::string to = "b3") {
  journal_move m;
  m.tp = {"t", partition};
  m.from = std::move(from);
  m.to = std::move(to);
  m.state = std::move(state);
  m.origin = std::move(origin);
  m.updated_ms = kNow - ended_ago_ms;
  return m;
}

cluster_model with(const std::vector<journal_move>& rows, const stability_windows& w = kWindows) {
  auto m = three_brokers();
  add_move_history(m, rows, w, kNow);
  return m;
}

std::vector<std::pair<std::string, std::string>> avoided(const cluster_model& m) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& a : m.avoid) out.push_back({a.tp.topic + "-" + std::to_string(a.tp.partition), a.broker});
  return out;
}

}  // namespace

TEST_CASE("stability windows: three intervals, the operator's cooldown, avoid never below the cooldown",
          "[move_history]") {
  CHECK(kWindows.cooldown_for("balancer") == 180'000);
  CHECK(kWindows.cooldown_for("") == 180'000);
  CHECK(kWindows.cooldown_for("operator") == 3'600'000);
  CHECK(kWindows.avoid_for("balancer") == 1'800'000);
  CHECK(kWindows.avoid_for("operator") == 3'600'000);
  const auto slow = make_stability_windows(3600, 0, 60);  // cooldown 3 h above both keys
  CHECK(slow.cooldown_for("operator") == 3 * 3'600'000);
  CHECK(slow.avoid_for("balancer") == 3 * 3'600'000);
  const auto silly = make_stability_windows(-5, std::numeric_limits<std::int64_t>::max(), -1);
  CHECK(silly.cooldown_ms == 0);
  CHECK(silly.avoid_ms == 0);
  CHECK(silly.manual_cooldown_ms > 0);  // clamped, not overflowed
}

TEST_CASE("running moves are in flight at their destination, a rollback at its source", "[move_history]") {
  auto m = with({row(0, "copying", 5), row(1, "queued", 5), row(2, "rolling_back", 5), row(3, "offsets", 5)});
  REQUIRE(m.in_flight.size() == 4);
  CHECK(m.in_flight[0].to == "b3");
  CHECK(m.in_flight[1].to == "b3");
  CHECK(m.in_flight[2].tp.partition == 2);
  CHECK(m.in_flight[2].to == "b1");  // ownership goes back to the source
  CHECK(m.in_flight[3].to == "b3");
  CHECK(m.cooldown.empty());
  CHECK(m.avoid.empty());
}

TEST_CASE("a running move to an unknown broker holds the partition still, one of an unknown partition is "
          "left out",
          "[move_history]") {
  auto m = with({row(0, "copying", 5, "balancer", "b1", "b9"), row(7, "copying", 5)});
  CHECK(m.in_flight.empty());
  REQUIRE(m.cooldown.size() == 1);
  CHECK(m.cooldown[0] == topic_partition{"t", 0});
  // A row without a state is not known to have ended: the partition stays still.
  auto blank = with({row(1, "", 5)});
  REQUIRE(blank.in_flight.size() == 1);
}

TEST_CASE("a done move holds its partition for the cooldown and keeps it off its source for the avoid window",
          "[move_history]") {
  SECTION("within the cooldown") {
    auto m = with({row(0, "done", 179'999)});
    CHECK(m.cooldown == std::vector<topic_partition>{{"t", 0}});
    CHECK(avoided(m) == std::vector<std::pair<std::string, std::string>>{{"t-0", "b1"}});
    CHECK(m.in_flight.empty());
  }
  SECTION("after the cooldown, within the avoid window") {
    auto m = with({row(0, "done", 180'000)});
    CHECK(m.cooldown.empty());
    CHECK(avoided(m) == std::vector<std::pair<std::string, std::string>>{{"t-0", "b1"}});
  }
  SECTION("after the avoid window") {
    auto m = with({row(0, "done", 1'800'000)});
    CHECK(m.cooldown.empty());
    CHECK(m.avoid.empty());
  }
  SECTION("an operator's move: ManualMoveCooldownSeconds for both") {
    auto m = with({row(0, "done", 3'599'999, "operator"), row(1, "done", 3'600'000, "operator")});
    CHECK(m.cooldown == std::vector<topic_partition>{{"t", 0}});
    CHECK(avoided(m) == std::vector<std::pair<std::string, std::string>>{{"t-0", "b1"}});
  }
}

TEST_CASE("a failed, rolled back or cancelled move holds its partition and keeps it off its destination",
          "[move_history]") {
  // A rolled-back move ends "failed" in the journal (docs/cluster.md).
  auto m = with({row(0, "failed", 1000), row(1, "cancelled", 1000, "balancer", "b1", "b2"),
                 row(2, "failed", 600'000), row(3, "failed", 1'800'000)});
  CHECK(m.cooldown == std::vector<topic_partition>{{"t", 0}, {"t", 1}});
  CHECK(avoided(m) ==
        std::vector<std::pair<std::string, std::string>>{{"t-0", "b3"}, {"t-1", "b2"}, {"t-2", "b3"}});
  CHECK(m.in_flight.empty());
}

TEST_CASE("every broker a partition recently left is avoided, once, and unknown brokers are left out",
          "[move_history]") {
  auto m = with({row(0, "done", 900'000, "balancer", "b1", "b2"), row(0, "done", 300'000, "balancer", "b2", "b3"),
                 row(0, "done", 300'000, "balancer", "b2", "b3"), row(1, "done", 1000, "balancer", "b9", "b1"),
                 row(2, "failed", 1000, "balancer", "b1", "b9")});
  CHECK(avoided(m) == std::vector<std::pair<std::string, std::string>>{{"t-0", "b1"}, {"t-0", "b2"}});
  CHECK(m.cooldown == std::vector<topic_partition>{{"t", 1}, {"t", 2}});
}

TEST_CASE("rows stamped ahead of the clock count as just ended, extreme stamps do not overflow",
          "[move_history]") {
  auto r1 = row(0, "done", 0);
  r1.updated_ms = kNow + 5000;
  auto r2 = row(1, "failed", 0);
  r2.updated_ms = std::numeric_limits<std::int64_t>::min();
  auto r3 = row(2, "failed", 0);
  r3.updated_ms = std::numeric_limits<std::int64_t>::max();
  auto m = with({r1, r2, r3});
  CHECK(m.cooldown == std::vector<topic_partition>{{"t", 0}, {"t", 2}});
}

TEST_CASE("journal rows are read from JSON, malformed ones are skipped, not guessed", "[move_history]") {
  using nlohmann::json;
  auto ok = journal_move_from_json(json{{"topic", "t"}, {"partition", 2}, {"from", "b1"}, {"to", "b2"},
                                        {"state", "failed"}, {"origin", "operator"}, {"updated_ms", 1234},
                                        {"bytes_copied", 9}});
  REQUIRE(ok);
  CHECK(ok->tp == topic_partition{"t", 2});
  CHECK(ok->from == "b1");
  CHECK(ok->to == "b2");
  CHECK(ok->state == "failed");
  CHECK(ok->origin == "operator");
  CHECK(ok->updated_ms == 1234);
  auto older = journal_move_from_json(json{{"topic", "t"}, {"partition", 0}, {"state", 7}, {"updated_ms", "x"}});
  REQUIRE(older);  // wrong-typed fields read as empty: a state-less row counts as running
  CHECK(older->state.empty());
  CHECK(older->origin.empty());
  CHECK(older->updated_ms == 0);
  CHECK_FALSE(journal_move_from_json(json{{"partition", 0}}));
  CHECK_FALSE(journal_move_from_json(json{{"topic", ""}, {"partition", 0}}));
  CHECK_FALSE(journal_move_from_json(json{{"topic", "t"}}));
  CHECK_FALSE(journal_move_from_json(json{{"topic", "t"}, {"partition", -1}}));
  CHECK_FALSE(journal_move_from_json(json{{"topic", "t"}, {"partition", 1LL << 40}}));
  CHECK_FALSE(journal_move_from_json(json{{"topic", "t"}, {"partition", "0"}}));
  CHECK_FALSE(journal_move_from_json(json::array()));
}

TEST_CASE("a move superseded by a failover holds its partition no more, one onto a dead broker still holding it does",
          "[move_history]") {
  cluster_model m;
  m.brokers = {broker("b1"), broker("b2"), broker("b3", false)};
  m.replicas = {replica("t", 0, "b2"), replica("t", 1, "b3"), replica("t", 2, "b2"), replica("t", 3, "b1")};
  // t-0: done b1 -> b3, then failed over to b2 (superseded). t-1: done
  // b1 -> b3 and still on the dead b3 (local storage: it waits there).
  // t-2: failed b3 -> b1, the dead source b3 then failed over to b2
  // (superseded). t-3: done b3 -> b1 (b1 alive: the row holds).
  add_move_history(m,
                   {row(0, "done", 1000), row(1, "done", 1000), row(2, "failed", 1000, "balancer", "b3", "b1"),
                    row(3, "done", 1000, "balancer", "b3", "b1")},
                   kWindows, kNow);
  CHECK(m.cooldown == std::vector<topic_partition>{{"t", 1}, {"t", 3}});
  CHECK(avoided(m) == std::vector<std::pair<std::string, std::string>>{{"t-1", "b1"}, {"t-3", "b3"}});
}

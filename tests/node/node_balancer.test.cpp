// The balance loop on real moonmq-node processes on loopback (issue 6's
// "Done when", actors/balancer.hpp):
//  - DryRun plans but moves nothing; a live loop moves the planned
//    partitions, the cluster converges within a few passes, a later pass on
//    the balanced cluster plans nothing and every record is readable from
//    the new owners;
//  - rates appear from the second pass; a peer restarted in the middle never
//    shows a negative load nor draws a move while it is not a destination;
//  - a peer whose load report fails leaves the pass running with that peer
//    inactive and never a destination;
//  - of brokers running a live loop only the Raft leader (the controller)
//    acts, a new leader's loop takes over; an unauthenticated claim changes
//    nothing;
//  - /metrics of a balancing node passes `promtool check metrics`.
// Passes run every second (Autobalance.IntervalSeconds=1) on windows of 3
// samples trusted from the first rate (Window=3, MinValid=1): a partition is
// trusted from its second report, the first only primes its byte counters.

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "tests/node/balancer_passes.hpp"

using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace moonmq::test::balancer_passes;
using namespace std::chrono_literals;

TEST_CASE("a DryRun balance loop plans moves off the loaded broker and moves nothing", "[node][balancer][scenario]") {
  move_cluster c{{"b1", "b2", "b3"}};
  c.start(1);
  c.start(2);
  c.start(0, autobalance(true));
  create_topic(c.client(0), "dry", 6);  // every partition on b1 only
  pass_watcher w{[&] { return c.admin(0); }};
  if (!w.wait(any_planned, 20s))
    FAIL("no pass planned a move within 20 s; status " << w.status().dump() << "\n" << log_tails(c));
  auto first_plan = w.count();
  REQUIRE(w.wait_pass(first_plan + 3, 15s));
  auto passes = w.passes();
  auto status = w.status();
  INFO(status.dump());
  CHECK(status["enabled"] == true);
  CHECK(status["dry_run"] == true);
  // A DryRun loop moves nothing, so it never claims a controller epoch.
  CHECK(status["controller"]["epoch"].get<int64_t>() == 0);
  CHECK(status["controller"]["superseded"] == false);
  CHECK(status["goals"].size() > 0);

  check_every_pass(passes);
  int planned_passes = 0;
  for (const auto& [n, pass] : passes) {
    INFO("pass " << n << ": " << pass.dump());
    CHECK(pass["dry_run"] == true);
    CHECK(pass["errors"].empty());
    auto actions = actions_of(pass);
    REQUIRE(pass["executed"].size() == actions.size());
    for (const auto& e : pass["executed"]) {
      CHECK(e["result"] == "dry_run");
      CHECK(e["type"] == "MOVE");
      CHECK_FALSE(e.contains("swap_with"));
    }
    for (const auto& a : actions) {
      CHECK(a["from"] == "b1");
      CHECK((a["to"] == "b2" || a["to"] == "b3"));
      CHECK(a["topic"] == "dry");
      CHECK(a["goal"] == "PARTITION_COUNT");
      CHECK_FALSE(a.value("reason", "").empty());
    }
    if (n >= first_plan) {
      // The partitions stay on b1: every later pass plans again, with an
      // explanation per goal.
      CHECK(actions.size() == 4);
      ++planned_passes;
      bool explained = false;
      for (const auto& g : pass["plan"]["goals"])
        explained = explained || (g["name"] == "PARTITION_COUNT" && !g.value("explanation", "").empty());
      CHECK(explained);
    }
  }
  CHECK(planned_passes >= 4);

  // Plan-now from the live model: a plan, nothing executed, nothing moved.
  auto now = call(c.admin(0), "POST", "/admin/balancer/plan");
  INFO(now.raw);
  REQUIRE(now.status == 200);
  CHECK(now.body["executing"] == false);
  CHECK(actions_of(now.body).size() == 4);
  for (const auto& e : now.body["executed"])
    CHECK(e["result"] == "plan_only");

  for (size_t i = 0; i < 3; ++i) {
    INFO("broker " << c.id(i));
    CHECK(reassignments(c.admin(i)).empty());
  }
  CHECK(owner_counts(c.admin(0), "dry") == std::map<std::string, int>{{"b1", 6}});
  // The moves planned on b1 are visible in its metrics.
  auto text = metrics_text(c.admin(0));
  CHECK(metric(text, "moonmq_autobalancer_last_plan_size") == 4.0);
  CHECK_FALSE(metric(text, "moonmq_autobalancer_actions_total", {{"type", "move"}}).has_value());
  WARN("dry run: " << passes.size() << " passes seen, first plan at pass " << first_plan);
}

TEST_CASE("a live balance loop moves the planned partitions and a later pass on the balanced cluster plans nothing",
          "[node][balancer][scenario]") {
  // Every broker has the same balancer settings, off; b1 is the controller.
  auto settings = autobalance(false);
  settings.push_back("Autobalance.Enabled=false");
  move_cluster c{{"b1", "b2", "b3"}, settings};
  c.start(1);
  c.start(2);
  c.start(0);
  create_topic(c.client(0), "live", 6);
  std::map<int, std::map<int64_t, sent_record>> filled;
  for (int p = 0; p < 6; ++p)
    filled[p] = fill(c.client(0), "live", p, 300, 100, 100, "p" + std::to_string(p));
  // The loop starts with the data in place, turned on at runtime.
  turn_on_balancer(c.admin(1));
  auto t0 = clock_type::now();
  pass_watcher w{[&] { return c.admin(0); }};
  auto balanced = [&] {
    auto counts = owner_counts(c.admin(0), "live");
    return counts == std::map<std::string, int>{{"b1", 2}, {"b2", 2}, {"b3", 2}};
  };
  if (!wait_until(balanced, 60s))
    FAIL("not balanced within 60 s: " << json(owner_counts(c.admin(0), "live")).dump() << "\nreassignments "
                                       << reassignments(c.admin(0)).dump() << "\n" << log_tails(c));
  double converge_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  auto passes_at_balance = w.count();

  // Every move finished.
  json rows;
  REQUIRE(wait_until(
    [&] {
      rows = reassignments(c.admin(0));
      for (const auto& r : rows)
        if (!is_terminal(r.value("state", "")))
          return false;
      return true;
    },
    20s));
  INFO("reassignments " << rows.dump());
  int64_t last_done_ms = 0;
  for (const auto& r : rows) {
    CHECK(r["state"] == "done");
    CHECK(r["from"] == "b1");
    // Why: the loop's move names the goal that planned it and its reason.
    CHECK(r.value("origin", "") == "balancer");
    auto reason = r.value("reason", "");
    auto colon = reason.find(": ");
    CHECK(colon != std::string::npos);
    CHECK(colon != 0);
    CHECK(reason.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == colon);  // a goal's name, then its text
    last_done_ms = std::max(last_done_ms, r.value("updated_ms", int64_t{0}));
  }
  CHECK(rows.size() == 4);  // the fewest moves that balance 6 partitions over 3 brokers

  // A later pass: its partitions out of cooldown (3 intervals after the last
  // move) and every window complete again. It plans nothing.
  auto quiet = [&](const std::map<uint64_t, json>& ps) {
    for (const auto& [n, p] : ps) {
      if (p.value("started_ms", int64_t{0}) <= last_done_ms + 3000)
        continue;
      bool complete = true;
      for (const auto& b : p["brokers"])
        complete = complete && !b.value("incomplete_window", true);
      if (complete)
        return true;
    }
    return false;
  };
  if (!w.wait(quiet, 20s))
    FAIL("no pass after the cooldown with complete windows; status " << w.status().dump());
  REQUIRE(w.wait_pass(w.count() + 1, 10s));  // and the one after it
  auto passes = w.passes();
  check_every_pass(passes);
  int sent = 0, refused = 0, quiet_passes = 0;
  for (const auto& [n, pass] : passes) {
    INFO("pass " << n << ": " << pass.dump());
    for (const auto& e : pass["executed"]) {
      sent += e["result"] == "queued" || e["result"] == "sent";
      refused += e["result"] == "refused";
    }
    if (pass.value("started_ms", int64_t{0}) > last_done_ms + 3000) {
      REQUIRE(pass.contains("plan"));
      CHECK(actions_of(pass).empty());
      CHECK(pass["plan"]["brokers_before"]["b1"]["partitions"] == 2);
      ++quiet_passes;
    }
  }
  CHECK(sent == 4);
  CHECK(refused == 0);
  CHECK(quiet_passes >= 2);
  CHECK(owner_counts(c.admin(0), "live") == std::map<std::string, int>{{"b1", 2}, {"b2", 2}, {"b3", 2}});

  // Every record produced before is readable from its owner now.
  check_readable(c, "live", filled);
  auto text = metrics_text(c.admin(0));
  CHECK(metric(text, "moonmq_autobalancer_actions_total", {{"type", "move"}}) == 4.0);
  CHECK(metric(text, "moonmq_autobalancer_last_plan_size") == 0.0);
  WARN("live: balanced after " << converge_s << " s (" << passes_at_balance << " passes), " << passes.size()
                               << " passes seen");
}

TEST_CASE("rates appear from the second pass and a restarted peer never shows a negative load nor draws a move",
          "[node][balancer][scenario]") {
  // NW_IN is made active at these rates; its wide band only trips when a
  // broker's rate falls near zero (a restarted broker read as idle). Every
  // broker has the same settings, the loop off until turned on; b1 is the
  // controller.
  auto settings = autobalance(false);
  settings.push_back("Autobalance.Enabled=false");
  settings.push_back("Autobalance.Goals.NW_IN.DetectThreshold=1");
  settings.push_back("Autobalance.Goals.NW_IN.AvgDeviation=0.9");
  move_cluster c{{"b1", "b2", "b3"}, settings};
  c.start(0);
  c.start(1);
  c.start(2);
  // Two partitions per broker (balanced counts), one of them with steady
  // traffic.
  const std::vector<std::string> topics{"ra", "rb", "rc"};
  for (size_t i = 0; i < 3; ++i)
    create_topic(c.client(i), topics[i], 2);
  std::vector<std::unique_ptr<producer>> prods;
  for (size_t i = 0; i < 3; ++i)
    prods.push_back(std::make_unique<producer>(c.client(i), topics[i], 0, 5, "r" + std::to_string(i)));
  std::this_thread::sleep_for(300ms);
  turn_on_balancer(c.admin(2));
  pass_watcher w{[&] { return c.admin(0); }};

  // Pass 1: the counters only primed, every load 0 and every broker's window
  // incomplete; read the gauge before pass 2 replaces it.
  REQUIRE(w.wait_pass(1, 15s));
  auto text1 = metrics_text(c.admin(0));
  bool gauge_of_pass1 = w.count() == 1;
  REQUIRE(w.wait_pass(4, 15s));
  auto ps = w.passes();
  REQUIRE(ps.count(1));
  {
    INFO("pass 1: " << ps[1].dump());
    for (const auto& id : {"b1", "b2", "b3"}) {
      CHECK(load_before(ps[1], id, "nw_in") == 0.0);
      CHECK(broker_entry(ps[1], id)["incomplete_window"] == true);
    }
    CHECK(actions_of(ps[1]).empty());
  }
  if (gauge_of_pass1)
    CHECK(metric(text1, "moonmq_autobalancer_broker_load", {{"broker", "b1"}, {"resource", "nw_in"}}) == 0.0);
  else
    WARN("pass 2 ran before /metrics was read: the pass-1 gauge was not checked");
  for (uint64_t n = 2; n <= 4; ++n) {
    REQUIRE(ps.count(n));
    INFO("pass " << n << ": " << ps[n].dump());
    for (const auto& id : {"b1", "b2", "b3"}) {
      CHECK(load_before(ps[n], id, "nw_in").value_or(0) > 0.0);
      CHECK(broker_entry(ps[n], id)["incomplete_window"] == false);
    }
  }
  auto text = metrics_text(c.admin(0));
  CHECK(metric(text, "moonmq_autobalancer_broker_load", {{"broker", "b1"}, {"resource", "nw_in"}}).value_or(0) > 0.0);

  // Restart b2 (SIGTERM; it stays down for a pass; start again on its data).
  // Passes down+2 .. up ran entirely while b2 was down (down+1 may have
  // started before).
  auto before_restart = w.count();
  c.stop(1);
  auto down = w.count();
  REQUIRE(w.wait_pass(down + 2, 15s));
  auto up = w.count();
  c.restart(1);
  REQUIRE(w.wait_pass(up + 6, 30s));
  for (auto& p : prods)
    p->stop();

  auto passes = w.passes();
  check_every_pass(passes);
  int down_passes = 0, after_passes = 0;
  for (const auto& [n, pass] : passes) {
    INFO("pass " << n << ": " << pass.dump());
    for (const auto& a : actions_of(pass))
      if (n > before_restart)
        CHECK(a["to"] != "b2");  // nothing on the loop's side calls for a move to b2
    auto b2 = broker_entry(pass, "b2");
    if (n > down + 1 && n <= up) {
      CHECK(b2["alive"] == false);
      ++down_passes;
    }
    if (n > up + 1 && b2["alive"] == true) {
      ++after_passes;
      // b2's rates survive its restart: its reset counters start a new
      // baseline rather than a zero or negative rate.
      CHECK(load_before(pass, "b2", "nw_in").value_or(0) > 0.0);
    }
  }
  CHECK(down_passes >= 1);
  CHECK(after_passes >= 3);
  for (const auto& p : prods) {
    CHECK(p->double_acks().empty());
    CHECK(p->ok_requests() > 0);
  }
  auto end_text = metrics_text(c.admin(0));
  for (const auto& id : {"b1", "b2", "b3"})
    for (const auto& res : {"nw_in", "nw_out", "disk", "partitions"}) {
      INFO(id << " " << res);
      CHECK(metric(end_text, "moonmq_autobalancer_broker_load", {{"broker", id}, {"resource", res}}).value_or(-1) >= 0.0);
    }
  CHECK(reassignments(c.admin(0)).empty());
  WARN("rates: " << passes.size() << " passes seen; b2 down for " << down_passes << " passes, restarted before pass "
                 << up + 1);
}

TEST_CASE("a peer whose load report fails leaves the pass running with that peer inactive and never a destination",
          "[node][balancer][scenario]") {
  move_cluster c{{"b1", "b2", "b3"}};
  c.start(1);
  c.start(2);
  c.start(0, autobalance(true));
  create_topic(c.client(0), "fz", 6);
  pass_watcher w{[&] { return c.admin(0); }};
  // Both peers are destinations while they answer.
  auto targets = [](const json& pass) {
    std::set<std::string> out;
    for (const auto& a : actions_of(pass))
      out.insert(a["to"].get<std::string>());
    return out;
  };
  REQUIRE(w.wait(
    [&](const auto& ps) { return !ps.empty() && targets(ps.rbegin()->second) == std::set<std::string>{"b2", "b3"}; },
    20s));

  auto check_inactive = [&](uint64_t from, uint64_t to, const char* how) {
    int seen = 0;
    for (const auto& [n, pass] : w.passes()) {
      if (n <= from || n > to)
        continue;
      INFO(how << " pass " << n << ": " << pass.dump());
      ++seen;
      CHECK(broker_entry(pass, "b3")["alive"] == false);
      CHECK(broker_entry(pass, "b2")["alive"] == true);
      bool reported = false;
      for (const auto& e : pass["errors"])
        reported = reported || e.get<std::string>().rfind("loads of b3", 0) == 0;
      CHECK(reported);
      // The pass completed with a plan that only fills b2.
      REQUIRE(pass.contains("plan"));
      CHECK(targets(pass) == std::set<std::string>{"b2"});
    }
    return seen;
  };

  // Frozen: its report times out (PeerTimeout=2). Passes frozen+2 .. thawed
  // ran entirely while b3 was frozen (frozen+1 may have started before).
  c.signal(2, SIGSTOP);
  auto frozen = w.count();
  REQUIRE(w.wait_pass(frozen + 3, 30s));
  auto thawed = w.count();
  c.signal(2, SIGCONT);
  CHECK(check_inactive(frozen + 1, thawed, "frozen") >= 2);
  // Back: a destination again.
  REQUIRE(w.wait(
    [&](const auto& ps) { return ps.rbegin()->first > thawed + 1 && targets(ps.rbegin()->second).count("b3") > 0; },
    20s));

  // Stopped: its report is refused.
  c.stop(2);
  auto stopped = w.count();
  REQUIRE(w.wait_pass(stopped + 3, 20s));
  CHECK(check_inactive(stopped + 1, w.count(), "stopped") >= 2);
  check_every_pass(w.passes());
  CHECK(balancer_status(c.admin(0))["controller"]["superseded"] == false);
  WARN("failing peer: " << w.count() << " passes seen");
}

TEST_CASE("of brokers running a live loop only the Raft leader acts, a new leader takes over, and an "
          "unauthenticated claim changes nothing",
          "[node][balancer][scenario]") {
  // Every broker runs a live loop; with no topic it moves nothing. b1 is the
  // controller (the shortest election timeout), b2 and b3 are not.
  move_cluster c{{"b1", "b2", "b3"}, autobalance(false)};
  c.launch(0);
  c.launch(1);
  c.launch(2);
  for (size_t i = 0; i < 3; ++i)
    c.wait_ready(i);
  pass_watcher w1{[&] { return c.admin(0); }};
  REQUIRE(w1.wait_pass(2, 15s));
  auto passes = [&](size_t i) { return balancer_status(c.admin(i))["passes"].get<uint64_t>(); };
  for (size_t i : {1, 2}) {
    auto s = balancer_status(c.admin(i));
    INFO("broker " << c.id(i) << ": " << s.dump());
    CHECK(s["passes"] == 0);
    CHECK(s["controller"]["epoch"] == 0);
    CHECK_FALSE(s["controller"].value("not_controller", "").empty());
  }
  auto term = balancer_status(c.admin(0))["controller"]["epoch"].get<int64_t>();
  CHECK(term >= 1);

  // An unauthenticated (or wrongly authenticated) claim is refused before it
  // reaches the fence.
  moonmq::transport::header_list claim{{"X-Controller-Epoch", std::to_string(term + 100)}, {"X-Controller-Id", "intruder"}};
  for (size_t i = 0; i < 3; ++i) {
    INFO("broker " << c.id(i));
    CHECK(call(c.cluster_port(i), "POST", "/cluster/controller", "{}", claim).status == 401);
    auto wrong_headers = claim;
    wrong_headers.emplace_back("X-Cluster-Token", "not-the-token");
    CHECK(call(c.cluster_port(i), "POST", "/cluster/controller", "{}", wrong_headers).status == 401);
    auto b = belief_of(c, i);
    REQUIRE(b);
    CHECK(b->leader == "b1");
  }

  // The controller dies: the new Raft leader's loop takes over, at a higher term.
  c.kill(0);
  auto after = agreed_leader(c, {1, 2}, term, 20s);
  REQUIRE(after);
  auto [leader, new_term] = *after;
  pass_watcher w2{[&] { return c.admin(leader); }};
  if (!w2.wait_pass(2, 20s))
    FAIL("the new leader's loop ran no pass; " << balancer_status(c.admin(leader)).dump() << "\n" << log_tails(c));
  auto s = balancer_status(c.admin(leader));
  INFO(s.dump());
  CHECK(s["controller"]["epoch"].get<int64_t>() >= new_term);
  size_t other = leader == 1 ? 2 : 1;
  CHECK(passes(other) == 0);
  WARN("only the leader acts: term " << term << " on b1, then term " << new_term << " on " << c.id(leader));
}

TEST_CASE("the metrics of a balancing node pass promtool check metrics", "[node][balancer][scenario]") {
  move_cluster c{{"b1", "b2"}};
  c.start(1);
  c.start(0, autobalance(false));
  create_topic(c.client(0), "pm", 2);
  fill(c.client(0), "pm", 0, 50, 50, 100);
  fill(c.client(0), "pm", 1, 50, 50, 100);
  pass_watcher w{[&] { return c.admin(0); }};
  // One partition moves to b2 and finishes.
  auto moved = [&] {
    auto rows = reassignments(c.admin(0));
    return rows.size() == 1 && rows[0]["state"] == "done";
  };
  if (!wait_until(moved, 30s))
    FAIL("the move did not finish: " << reassignments(c.admin(0)).dump() << "\n" << log_tails(c));
  REQUIRE(w.wait_pass(w.count() + 1, 10s));

  for (size_t i = 0; i < 2; ++i) {
    INFO("broker " << c.id(i));
    auto text = metrics_text(c.admin(i));
    auto [rc, out] = promtool_check(text);
    INFO("promtool: " << out << "\nmetrics:\n" << text);
    if (rc == 127)
      FAIL("promtool not found (Debian package prometheus, scripts/install-deps.sh)");
    CHECK(rc == 0);
    CHECK_FALSE(metric(text, "moonmq_autobalancer_fenced").has_value());  // retired with the file fence
    if (i == 0) {
      // The pass that planned the move and at least one after it finished.
      CHECK(metric(text, "moonmq_autobalancer_passes_total").value_or(0) >= 2.0);
      CHECK(metric(text, "moonmq_autobalancer_broker_load", {{"broker", "b1"}, {"resource", "partitions"}}).has_value());
      CHECK(metric(text, "moonmq_reassign_partitions_total").value_or(0) == 1.0);
      CHECK(metric(text, "moonmq_autobalancer_actions_total", {{"type", "move"}}) == 1.0);
      CHECK(metric(text, "moonmq_autobalancer_last_plan_size").has_value());
      CHECK(metric(text, "moonmq_reassign_duration_seconds_count").value_or(0) == 1.0);
    }
  }
}

// --- a hand move is not undone by the balancer within its cooldown ------------------

// moonmqctl balancer: the balance loop over the admin API
// (docs/balancer.md): `show` prints its settings, `status` its last pass,
// `dry-run` a plan made now without moving anything, and `set` changes the
// settings cluster-wide through the metadata log (PATCH /admin/balancer).

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "tools/common/progress_bar.hpp"
#include "tools/moonmqctl/commands.hpp"
#include "util/clock.hpp"

namespace moonmq::ctl {

using json = nlohmann::json;

namespace {

/// A JSON scalar as a table cell: strings bare, arrays joined by commas.
std::string cell(const json& v) {
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const auto& e : v)
      out += (out.empty() ? "" : ",") + cell(e);
    return out.empty() ? "-" : out;
  }
  if (v.is_null())
    return "-";
  return v.dump();
}

/// A goal's mean or band edge in its unit: bytes for DISK, bytes/s for the
/// network goals, a share for utilization-based (capacity) goals, a plain
/// number otherwise (PARTITION_COUNT, plugin goals).
std::string goal_amount(const json& goal, const char* key) {
  auto v = goal.value(key, 0.0);
  auto name = goal.value("name", std::string{});
  char buf[32];
  if (goal.value("basis", std::string{"load"}) == "utilization") {
    std::snprintf(buf, sizeof buf, "%.1f%%", v * 100);
    return buf;
  }
  if (name == "DISK")
    return tools::human_bytes(v);
  if (name == "NW_IN" || name == "NW_OUT")
    return tools::human_bytes(v) + "/s";
  std::snprintf(buf, sizeof buf, std::fabs(v - std::round(v)) < 1e-9 ? "%.0f" : "%.2f", v);
  return buf;
}

/// A plan (CONTRACT §6) as text: balancedness, the goal table with each
/// goal's explanation, and the actions with their goal and reason.
void print_plan(const json& plan) {
  std::printf("BALANCEDNESS  %.1f -> %.1f\n", plan.value("balancedness_before", 0.0),
              plan.value("balancedness_after", 0.0));
  if (auto summary = plan.value("summary", std::string{}); !summary.empty())
    std::cout << "SUMMARY       " << summary << "\n";
  std::cout << "\nGOALS\n";
  table goals{{"GOAL", "MEAN", "BAND", "OUTSIDE-BEFORE", "OUTSIDE-AFTER", "EXPLANATION"}};
  for (const auto& g : plan.value("goals", json::array()))
    goals.add({g.value("name", ""), goal_amount(g, "mean"),
               goal_amount(g, "lower") + " .. " + goal_amount(g, "upper"), cell(g.value("violations_before", json())),
               cell(g.value("violations_after", json())), g.value("explanation", "")});
  goals.print(std::cout);
  for (const auto& g : plan.value("goals", json::array()))
    for (const auto& o : g.value("still_outside", json::array()))
      std::cout << "OUTSIDE       " << g.value("name", "") << " " << o.value("broker", "") << ": " << o.value("why", "")
                << "\n";
  if (plan.contains("drain") && plan["drain"].is_object())
    std::cout << "\nDRAIN  " << cell(plan["drain"].value("brokers", json())) << ": "
              << plan["drain"].value("explanation", "") << "\n";
  auto actions = plan.value("actions", json::array());
  std::cout << "\nACTIONS  " << actions.size();
  if (plan.contains("moves_lower_bound"))
    std::cout << " (PARTITION_COUNT needs at least " << plan["moves_lower_bound"].get<int64_t>() << ")";
  std::cout << "\n";
  if (actions.empty())
    return;
  table rows{{"TYPE", "TOPIC", "PARTITION", "FROM", "TO", "GOAL", "REASON"}};
  for (const auto& a : actions)
    rows.add({a.value("type", "MOVE"), a.value("topic", ""), cell(a.value("partition", json())), a.value("from", ""),
              a.value("to", ""), a.value("goal", ""), a.value("reason", "")});
  rows.print(std::cout);
}

/// One balance pass (GET /admin/balancer's last_pass, POST
/// /admin/balancer/plan's answer) as text.
void print_pass(const json& pass) {
  auto started = pass.value("started_ms", int64_t{0});
  std::cout << "PASS          ";
  if (started > 0)
    std::cout << (util::wall_ms() - started) / 1000 << " s ago, ";
  std::cout << pass.value("duration_ms", int64_t{0}) << " ms, epoch " << pass.value("epoch", int64_t{0})
            << (pass.value("dry_run", false) ? ", dry run" : "") << "\n";
  // The slow-broker rule's figure per broker (docs/balancer.md "Slow brokers").
  std::map<std::string, std::string> p90;
  for (const auto& v : pass.value("slow_brokers", json::array()))
    if (v.contains("latency_p90_ms") && v["latency_p90_ms"].is_number()) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1f", v["latency_p90_ms"].get<double>());
      p90[v.value("broker", "")] = text;
    }
  // Rack and weight as the pass read them (docs/balancer.md "Racks and
  // weights"): "-" for no rack; a pass of an older loop has neither.
  table brokers{{"BROKER", "RACK", "WEIGHT", "ALIVE", "EXCLUDED", "DRAINING", "SLOW", "P90 MS", "WINDOW"}};
  for (const auto& b : pass.value("brokers", json::array())) {
    auto id = b.value("id", "");
    std::string weight = "-";
    if (const auto w = b.value("weight", json()); w.is_number()) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", w.get<double>());
      weight = text;
    }
    const auto rack = b.value("rack", std::string{});
    brokers.add({id, rack.empty() ? "-" : rack, weight, b.value("alive", false) ? "yes" : "no",
                 b.value("excluded", false) ? "yes" : "no",
                 b.value("draining", false) ? "yes" : "no", b.value("slow", false) ? "yes" : "no",
                 p90.count(id) ? p90[id] : "-", b.value("incomplete_window", false) ? "incomplete" : "complete"});
  }
  std::cout << "IN-FLIGHT     " << pass.value("in_flight", 0) << " move(s)\n";
  std::cout << "COOLDOWN      " << pass.value("cooldown", 0) << " partition(s) held still, " << pass.value("avoid", 0)
            << " destination(s) avoided (docs/balancer.md \"Stability rules\")\n\n";
  brokers.print(std::cout);
  std::cout << "\n";
  if (pass.contains("plan") && pass["plan"].is_object())
    print_plan(pass["plan"]);
  auto executed = pass.value("executed", json::array());
  bool acted = false;
  // "sent" until the owner answers, then "queued" or "refused".
  for (const auto& e : executed) {
    const auto result = e.value("result", "");
    acted = acted || (result != "dry_run" && result != "plan_only");
  }
  if (acted) {
    std::cout << "\nEXECUTED\n";
    // A SWAP's halves run as two moves: each names its partner, so one done
    // without the other is visible here.
    table rows{{"TYPE", "TOPIC", "PARTITION", "FROM", "TO", "GOAL", "RESULT"}};
    for (const auto& e : executed) {
      std::string type = e.value("type", "MOVE");
      if (const auto w = e.value("swap_with", json()); w.is_object())
        type += " with " + w.value("topic", "") + "/" + cell(w.value("partition", json()));
      rows.add({type, e.value("topic", ""), cell(e.value("partition", json())), e.value("from", ""), e.value("to", ""),
                e.value("goal", ""), e.value("result", "")});
    }
    rows.print(std::cout);
  }
  for (const auto& e : pass.value("errors", json::array()))
    std::cout << "error: " << cell(e) << "\n";
}

/// The settings object as "KEY  VALUE" rows.
void print_settings(const json& settings) {
  table t{{"SETTING", "VALUE"}};
  for (const auto& [k, v] : settings.items())
    t.add({k, v.is_string() ? v.get<std::string>() : v.dump()});
  t.print(std::cout);
}

void print_controller(const json& j) {
  auto c = j.value("controller", json::object());
  std::cout << "BROKER        " << cell(j.value("broker_id", json())) << "\nCONTROLLER    "
            << (c.value("superseded", false) ? "superseded" + (c.contains("superseded_by") ? " by " + cell(c["superseded_by"]) : "")
                : c.contains("not_controller")  ? "not the controller (" + cell(c["not_controller"]) + ")"
                : c.value("epoch", int64_t{0}) > 0 ? "this loop, epoch " + std::to_string(c.value("epoch", int64_t{0}))
                                                   : std::string{"not claimed (a DryRun loop only previews)"})
            << "\nPASSES        " << j.value("passes", 0) << "\n";
}

}  // namespace

int balancer_show(const admin_endpoint& ep, const balancer_options& o) {
  auto j = admin_request(ep, "GET", "/admin/balancer");
  if (!j)
    return 1;
  json out{{"broker_id", j->value("broker_id", "")},
           {"settings", j->value("settings", json::object())},
           {"settings_source", j->value("settings_source", "")},
           {"controller", j->value("controller", json::object())},
           {"passes", j->value("passes", 0)}};
  if (o.format == "json") {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  print_controller(out);
  std::cout << "SOURCE        " << out["settings_source"].get<std::string>() << "\n\n";
  print_settings(out["settings"]);
  return 0;
}

int balancer_status(const admin_endpoint& ep, const balancer_options& o) {
  auto j = admin_request(ep, "GET", "/admin/balancer");
  if (!j)
    return 1;
  if (o.format == "json") {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  print_controller(*j);
  std::cout << "ENABLED       " << (j->value("enabled", false) ? "yes" : "no") << "\nDRY-RUN       "
            << (j->value("dry_run", false) ? "yes" : "no") << "\nINTERVAL      " << j->value("interval_seconds", 0)
            << " s\n";
  auto last = j->value("last_pass", json());
  if (!last.is_object()) {
    std::cout << "\nno pass yet on this broker (only the controller's loop runs passes; `balancer dry-run` plans now)\n";
    return 0;
  }
  print_pass(last);
  return 0;
}

int balancer_dry_run(const admin_endpoint& ep, const balancer_options& o) {
  auto j = admin_request(ep, "POST", "/admin/balancer/plan");
  if (!j)
    return 1;
  if (o.format == "json") {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  print_pass(*j);
  return j->value("errors", json::array()).empty() ? 0 : 1;
}

int balancer_set(const admin_endpoint& ep, const balancer_options& o) {
  json patch = json::object();
  for (const auto& kv : o.settings) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "moonmqctl: a setting is KEY=VALUE (VALUE in JSON: false, 30, '[\"a\"]', null), got '" << kv
                << "'\n";
      return 2;
    }
    auto key = kv.substr(0, eq);
    auto value = json::parse(kv.substr(eq + 1), nullptr, false);
    if (value.is_discarded())
      value = kv.substr(eq + 1);  // a bare word is a string; the broker says whether it fits the key
    patch[key] = value;
  }
  auto j = admin_request(ep, "PATCH", "/admin/balancer", patch.dump());
  if (!j)
    return 1;
  auto settings = j->value("settings", json::object());
  if (o.format == "json")
    std::cout << settings.dump(2) << "\n";
  else
    print_settings(settings);
  return 0;
}

}  // namespace moonmq::ctl

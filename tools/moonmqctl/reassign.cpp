// moonmqctl reassign: generate / execute / verify / cancel partition moves
// over the admin API (CONTRACT §4). The plan arithmetic is the pure
// cluster::generate_plan; this file only talks HTTP and prints.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cluster/move_journal.hpp"
#include "cluster/reassignment_planner.hpp"
#include "tools/common/move_view.hpp"
#include "tools/common/progress_bar.hpp"
#include "tools/moonmqctl/commands.hpp"
#include "net/blocking_client.hpp"

namespace moonmq::ctl {

using json = nlohmann::json;

namespace {

using tools::human_bytes;
using tools::progress_bar;

int64_t int_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

std::string str_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end())
    return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

using partition_set = std::set<std::pair<std::string, int32_t>>;

/// Prints an execute's accepted, rejected and unknown entries, a line each.
void print_submission(const json& accepted, const json& rejected, const json& unknown);
/// The moves of `only` (every partition when null), each partition's newest
/// move a line, until they have ended with `o.wait`; exit 1 when one failed.
/// With --format json one document is printed: `submission` (when given,
/// the execute's answer) with "reassignments" added.
int follow_moves(const admin_endpoint& ep, const reassign_options& o, const partition_set* only,
                 const json* submission = nullptr);

}  // namespace

int reassign_generate(const admin_endpoint& ep, const reassign_options& o) {
  std::set<std::string> wanted(o.topics.begin(), o.topics.end());
  for (const auto& t : wanted) {
    if (!cluster::valid_topic(t)) {
      std::cerr << "moonmqctl: invalid topic name '" << t << "'\n";
      return 2;
    }
    if (cluster::is_internal_topic(t)) {
      std::cerr << "moonmqctl: topic " << t << " is internal; internal topics never move\n";
      return 2;
    }
  }
  std::vector<cluster::broker_id> targets;
  for (const auto& b : o.brokers)
    targets.emplace_back(b);

  auto res = admin_call(ep, "GET", "/admin/cluster");
  if (!res)
    return 1;
  if (res->status != 200) {
    print_http_error("GET /admin/cluster", *res);
    return 1;
  }
  auto doc = body_json(*res, "GET /admin/cluster");
  if (!doc)
    return 1;
  auto parts = doc->find("partitions");
  if (parts == doc->end() || !parts->is_array()) {
    std::cerr << "moonmqctl: GET /admin/cluster has no \"partitions\" array\n";
    return 1;
  }
  std::vector<cluster::partition_owner> current;
  std::set<std::string> found;
  for (const auto& p : *parts) {
    if (!p.is_object() || !p.contains("topic") || !p["topic"].is_string() || !p.contains("partition") ||
        !p["partition"].is_number_integer() || !p.contains("owner") || !p["owner"].is_string()) {
      std::cerr << "moonmqctl: GET /admin/cluster: malformed partition entry " << p.dump() << "\n";
      return 1;
    }
    auto topic = p["topic"].get<std::string>();
    if (!wanted.count(topic))
      continue;
    found.insert(topic);
    current.push_back({{topic, p["partition"].get<int32_t>()}, cluster::broker_id{p["owner"].get<std::string>()}});
  }
  for (const auto& t : wanted) {
    if (!found.count(t)) {
      std::cerr << "moonmqctl: topic " << t << " has no partitions in GET /admin/cluster\n";
      return 1;
    }
  }
  // Warn about targets the cluster does not report alive (execute would reject them).
  if (auto brokers = doc->find("brokers"); brokers != doc->end() && brokers->is_array()) {
    std::map<std::string, bool> alive;
    for (const auto& b : *brokers) {
      if (b.is_object() && b.contains("id") && b["id"].is_string())
        alive[b["id"].get<std::string>()] = b.value("alive", false);
    }
    for (const auto& t : o.brokers) {
      auto it = alive.find(t);
      if (it == alive.end())
        std::cerr << "moonmqctl: warning: broker " << t << " is not a broker of this cluster\n";
      else if (!it->second)
        std::cerr << "moonmqctl: warning: broker " << t << " is not alive\n";
    }
  }
  auto plan = cluster::generate_plan(current, targets);
  if (!plan) {
    std::cerr << "moonmqctl: " << plan.err().message << "\n";
    return 2;
  }
  std::cout << cluster::plan_to_json(*plan).dump(2) << "\n";
  std::cerr << "moonmqctl: " << plan->size() << " of " << current.size() << " partitions move\n";
  return 0;
}

int reassign_execute(const admin_endpoint& ep, const reassign_options& o) {
  std::ifstream in{o.plan_file, std::ios::binary};
  if (!in) {
    std::cerr << "moonmqctl: cannot read plan file " << o.plan_file << "\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto plan = json::parse(text.str(), nullptr, false);
  if (plan.is_discarded() || !plan.is_object()) {
    std::cerr << "moonmqctl: plan file " << o.plan_file << " is not a JSON object\n";
    return 2;
  }
  if (!o.reason.empty()) {
    if (!cluster::valid_move_reason(o.reason)) {
      std::cerr << "moonmqctl: --reason must be at most " << cluster::max_move_reason_bytes
                << " bytes of text without control characters\n";
      return 2;
    }
    plan["reason"] = o.reason;
  }
  // The answer waits for every source: up to move_submit_attempts exchanges
  // of Cluster.PeerTimeout each with one that does not answer.
  auto res = admin_call(ep, "POST", "/admin/reassignments", plan.dump(), std::chrono::seconds(200));
  if (!res)
    return 1;
  if (res->status != 202 && res->status != 200) {
    print_http_error("POST /admin/reassignments", *res);
    return 1;
  }
  auto doc = body_json(*res, "POST /admin/reassignments");
  if (!doc)
    return 1;
  auto list = [&](const char* key) { return doc->contains(key) && (*doc)[key].is_array() ? (*doc)[key] : json::array(); };
  auto accepted = list("accepted");
  auto rejected = list("rejected");
  auto unknown = list("unknown");  // the source never answered: the move may run
  int rc = rejected.empty() && unknown.empty() ? 0 : 1;
  const bool follow = o.wait && !(accepted.empty() && unknown.empty());
  if (o.format != "json")
    print_submission(accepted, rejected, unknown);
  else if (!follow)
    std::cout << doc->dump(2) << "\n";  // with --wait, one document once the moves ended
  if (!follow)
    return rc;
  partition_set only;
  for (const auto& list_of : {accepted, unknown})
    for (const auto& a : list_of)
      only.insert({str_field(a, "topic"), static_cast<int32_t>(int_field(a, "partition"))});
  return std::max(rc, follow_moves(ep, o, &only, &*doc));
}

namespace {

void print_submission(const json& accepted, const json& rejected, const json& unknown) {
  for (const auto& a : accepted) {
    std::cout << "accepted  " << str_field(a, "topic") << "/" << str_field(a, "partition") << "  "
              << str_field(a, "from") << " -> " << str_field(a, "to");
    if (a.contains("state"))
      std::cout << "  " << str_field(a, "state");
    std::cout << "\n";
  }
  for (const auto& [label, entries] : {std::pair{"rejected  ", &rejected}, std::pair{"unknown   ", &unknown}})
    for (const auto& r : *entries) {
      std::cout << label << str_field(r, "topic") << "/" << str_field(r, "partition") << "  " << str_field(r, "error");
      if (r.contains("message"))
        std::cout << ": " << str_field(r, "message");
      std::cout << "\n";
    }
  std::cerr << "moonmqctl: " << accepted.size() << " accepted, " << rejected.size() << " rejected";
  if (!unknown.empty())
    std::cerr << ", " << unknown.size() << " unknown (their source did not answer; they may run)";
  std::cerr << "\n";
}

}  // namespace

int reassign_verify(const admin_endpoint& ep, const reassign_options& o) { return follow_moves(ep, o, nullptr); }

namespace {

int follow_moves(const admin_endpoint& ep, const reassign_options& o, const partition_set* only,
                 const json* submission) {
  // With --wait on a terminal the block is redrawn in place; otherwise a
  // block is printed only when it changed.
  const bool redraw = o.wait && ::isatty(STDOUT_FILENO);
  size_t drawn_lines = 0;
  std::string last_block;
  tools::move_rates rates;
  for (;;) {
    auto res = admin_call(ep, "GET", "/admin/reassignments");
    if (!res)
      return 1;
    if (res->status != 200) {
      print_http_error("GET /admin/reassignments", *res);
      return 1;
    }
    auto doc = body_json(*res, "GET /admin/reassignments");
    if (!doc)
      return 1;
    auto it = doc->find("reassignments");
    if (it == doc->end() || !it->is_array()) {
      std::cerr << "moonmqctl: GET /admin/reassignments has no \"reassignments\" array\n";
      return 1;
    }
    // Only each partition's newest move counts: an older failure retried
    // since is history, not a failure to report.
    auto current = tools::current_moves(*it);
    if (only)
      current.erase(std::remove_if(current.begin(), current.end(),
                                   [&](const json& m) {
                                     return !only->count({str_field(m, "topic"),
                                                          static_cast<int32_t>(int_field(m, "partition"))});
                                   }),
                    current.end());
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
    bool all_ended = true, any_failed = false;
    std::ostringstream block;
    for (const auto& m : current) {
      auto state_name = str_field(m, "state");
      auto state = cluster::parse_move_state(state_name);
      bool ended = state && cluster::is_terminal(*state);
      all_ended = all_ended && ended;
      any_failed = any_failed || state == cluster::move_state::failed;
      int64_t copied = int_field(m, "bytes_copied"), total = int_field(m, "bytes_total");
      block << str_field(m, "topic") << "/" << str_field(m, "partition") << "  " << str_field(m, "from") << " -> "
            << str_field(m, "to") << "  " << state_name << "  "
            << progress_bar(copied, total, state == cluster::move_state::done) << "  " << human_bytes(copied)
            << " / " << human_bytes(total);
      auto rate = rates.sample(str_field(m, "move_id"), copied, now);
      if (!ended && rate && *rate > 0)
        block << "  " << human_bytes(*rate) << "/s  " << tools::eta_text(total - copied, *rate);
      if (m.contains("error") && !str_field(m, "error").empty())
        block << "  error: " << str_field(m, "error");
      block << "\n";
    }
    if (current.empty())
      block << "no reassignments\n";
    if (!only && current.size() < it->size())
      block << (it->size() - current.size()) << " earlier move(s) of the same partitions not shown\n";
    if (o.format == "json") {
      // One document: now, or with --wait once every move has ended.
      if (!o.wait || all_ended) {
        auto out = submission && submission->is_object() ? *submission : json::object();
        out["reassignments"] = current;
        std::cout << out.dump(2) << "\n";
        return any_failed ? 1 : 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
      continue;
    }
    auto text = block.str();
    if (redraw && drawn_lines > 0)
      std::cout << "\x1b[" << drawn_lines << "F\x1b[J";  // back to the block's first line, clear below
    if (redraw || text != last_block)
      std::cout << text << std::flush;
    drawn_lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    last_block = std::move(text);
    if (!o.wait || all_ended)
      return any_failed ? 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
  }
}

}  // namespace

int reassign_cancel(const admin_endpoint& ep, const reassign_options& o) {
  if (!cluster::valid_topic(o.topic)) {
    std::cerr << "moonmqctl: invalid topic name '" << o.topic << "'\n";
    return 2;
  }
  auto target = "/admin/reassignments/" + o.topic + "/" + std::to_string(o.partition);
  auto res = admin_call(ep, "DELETE", target);
  if (!res)
    return 1;
  if (res->status == 409) {
    std::cerr << "moonmqctl: " << o.topic << "/" << o.partition
              << " is past cutover and can no longer be cancelled: " << res->body << "\n";
    return 1;
  }
  if (res->status == 404) {
    std::cerr << "moonmqctl: no reassignment of " << o.topic << "/" << o.partition << " to cancel\n";
    return 1;
  }
  if (res->status < 200 || res->status >= 300) {
    print_http_error("DELETE " + target, *res);
    return 1;
  }
  if (o.format == "json")
    std::cout << (body_json(*res, "DELETE " + target).value_or(json::object())).dump(2) << "\n";
  else
    std::cout << "cancelled " << o.topic << "/" << o.partition << "\n";
  return 0;
}

}  // namespace moonmq::ctl

// moonmq-demo: the broker kill and the failover as the live view shows it.

#include "tools/moonmq-demo/failover.hpp"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

namespace moonmq::demo {
namespace {

std::string secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

/// A /proc file's text ("" when it cannot be read).
std::string proc_text(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The coordinator of `group` as the broker `b` computes it ("" when it does
/// not answer): GET /v1/groups/{g}/coordinator (docs/groups.md).
std::string coordinator_of(const broker_endpoint& b, const std::string& group) {
  auto res = transport::http_call(b.client_host, b.client_port, "GET", "/v1/groups/" + group + "/coordinator", {}, {},
                                  std::chrono::seconds(2));
  auto j = json::parse(res.body, nullptr, false);
  return res.status == 200 && j.is_object() && j.value("coordinator", json()).is_string()
           ? j["coordinator"].get<std::string>()
           : std::string{};
}

std::string plus_secs(double s) {
  return s < 0 ? std::string("-") : "+" + secs(s);
}

}  // namespace

bool failover_watch::done() const {
  return !wanted() || (!victim_.empty() && all_writes_s_ >= 0);
}

std::optional<std::string> failover_watch::kill(double elapsed_s, const cluster_snapshot& snap) {
  if (!snap.ok || snap.controller.empty())
    return std::nullopt;
  std::map<std::string, int> owned;
  for (const auto& [tp, v] : snap.parts)
    ++owned[v.owner];
  // Not the Raft leader (a controller failover is another story), alive,
  // owning some of the demo's partitions: the one owning most.
  std::string pick;
  for (const auto& [id, alive] : snap.brokers) {
    if (!alive || id == snap.controller || snap.fenced.count(id) || !r_.opt.broker_pids.count(id) || owned[id] == 0)
      continue;
    if (pick.empty() || owned[id] >= owned[pick])
      pick = id;
  }
  if (pick.empty()) {
    if (waiting_noted_)
      return std::nullopt;
    waiting_noted_ = true;
    return "failover: waiting to kill a broker: none but the Raft leader (" + snap.controller +
           ") owns partitions of the demo yet";
  }
  const int pid = r_.opt.broker_pids.at(pick);
  const auto* asked = r_.broker(snap.asked);
  const std::string coordinator = asked ? coordinator_of(*asked, r_.opt.group) : std::string{};
  // The pid came from the command line: make sure it is still a broker.
  if (proc_text("/proc/" + std::to_string(pid) + "/cmdline").find("moonmq-node") == std::string::npos) {
    gave_up_ = true;
    return "failover: not killing " + pick + ": pid " + std::to_string(pid) + " is not a moonmq-node";
  }
  kill_ns_ = steady_ns();
  if (::kill(pid, SIGKILL) != 0) {
    gave_up_ = true;
    return "failover: kill -9 " + std::to_string(pid) + " (" + pick + ") failed";
  }
  r_.kill_ns = kill_ns_;
  victim_ = pick;
  victim_pid_ = pid;
  leader_ = snap.controller;
  killed_at_s_ = elapsed_s;
  std::string names;
  for (const auto& [tp, v] : snap.parts)
    if (v.owner == pick) {
      parts_[tp] = part_state{};
      names += (names.empty() ? "" : ", ") + tp.str();
    }
  // A dead coordinator is not replaced (docs/groups.md): say so, since the
  // consumers' joins and heartbeats then fail until the end.
  return "failover: kill -9 " + pick + " (pid " + std::to_string(pid) + ") at " + secs(elapsed_s) + ": it owns " +
         std::to_string(parts_.size()) + " partition(s) (" + names + ") and is not the Raft leader (" + leader_ + ")" +
         (coordinator == pick ? "; it also coordinates group " + r_.opt.group +
                                  ", whose joins and heartbeats answer 503 while it is down"
                              : "");
}

std::vector<std::string> failover_watch::tick(double elapsed_s, const cluster_snapshot& snap,
                                              const balancer_view& bal) {
  std::vector<std::string> ev;
  if (!wanted() || gave_up_)
    return ev;
  if (victim_.empty()) {
    if (elapsed_s >= r_.opt.kill_broker_at * r_.opt.duration_seconds)
      if (auto e = kill(elapsed_s, snap))
        ev.push_back(*e);
    return ev;
  }
  const double snap_s = since_kill(std::chrono::duration_cast<std::chrono::nanoseconds>(snap.at.time_since_epoch()).count());
  if (fenced_s_ < 0 && snap.ok && snap.fenced.count(victim_)) {
    fenced_s_ = snap_s;
    size_t offline = 0;
    for (const auto& [tp, p] : parts_)
      offline += snap.offline.count(tp);
    ev.push_back("failover: " + victim_ + " fenced by the metadata log (seen " + plus_secs(fenced_s_) +
                 " after the kill)" +
                 (offline > 0 ? "; " + std::to_string(offline) +
                                  " of its partitions offline until the controller hands them over"
                              : std::string{}));
  }
  for (const auto& f : bal.failovers)
    if (f.from == victim_ && parts_.count(f.tp))
      reasons_[f.tp] = f.reason + (f.result.empty() ? "" : " [" + f.result + "]");
  for (auto& [tp, p] : parts_) {
    if (!p.to.empty() || !snap.ok)
      continue;
    auto it = snap.parts.find(tp);
    if (it == snap.parts.end() || it->second.owner.empty() || it->second.owner == victim_)
      continue;
    p.to = it->second.owner;
    p.owner_epoch = it->second.owner_epoch;
    p.moved_s = snap_s;
    auto why = reasons_.find(tp);
    ev.push_back("FAILOVER " + tp.str() + " " + victim_ + " -> " + p.to + " (seen " + plus_secs(p.moved_s) +
                 " after the kill, owner epoch " + std::to_string(p.owner_epoch) + ")" +
                 (why != reasons_.end() ? ": " + why->second : ""));
  }
  for (auto& [tp, p] : parts_) {
    if (p.writes_s >= 0)
      continue;
    int64_t ns = r_.ledgers.at(tp)->first_ack_after_kill_ns;
    if (ns == 0)
      continue;
    p.writes_s = since_kill(ns);
    ev.push_back("failover: " + tp.str() + " takes writes again " + plus_secs(p.writes_s) + " after the kill" +
                 (p.to.empty() ? "" : " (on " + p.to + ")"));
  }
  if (all_writes_s_ < 0 && std::all_of(parts_.begin(), parts_.end(), [](const auto& e) { return e.second.writes_s >= 0; })) {
    for (const auto& [tp, p] : parts_)
      all_writes_s_ = std::max(all_writes_s_, p.writes_s);
    ev.push_back("failover: every partition of " + victim_ + " takes writes again, " + secs(all_writes_s_) +
                 " after the kill");
  }
  return ev;
}

std::vector<std::string> failover_watch::summary_lines() const {
  std::vector<std::string> out;
  if (!wanted())
    return out;
  if (victim_.empty()) {
    out.push_back("  failover: kill -9 of a broker that owns partitions and is not the Raft leader at " +
                  secs(r_.opt.kill_broker_at * r_.opt.duration_seconds) + (gave_up_ ? " (given up)" : ""));
    return out;
  }
  size_t moved = 0, writing = 0;
  for (const auto& [tp, p] : parts_) {
    moved += !p.to.empty();
    writing += p.writes_s >= 0;
  }
  out.push_back("  failover: " + victim_ + " killed at " + secs(killed_at_s_) + "; fenced " + plus_secs(fenced_s_) +
                "; handed over " + std::to_string(moved) + "/" + std::to_string(parts_.size()) +
                "; take writes again " + std::to_string(writing) + "/" + std::to_string(parts_.size()) +
                (all_writes_s_ >= 0 ? " (all " + plus_secs(all_writes_s_) + " after the kill)" : ""));
  for (const auto& [tp, p] : parts_) {
    std::string l = "    " + tp.str();
    l.resize(std::max<size_t>(l.size() + 1, 18), ' ');
    l += victim_ + " -> " + (p.to.empty() ? std::string("?") : p.to);
    l.resize(std::max<size_t>(l.size() + 1, 30), ' ');
    l += p.to.empty() ? "offline" : "owner seen " + plus_secs(p.moved_s);
    l.resize(std::max<size_t>(l.size() + 1, 50), ' ');
    l += p.writes_s >= 0 ? "writes again " + plus_secs(p.writes_s) : "no write acknowledged yet";
    out.push_back(l);
  }
  return out;
}

std::vector<std::string> failover_watch::report_lines() const {
  std::vector<std::string> out;
  if (!wanted())
    return out;
  if (victim_.empty()) {
    if (interrupted > 0)
      out.push_back("failover: no broker was killed (interrupted first)");
    else
      out.push_back("failover: FAILED: no broker was killed (none but the Raft leader owned partitions of the "
                    "demo, or the kill failed)");
    return out;
  }
  std::string moves;
  double moved_by = -1;
  for (const auto& [tp, p] : parts_) {
    moves += (moves.empty() ? "" : ", ") + tp.str() + " -> " + (p.to.empty() ? std::string("?") : p.to);
    moved_by = std::max(moved_by, p.moved_s);
  }
  out.push_back("failover: killed " + victim_ + " (pid " + std::to_string(victim_pid_) + ", not the Raft leader " +
                leader_ + ") at " + secs(killed_at_s_) + "; fenced " + plus_secs(fenced_s_) + "; its " +
                std::to_string(parts_.size()) + " partitions handed over (" + moves + "), seen by " +
                plus_secs(moved_by));
  if (all_writes_s_ >= 0)
    out.push_back("failover: every partition of " + victim_ + " took writes again " + secs(all_writes_s_) +
                  " after the kill");
  else
    out.push_back(std::string("failover: ") + (interrupted > 0 ? "" : "FAILED: ") + "not every partition of " +
                  victim_ + " took writes again before the end");
  return out;
}

}  // namespace moonmq::demo

// moonmq-demo: cluster, moves and balancer views, and the live summary.

#include "tools/moonmq-demo/monitor.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "tools/common/progress_bar.hpp"
#include "util/clock.hpp"

namespace moonmq::demo {
namespace {

using namespace std::chrono_literals;

int64_t int_of(const json& j, const char* key, int64_t fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : fallback;
}

std::string str_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

std::string pad(std::string s, size_t width, bool right = false) {
  if (s.size() >= width)
    return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

/// 12345 → "12,345".
std::string grouped(int64_t n) {
  auto s = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<size_t>(i), ",");
  return n < 0 ? "-" + s : s;
}

/// The first of `keys` present in `j` (objects only).
const json* first_of(const json& j, std::initializer_list<const char*> keys) {
  if (!j.is_object())
    return nullptr;
  for (const char* k : keys) {
    auto it = j.find(k);
    if (it != j.end() && !it->is_null())
      return &*it;
  }
  return nullptr;
}

}  // namespace

using tools::human_bytes;
using tools::progress_bar;

cluster_snapshot take_snapshot(run& r) {
  cluster_snapshot s;
  s.at = steady::now();
  std::set<std::string> topics;
  for (const auto& tp : r.partitions)
    topics.insert(tp.topic);
  for (const auto& b : r.opt.brokers) {
    auto res = admin_call(r.opt, b, "GET", "/admin/cluster", {}, 5s);
    auto j = json::parse(res.body, nullptr, false);
    if (res.status != 200 || !j.is_object() || !j.contains("partitions") || !j["partitions"].is_array()) {
      s.error = b.id + ": " + describe_failure(res);
      continue;
    }
    s.ok = true;
    s.asked = b.id;
    if (j.contains("brokers") && j["brokers"].is_array())
      for (const auto& e : j["brokers"])
        s.brokers.emplace_back(str_of(e, "id"), e.value("alive", false));
    for (const auto& p : j["partitions"]) {
      auto topic = str_of(p, "topic");
      if (!topics.count(topic))
        continue;
      tp_key tp{topic, static_cast<int32_t>(int_of(p, "partition", -1))};
      partition_view v{str_of(p, "owner"), int_of(p, "size_bytes"), int_of(p, "log_end_offset"),
                       int_of(p, "owner_epoch")};
      if (!v.owner.empty() && r.broker(v.owner))
        r.set_owner(tp, v.owner);
      s.parts[tp] = v;
    }
    if (j.contains("fenced_brokers") && j["fenced_brokers"].is_array())
      for (const auto& f : j["fenced_brokers"])
        if (f.is_string())
          s.fenced.insert(f.get<std::string>());
    if (j.contains("offline_partitions") && j["offline_partitions"].is_array())
      for (const auto& p : j["offline_partitions"]) {
        tp_key tp{str_of(p, "topic"), static_cast<int32_t>(int_of(p, "partition", -1))};
        if (topics.count(tp.topic))
          s.offline.insert(tp);
      }
    if (j.contains("controller") && j["controller"].is_object()) {
      s.controller = str_of(j["controller"], "id");
      s.epoch = int_of(j["controller"], "epoch");
    }
    break;
  }
  return s;
}

std::map<std::string, broker_load> broker_loads(const run& r, const cluster_snapshot& now,
                                                const cluster_snapshot* before) {
  std::map<std::string, broker_load> out;
  for (const auto& b : r.opt.brokers)
    out[b.id];
  for (const auto& [id, alive] : now.brokers)
    out[id].alive = alive;
  for (const auto& id : now.fenced)
    out[id].fenced = true;
  double dt = before ? std::chrono::duration<double>(now.at - before->at).count() : 0.0;
  for (const auto& [tp, v] : now.parts) {
    auto& l = out[v.owner];
    ++l.partitions;
    l.bytes += v.size_bytes;
    if (!before || dt <= 0)
      continue;
    auto it = before->parts.find(tp);
    if (it == before->parts.end())
      continue;
    l.bytes_per_s += static_cast<double>(std::max<int64_t>(0, v.size_bytes - it->second.size_bytes)) / dt;
    l.records_per_s += static_cast<double>(std::max<int64_t>(0, v.log_end - it->second.log_end)) / dt;
  }
  return out;
}

moves_view take_moves(const run& r, int64_t since_ms) {
  moves_view m;
  std::set<std::string> topics;
  for (const auto& tp : r.partitions)
    topics.insert(tp.topic);
  for (const auto& b : r.opt.brokers) {
    auto res = admin_call(r.opt, b, "GET", "/admin/reassignments", {}, 5s);
    auto j = json::parse(res.body, nullptr, false);
    if (res.status != 200 || !j.is_object() || !j.contains("reassignments") || !j["reassignments"].is_array()) {
      m.error = b.id + ": " + describe_failure(res);
      continue;
    }
    m.ok = true;
    for (const auto& e : j["reassignments"]) {
      move_row row{{str_of(e, "topic"), static_cast<int32_t>(int_of(e, "partition", -1))},
                   str_of(e, "from"),
                   str_of(e, "to"),
                   str_of(e, "state"),
                   str_of(e, "error"),
                   int_of(e, "bytes_copied"),
                   int_of(e, "bytes_total"),
                   int_of(e, "started_ms"),
                   int_of(e, "updated_ms")};
      if (!topics.count(row.tp.topic) || row.started_ms < since_ms)
        continue;
      if (!row.terminal())
        ++m.unfinished;
      else if (row.state == "done")
        ++m.done;
      else if (row.state == "failed")
        ++m.failed;
      else
        ++m.cancelled;
      m.rows.push_back(std::move(row));
    }
    break;
  }
  return m;
}

namespace {

/// Reads one /admin/balancer answer (docs/balancer.md): {"enabled",
/// "dry_run","controller":{"superseded"},"passes","last_pass":{"brokers":
/// [{"id","alive","excluded","incomplete_window"}],"in_flight","plan":
/// <plan>,"executed","errors"}}.
balancer_view read_balancer(const std::string& broker, const json& j, const std::string& killed) {
  balancer_view v;
  v.status = 200;
  v.broker = broker;
  v.enabled = j.value("enabled", false);
  v.dry_run = j.value("dry_run", false);
  if (const json* f = first_of(j, {"failover"}); f && f->is_object())
    if (const json* last = first_of(*f, {"last"}); last && last->is_object())
      if (const json* rows = first_of(*last, {"executed"}); rows && rows->is_array())
        for (const auto& e : *rows)
          if (e.is_object() && e.value("type", "") == "FAILOVER")
            v.failovers.push_back({{str_of(e, "topic"), static_cast<int32_t>(int_of(e, "partition", -1))},
                                   str_of(e, "from"), str_of(e, "to"), str_of(e, "reason"), str_of(e, "result")});
  if (const json* c = first_of(j, {"controller"}); c && c->is_object())
    v.superseded = c->value("superseded", false);
  const json* last = first_of(j, {"last_pass"});
  if (!last || !last->is_object())
    return v;
  v.pass_id = j.contains("passes") ? j["passes"].dump() : last->value("started_ms", json()).dump();
  const json* plan = first_of(*last, {"plan"});
  const json empty = json::object();
  const json& pl = plan && plan->is_object() ? *plan : empty;
  std::map<std::string, int> per_goal;
  if (const json* actions = first_of(pl, {"actions"}); actions && actions->is_array()) {
    v.planned = actions->size();
    for (const auto& a : *actions)
      ++per_goal[a.value("goal", std::string{"?"})];
  }
  // A pass is conclusive when every broker took part with complete windows
  // and no move was in flight: then "planned nothing" means balanced.
  std::vector<std::string> not_counted;
  if (const json* bs = first_of(*last, {"brokers"}); bs && bs->is_array())
    for (const auto& b : *bs) {
      auto id = b.value("id", std::string{"?"});
      if (!b.value("alive", true)) {
        if (id != killed)
          not_counted.push_back(id + " down");
      }
      else if (b.value("incomplete_window", false))
        not_counted.push_back(id + " window incomplete");
      else if (b.value("excluded", false))
        not_counted.push_back(id + " excluded");
    }
  int64_t in_flight = 0;
  if (const json* f = first_of(*last, {"in_flight"}))
    in_flight = f->is_number() ? f->get<int64_t>() : f->is_array() ? static_cast<int64_t>(f->size()) : 0;
  v.conclusive = not_counted.empty() && in_flight == 0;
  if (const json* goals = first_of(pl, {"goals"}); goals && goals->is_array())
    for (const auto& g : *goals)
      if (g.contains("violations_before") && g["violations_before"].is_array() && !g["violations_before"].empty())
        v.violated.push_back(g.value("name", std::string{"?"}));

  std::string line = "balancer (" + broker + "): pass " + v.pass_id;
  if (v.planned && *v.planned > 0) {
    line += " planned " + std::to_string(*v.planned) + " move(s) (";
    bool first_goal = true;
    for (const auto& [g, n] : per_goal) {
      line += (first_goal ? "" : ", ") + g + " " + std::to_string(n);
      first_goal = false;
    }
    line += ")";
  } else if (v.planned) {
    line += " planned nothing";
  }
  const json* bb = first_of(pl, {"balancedness_before"});
  const json* ba = first_of(pl, {"balancedness_after"});
  if (bb && ba && bb->is_number() && ba->is_number()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", balancedness %.0f -> %.0f", bb->get<double>(), ba->get<double>());
    line += buf;
  }
  if (!not_counted.empty()) {
    line += " [not conclusive:";
    for (const auto& n : not_counted)
      line += " " + n + ";";
    line.back() = ']';
  } else if (in_flight > 0) {
    line += " [" + std::to_string(in_flight) + " move(s) in flight]";
  } else if (v.planned && *v.planned == 0 && !v.violated.empty()) {
    line += " [still outside the band:";
    for (const auto& g : v.violated)
      line += " " + g;
    line += "]";
  }
  if (v.dry_run)
    line += " (DryRun: nothing moves)";
  if (v.superseded)
    line += " (superseded by a newer controller: it no longer acts)";
  if (const json* e = first_of(*last, {"errors"}); e && e->is_array() && !e->empty())
    line += " errors: " + (*e)[0].dump();
  v.line = line;
  return v;
}

}  // namespace

balancer_view take_balancer(const run& r, const std::string& killed) {
  balancer_view best;
  for (const auto& b : r.opt.brokers) {
    auto res = admin_call(r.opt, b, "GET", "/admin/balancer", {}, 5s);
    auto j = json::parse(res.body, nullptr, false);
    if (res.status != 200 || !j.is_object()) {
      if (best.status != 200)
        best.status = res.status;
      continue;
    }
    auto v = read_balancer(b.id, j, killed);
    // Prefer an acting loop (enabled, not superseded) with a pass behind it.
    auto rank = [](const balancer_view& x) {
      return (x.status == 200 ? 8 : 0) + (x.enabled ? 4 : 0) + (!x.superseded ? 2 : 0) + (!x.pass_id.empty() ? 1 : 0);
    };
    if (rank(v) > rank(best))
      best = v;
  }
  if (best.status == 200 && best.line.empty())
    best.line = "balancer (" + best.broker + "): " + (best.enabled ? "no pass yet" : "disabled");
  return best;
}

std::vector<std::string> summary_lines(const run& r, double elapsed_s, const cluster_snapshot& snap,
                                       const std::map<std::string, broker_load>& loads, const moves_view& moves,
                                       const balancer_view& bal, const std::string& status) {
  std::vector<std::string> out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "moonmq-demo run %s  %6.1f s  %s", r.id.c_str(), elapsed_s, status.c_str());
  out.emplace_back(buf);
  uint64_t acked = r.acked_records, delivered = r.delivered_records;
  int64_t lag = 0;
  for (const auto& [tp, c] : r.consumed)
    lag += std::max<int64_t>(0, c->log_end - c->position);
  out.push_back("  produced " + grouped(static_cast<int64_t>(acked)) + " acked, " +
                grouped(static_cast<int64_t>(r.failed_records.load())) + " unacknowledged   consumed " +
                grouped(static_cast<int64_t>(delivered)) + " deliveries, lag " + grouped(lag));
  if (!snap.ok) {
    out.push_back("  cluster: no admin API answered (" + snap.error + ")");
  } else {
    out.push_back("  " + pad("broker", 8) + pad("alive", 7) + pad("partitions", 12) + pad("bytes", 12, true) +
                  pad("produce B/s", 15, true) + pad("records/s", 11, true));
    for (const auto& [id, l] : loads)
      out.push_back("  " + pad(id, 8) + pad(l.fenced ? "FENCED" : l.alive ? "yes" : "NO", 7) +
                    pad(std::to_string(l.partitions), 12) +
                    pad(human_bytes(static_cast<double>(l.bytes)), 12, true) +
                    pad(human_bytes(l.bytes_per_s) + "/s", 15, true) +
                    pad(grouped(static_cast<int64_t>(l.records_per_s + 0.5)), 11, true));
  }
  if (!moves.ok) {
    out.push_back("  moves: " + moves.error);
  } else {
    out.push_back("  moves: " + std::to_string(moves.unfinished) + " in progress, " + std::to_string(moves.done) +
                  " done, " + std::to_string(moves.failed) + " failed" +
                  (moves.cancelled ? ", " + std::to_string(moves.cancelled) + " cancelled" : ""));
    // Unfinished moves first, then the latest finished ones.
    std::vector<const move_row*> shown;
    for (const auto& m : moves.rows)
      if (!m.terminal())
        shown.push_back(&m);
    for (auto it = moves.rows.rbegin(); it != moves.rows.rend() && shown.size() < 6; ++it)
      if (it->terminal() && util::wall_ms() - it->updated_ms < std::max(3000, 2 * r.opt.summary_ms))
        shown.push_back(&*it);
    size_t lines = 0;
    for (const auto* m : shown) {
      if (++lines > 8) {
        out.push_back("    ... and " + std::to_string(shown.size() - 8) + " more");
        break;
      }
      std::string l = "    " + pad(m->tp.str(), 14) + pad(m->from + " -> " + m->to, 10) + pad(m->state, 10);
      // A move on shared storage hands the partition over without copying a byte.
      if (m->total == 0 && m->copied == 0 && m->state == "done")
        l += "nothing copied";
      else
        l += progress_bar(m->copied, m->total, m->state == "done") + "  " +
             human_bytes(static_cast<double>(m->copied)) + " / " + human_bytes(static_cast<double>(m->total));
      if (!m->error.empty())
        l += "  (" + m->error + ")";
      out.push_back(l);
    }
  }
  if (r.opt.balance == "auto") {
    if (bal.status == 200)
      out.push_back("  " + bal.line);
    else
      out.push_back("  balancer: GET /admin/balancer answered " +
                    (bal.status ? std::to_string(bal.status) : std::string("nothing")) + " (no balance loop)");
  }
  auto errs = r.produce_errors.snapshot();
  auto cerrs = r.consume_errors.snapshot();
  if (!errs.empty() || !cerrs.empty()) {
    std::string l = "  errors (retried):";
    for (const auto& [k, n] : errs)
      l += " produce " + k + " x" + std::to_string(n) + ";";
    for (const auto& [k, n] : cerrs)
      l += " " + k + " x" + std::to_string(n) + ";";
    out.push_back(l);
  }
  return out;
}

std::vector<std::string> before_after_lines(const run& r, const std::map<std::string, broker_load>& before,
                                            const std::map<std::string, broker_load>& after) {
  std::vector<std::string> out;
  out.push_back("before/after (before: first measurement with traffic; after: at the end; produce load over the "
                "previous summary interval)");
  out.push_back("  " + pad("broker", 8) + pad("partitions", 20) + pad("bytes", 26) + "produce B/s");
  out.push_back("  " + pad("", 8) + pad("before  after", 20) + pad("before      after", 26) + "before        after");
  std::set<std::string> ids;
  for (const auto& b : r.opt.brokers)
    ids.insert(b.id);
  for (const auto& [id, l] : after)
    ids.insert(id);
  auto get = [](const std::map<std::string, broker_load>& m, const std::string& id) {
    auto it = m.find(id);
    return it != m.end() ? it->second : broker_load{};
  };
  for (const auto& id : ids) {
    auto b = get(before, id), a = get(after, id);
    out.push_back("  " + pad(id, 8) + pad(std::to_string(b.partitions), 8) + pad(std::to_string(a.partitions), 12) +
                  pad(human_bytes(static_cast<double>(b.bytes)), 12) + pad(human_bytes(static_cast<double>(a.bytes)), 14) +
                  pad(human_bytes(b.bytes_per_s) + "/s", 14) + human_bytes(a.bytes_per_s) + "/s");
  }
  return out;
}

}  // namespace moonmq::demo

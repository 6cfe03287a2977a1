// moonmq-demo: the final check. Every partition is read back in full from
// its current owner and compared with what the producers were acknowledged
// and what the consumers delivered.

#include "tools/moonmq-demo/verify.hpp"

#include <set>
#include <thread>

namespace moonmq::demo {
namespace {

using namespace std::chrono_literals;

/// A whole partition as read back: seq per offset from log_start (-1: a
/// record this run did not write).
struct log_read {
  bool ok = false;
  std::string error;
  int64_t log_start = 0;
  int64_t log_end = 0;
  std::vector<int64_t> seqs;
  std::string owner;
  uint64_t gaps = 0;  ///< pages whose offsets were not contiguous
};

log_read read_log(run& r, const tp_key& tp) {
  log_read out;
  client_pool pool{r};
  std::string owner = r.owner_of(tp);
  int64_t next = -1;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string target = "/v1/topics/" + tp.topic + "/partitions/" + std::to_string(tp.partition) +
                         "/records?max_records=10000" + (next >= 0 ? "&offset=" + std::to_string(next) : "");
    auto res = pool.call(owner, "GET", target, {}, 30s);
    auto j = json::parse(res.body, nullptr, false);
    if (res.status == 421 && j.is_object() && j.value("owner", json()).is_string() &&
        r.broker(j["owner"].get<std::string>())) {
      owner = j["owner"].get<std::string>();
      std::this_thread::sleep_for(50ms);
      continue;
    }
    if (res.status != 200 || !j.is_object() || !j.contains("records")) {
      out.error = owner + ": " + describe_failure(res);
      std::this_thread::sleep_for(200ms);
      continue;
    }
    if (next < 0) {
      out.log_start = j.value("log_start_offset", int64_t{0});
      next = out.log_start;
    }
    out.log_end = j.value("log_end_offset", int64_t{0});
    for (const auto& rec : j["records"]) {
      int64_t off = rec.value("offset", int64_t{-1});
      if (off != next) {
        ++out.gaps;
        // Keep the vector indexed by offset: fill what was skipped as foreign.
        while (next < off) {
          out.seqs.push_back(-1);
          ++next;
        }
        if (off < next)
          continue;
      }
      auto value = rec.value("value", json()).is_string() ? rec["value"].get<std::string>() : std::string{};
      auto seq = parse_value(value, r.id, tp, r.opt.value_bytes);
      out.seqs.push_back(seq ? static_cast<int64_t>(*seq) : -1);
      ++next;
    }
    if (next >= out.log_end) {
      out.ok = true;
      out.owner = owner;
      out.error.clear();
      return out;
    }
    if (j["records"].empty()) {
      out.error = owner + ": empty page at " + std::to_string(next) + " below the log end " +
                  std::to_string(out.log_end);
      std::this_thread::sleep_for(200ms);
    }
  }
  return out;
}

std::string grouped(uint64_t n) {
  auto s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace

verify_result verify(run& r) {
  verify_result v;
  uint64_t acked_total = 0, at_offset = 0, lost = 0, duplicated = 0, unacked_in_log = 0, double_acks = 0;
  uint64_t consumed_ok = 0, not_consumed = 0, order_problems = 0, deliveries = 0, repeats = 0, repositions = 0;
  uint64_t missing_commits = 0, unreadable = 0, gaps = 0;
  std::vector<std::string> details;
  for (const auto& tp : r.partitions) {
    auto& ledger = *r.ledgers.at(tp);
    auto& c = *r.consumed.at(tp);
    std::map<int64_t, uint64_t> acked;
    {
      std::lock_guard<std::mutex> g{ledger.mu};
      acked = ledger.acked;
      double_acks += ledger.double_acks.size();
    }
    acked_total += acked.size();
    auto log = read_log(r, tp);
    uint64_t p_lost = 0, p_dup = 0, p_unacked = 0, p_consumed = 0, p_missing = 0;
    if (!log.ok) {
      ++unreadable;
      p_lost = acked.size();
      details.push_back("verify:   " + tp.str() + ": cannot read the log back: " + log.error);
    } else {
      gaps += log.gaps;
      std::set<uint64_t> acked_seqs;
      for (const auto& [off, seq] : acked) {
        acked_seqs.insert(seq);
        int64_t i = off - log.log_start;
        if (i >= 0 && i < static_cast<int64_t>(log.seqs.size()) && log.seqs[static_cast<size_t>(i)] == static_cast<int64_t>(seq)) {
          ++at_offset;
        } else {
          ++p_lost;
          if (p_lost <= 3)
            details.push_back("verify:   " + tp.str() + ": acknowledged seq " + std::to_string(seq) + " at offset " +
                              std::to_string(off) + " is not there");
        }
      }
      std::set<int64_t> seen;
      for (int64_t s : log.seqs) {
        if (s < 0)
          continue;
        if (!seen.insert(s).second) {
          ++p_dup;
          if (p_dup <= 3)
            details.push_back("verify:   " + tp.str() + ": seq " + std::to_string(s) + " is in the log twice");
        }
        if (!acked_seqs.count(static_cast<uint64_t>(s)))
          ++p_unacked;
      }
      // What the consumer delivered must be what the log holds at that offset.
      for (const auto& [off, seq] : c.delivered) {
        int64_t i = off - log.log_start;
        if (i < 0 || i >= static_cast<int64_t>(log.seqs.size()) || log.seqs[static_cast<size_t>(i)] != static_cast<int64_t>(seq)) {
          ++order_problems;
          details.push_back("verify:   " + tp.str() + ": offset " + std::to_string(off) +
                            " was delivered with a record the log does not hold there");
          break;
        }
      }
    }
    for (const auto& [off, seq] : acked) {
      auto it = c.delivered.find(off);
      if (it != c.delivered.end() && it->second == seq) {
        ++p_consumed;
      } else {
        ++p_missing;
        if (p_missing <= 3)
          details.push_back("verify:   " + tp.str() + ": acknowledged offset " + std::to_string(off) +
                            (it == c.delivered.end() ? " was never consumed" : " was consumed with another record"));
      }
    }
    for (const auto& p : c.problems)
      details.push_back("verify:   " + tp.str() + ": " + p);
    order_problems += c.problems.size();
    lost += p_lost;
    duplicated += p_dup;
    unacked_in_log += p_unacked;
    consumed_ok += p_consumed;
    not_consumed += p_missing;
    deliveries += c.deliveries;
    repeats += c.repeats;
    repositions += c.repositions;
    missing_commits += c.missing_commits;
    bool ok = log.ok && p_lost == 0 && p_dup == 0 && p_missing == 0 && c.problems.empty();
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "verify: %-14s owner %-4s acked %9s  in log at offset %9s  dup %2llu  unacked %4llu  consumed %9s  "
                  "repeats %5llu  %s",
                  tp.str().c_str(), log.owner.c_str(), grouped(acked.size()).c_str(),
                  grouped(acked.size() - p_lost).c_str(), static_cast<unsigned long long>(p_dup),
                  static_cast<unsigned long long>(p_unacked), grouped(p_consumed).c_str(),
                  static_cast<unsigned long long>(c.repeats), ok ? "ok" : "FAILED");
    v.lines.emplace_back(buf);
  }
  v.lines.insert(v.lines.end(), details.begin(), details.end());
  v.lines.push_back("verify: acknowledged records: " + grouped(acked_total) + " in " +
                    std::to_string(r.partitions.size()) + " partitions (" + grouped(r.failed_records) +
                    " more were sent in requests that failed and were not acknowledged)");
  v.lines.push_back("verify: at their acknowledged offsets: " + grouped(at_offset) + "; lost: " + grouped(lost) +
                    "; acknowledged twice: " + grouped(double_acks) + "; unreadable partitions: " +
                    grouped(unreadable));
  v.lines.push_back("verify: duplicated in the log: " + grouped(duplicated) +
                    "; written but never acknowledged: " + grouped(unacked_in_log) + " (allowed)");
  v.lines.push_back("verify: consumed: " + grouped(consumed_ok) + " of " + grouped(acked_total) +
                    " acknowledged; not consumed: " + grouped(not_consumed) + "; order or value problems: " +
                    grouped(order_problems + gaps));
  v.lines.push_back("verify: deliveries: " + grouped(deliveries) + ", repeats: " + grouped(repeats) +
                    " (at-least-once; consumers resumed from a new owner's committed offset " + grouped(repositions) +
                    " times" + (missing_commits ? ", " + grouped(missing_commits) + " times the new owner had none" : "") +
                    ")");
  v.passed = acked_total > 0 && lost == 0 && double_acks == 0 && unreadable == 0 && duplicated == 0 &&
             not_consumed == 0 && order_problems == 0 && gaps == 0;
  if (acked_total == 0)
    v.lines.push_back("verify: nothing was acknowledged, so nothing was shown");
  v.lines.push_back(std::string("verify: ") + (v.passed ? "PASSED" : "FAILED"));
  return v;
}

}  // namespace moonmq::demo

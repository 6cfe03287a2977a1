#pragma once
// Helpers for the raft_core scenario tests: configs, hand-made messages, a
// ready() drain that persists into an in-memory image, and a lossless
// in-process cluster with isolation and crash/restart.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "raft/raft_core.hpp"

namespace moonmq::raft::testing {

inline node_id id(const char* s) { return node_id{s}; }

inline core_config config(const char* self, std::vector<const char*> members = {"b1", "b2", "b3"},
                          std::size_t max_log_entries = 512) {
  core_config c;
  c.self = id(self);
  for (auto* m : members)
    c.members.push_back(id(m));
  c.election_ticks = 10;
  c.heartbeat_ticks = 2;
  c.max_log_entries = max_log_entries;
  c.seed = 42;
  return c;
}

inline raft_core open_core(const core_config& c, const persisted_state& p = {}) {
  auto r = raft_core::open(c, p);
  if (!r)
    throw std::runtime_error("raft_core::open: " + r.err().message);
  return std::move(*r);
}

inline log_entry owner_at(uint64_t t, uint64_t i, const char* topic = "orders", int32_t part = 0,
                          const char* owner = "b2") {
  return log_entry{term{t}, log_index{i}, owner_entry{topic, part, id(owner)}};
}

/// A persisted image with entries of the given terms at indexes 1..n.
inline persisted_state log_of_terms(std::vector<uint64_t> terms, uint64_t current_term, uint64_t commit = 0) {
  persisted_state p;
  for (std::size_t i = 0; i < terms.size(); ++i)
    p.entries.push_back(owner_at(terms[i], i + 1, "orders", static_cast<int32_t>(i)));
  p.hard.current_term = term{current_term};
  p.hard.commit = log_index{commit};
  return p;
}

inline message msg(const char* from, const char* to, uint64_t t, message_body b) {
  return message{id(from), id(to), term{t}, std::move(b)};
}

/// One ready() cycle: persists into `disk` (if given), advances, returns the batch.
inline ready_batch drain(raft_core& c, persisted_state* disk = nullptr) {
  ready_batch rd = c.ready();
  if (disk)
    (void)apply_ready(*disk, rd);
  c.advance();
  return rd;
}

template <class T>
std::vector<std::pair<message, T>> of_type(const std::vector<message>& ms) {
  std::vector<std::pair<message, T>> out;
  for (const auto& m : ms)
    if (auto* b = std::get_if<T>(&m.body))
      out.emplace_back(m, *b);
  return out;
}

/// Turns `c` into the leader of the next term by feeding it granted pre-votes
/// and votes from every other member (it must be a follower with an up-to-date log).
inline void elect(raft_core& c) {
  for (int i = 0; i < 100 && c.current_role() == role::follower; ++i)
    c.tick();
  uint64_t next = c.current_term().value + 1;
  for (const auto& m : c.config().members)
    if (m != c.config().self && c.current_role() == role::pre_candidate)
      c.step(message{m, c.config().self, term{next}, vote_response{true, true}});
  for (const auto& m : c.config().members)
    if (m != c.config().self && c.current_role() == role::candidate)
      c.step(message{m, c.config().self, term{next}, vote_response{true, false}});
}

/// Lossless in-process cluster; messages are delivered in send order.
class mini_cluster {
 public:
  explicit mini_cluster(std::vector<const char*> members, std::size_t max_log_entries = 512)
      : voters_(members), max_log_entries_(max_log_entries) {
    for (auto* m : members) {
      auto c = config(m, members, max_log_entries);
      c.seed = 7 + nodes_.size() * 31;
      node n;
      n.cfg = c;
      n.core.emplace(open_core(c));
      nodes_.emplace(m, std::move(n));
    }
  }

  /// Starts a non-voter `n` (a broker joining at runtime): it knows the
  /// voters and itself as a learner; the voters replicate to it once a
  /// register entry for it is applied.
  void add_learner(const char* n) {
    auto c = config(n, voters_, max_log_entries_);
    c.learners.push_back(id(n));
    c.seed = 7 + nodes_.size() * 31;
    node nd;
    nd.cfg = c;
    nd.core.emplace(open_core(c));
    nodes_.emplace(n, std::move(nd));
  }

  raft_core& core(const char* n) { return *nodes_.at(n).core; }
  const ownership_state& applied(const char* n) { return nodes_.at(n).sm; }
  const persisted_state& disk(const char* n) { return nodes_.at(n).disk; }
  bool up(const char* n) { return nodes_.at(n).core.has_value(); }

  void isolate(const char* n) { isolated_.insert(n); }
  void heal() { isolated_.clear(); }
  void crash(const char* n) { nodes_.at(n).core.reset(); }
  void restart(const char* n) {
    auto& nd = nodes_.at(n);
    nd.core.emplace(open_core(nd.cfg, nd.disk));
    nd.sm = ownership_state{};
    if (nd.disk.snap)
      nd.sm.load(*nd.disk.snap);
  }

  /// One tick on every live node, then deliver until quiet.
  void tick() {
    for (auto& [name, n] : nodes_)
      if (n.core)
        n.core->tick();
    settle();
  }
  void ticks(int k) {
    for (int i = 0; i < k; ++i)
      tick();
  }

  /// Processes ready batches and delivers messages until none are left.
  void settle() {
    for (int round = 0; round < 1000; ++round) {
      std::vector<message> out;
      for (auto& [name, n] : nodes_) {
        if (!n.core || !n.core->has_ready())
          continue;
        ready_batch rd = n.core->ready();
        (void)apply_ready(n.disk, rd);
        if (rd.snap)
          n.sm.load(*rd.snap);
        for (const auto& e : rd.committed)
          (void)n.sm.apply(e);
        n.core->advance();
        for (auto& m : rd.messages)
          out.push_back(std::move(m));
      }
      if (out.empty())
        return;
      for (auto& m : out) {
        ++delivered_;
        if (isolated_.count(m.from.str()) || isolated_.count(m.to.str()))
          continue;
        auto& dst = nodes_.at(m.to.str());
        if (dst.core)
          dst.core->step(m);
      }
    }
  }

  /// The unique leader among live nodes, if exactly one node claims the highest leader term.
  std::optional<std::string> leader() {
    std::optional<std::string> best;
    term best_term;
    for (auto& [name, n] : nodes_)
      if (n.core && n.core->current_role() == role::leader && n.core->current_term() >= best_term) {
        best = name;
        best_term = n.core->current_term();
      }
    return best;
  }

  /// Ticks until some node is leader (at most `max_ticks`).
  std::optional<std::string> elect_any(int max_ticks = 200) {
    for (int i = 0; i < max_ticks; ++i) {
      tick();
      if (auto l = leader())
        return l;
    }
    return std::nullopt;
  }

  uint64_t delivered() const { return delivered_; }

 private:
  struct node {
    core_config cfg;
    std::optional<raft_core> core;
    persisted_state disk;
    ownership_state sm;
  };
  std::map<std::string, node> nodes_;
  std::vector<const char*> voters_;
  std::size_t max_log_entries_;
  std::set<std::string> isolated_;
  uint64_t delivered_ = 0;
};

}  // namespace moonmq::raft::testing

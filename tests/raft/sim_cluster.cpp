#include "sim_cluster.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "raft/raft_core.hpp"

namespace moonmq::raft::sim {

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  return (end && *end == '\0') ? static_cast<uint64_t>(x) : fallback;
}

namespace {

class rng {
 public:
  explicit rng(uint64_t seed) : s_(seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

 private:
  uint64_t s_;
};

struct sim_node {
  node_id id;
  persisted_state disk;
  std::optional<raft_core> core;
  ownership_state sm;              ///< the driver's applied state machine
  uint64_t incarnation = 0;
  log_index registered_commit;     ///< commit already copied into the committed registry
};

struct in_flight {
  uint64_t at;
  uint64_t seq;
  std::size_t from, to;
  message msg;
};

struct committed_record {
  log_entry entry;
  term observed_in;  ///< term of the observing node: the entry was committed in a term <= this
};

class cluster {
 public:
  explicit cluster(const sim_options& o) : o_(o), rng_(o.seed) {
    res_.seed = o.seed;
    for (std::size_t i = 0; i < o_.nodes; ++i) {
      nodes_.push_back(sim_node{});
      nodes_.back().id = node_id{"n" + std::to_string(i + 1)};
      members_.push_back(nodes_.back().id);
    }
    group_.assign(o_.nodes, 0);
    ref_.emplace_back();
    for (std::size_t i = 0; i < o_.nodes; ++i)
      start(i);
  }

  sim_result run() {
    for (uint32_t t = 0; t < o_.chaos_ticks && res_.ok; ++t) {
      chaos();
      step_tick();
    }
    if (res_.ok)
      liveness();
    return res_;
  }

 private:
  template <class... Args>
  void trace(const char* fmt, Args... args) {
    if (!o_.trace)
      return;
    std::printf("[t=%llu] ", static_cast<unsigned long long>(now_));
    std::printf(fmt, args...);
    std::printf("\n");
  }

  void fail(const std::string& why) {
    if (!res_.ok)
      return;
    res_.ok = false;
    res_.failure = "tick " + std::to_string(now_) + ": " + why;
    trace("VIOLATION %s", why.c_str());
  }

  core_config config_for(std::size_t i) {
    core_config c;
    c.self = nodes_[i].id;
    c.members = members_;
    c.election_ticks = o_.election_ticks;
    c.heartbeat_ticks = o_.heartbeat_ticks;
    c.max_log_entries = o_.max_log_entries;
    c.max_entries_per_append = 4;
    c.seed = o_.seed * 1000003ULL + i * 7919ULL + nodes_[i].incarnation * 104729ULL;
    return c;
  }

  void start(std::size_t i) {
    sim_node& n = nodes_[i];
    auto c = raft_core::open(config_for(i), n.disk);
    if (!c) {
      fail("restart of " + n.id.str() + " refused: " + c.err().message);
      return;
    }
    n.core.emplace(std::move(*c));
    n.sm = ownership_state{};
    if (n.disk.snap) {
      n.sm.load(*n.disk.snap);
      check_state(n, "restart snapshot");
    }
    n.registered_commit = log_index{0};
    trace("start %s term=%llu commit=%llu last=%llu", n.id.str().c_str(),
          static_cast<unsigned long long>(n.core->current_term().value),
          static_cast<unsigned long long>(n.core->commit_index().value),
          static_cast<unsigned long long>(n.core->log().last_index().value));
  }

  void crash(std::size_t i, const char* how) {
    sim_node& n = nodes_[i];
    if (!n.core)
      return;
    if (n.core->current_role() == role::leader)
      leader_crashed_at_ = now_;
    trace("crash %s (%s)", n.id.str().c_str(), how);
    n.core.reset();
    ++n.incarnation;
    ++res_.crashes;
  }

  bool connected(std::size_t a, std::size_t b) const { return group_[a] == group_[b]; }

  void chaos() {
    if (partitioned_ ? rng_.chance(o_.p_heal) : rng_.chance(o_.p_partition)) {
      if (partitioned_) {
        std::fill(group_.begin(), group_.end(), 0);
        partitioned_ = false;
        trace("%s", "heal");
      } else {
        for (auto& g : group_)
          g = static_cast<int>(rng_.below(2));
        partitioned_ = true;
        trace("%s", "partition");
      }
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].core && rng_.chance(o_.p_crash))
        crash(i, "at tick start");
      else if (!nodes_[i].core && rng_.chance(o_.p_restart))
        start(i);
    }
    if (rng_.chance(o_.p_propose)) {
      std::vector<std::size_t> leaders;
      for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].core && nodes_[i].core->current_role() == role::leader)
          leaders.push_back(i);
      if (!leaders.empty())
        propose(leaders[rng_.below(leaders.size())], random_owner());
    }
  }

  owner_entry random_owner() {
    static const char* topics[] = {"orders", "audit"};
    return owner_entry{topics[rng_.below(2)], static_cast<int32_t>(rng_.below(3)),
                       members_[rng_.below(members_.size())]};
  }

  std::optional<log_index> propose(std::size_t i, owner_entry e) {
    auto r = nodes_[i].core->propose(e);
    if (!r)
      return std::nullopt;
    trace("propose on %s -> index %llu", nodes_[i].id.str().c_str(), static_cast<unsigned long long>(r->value));
    return *r;
  }

  void step_tick() {
    ++now_;
    for (auto& n : nodes_)
      if (n.core)
        n.core->tick();
    deliver();
    for (std::size_t i = 0; i < nodes_.size() && res_.ok; ++i)
      process_ready(i);
    if (res_.ok)
      check_invariants();
  }

  void enqueue(in_flight f) {
    uint64_t at = f.at;
    net_[at].push_back(std::move(f));
  }

  void deliver() {
    auto bucket = net_.find(now_);
    if (bucket == net_.end())
      return;
    std::vector<in_flight> due = std::move(bucket->second);  // in send order (seq)
    net_.erase(bucket);
    for (auto& f : due) {
      sim_node& dst = nodes_[f.to];
      if (!dst.core || !connected(f.from, f.to) || (!healed_ && rng_.chance(o_.p_drop)))
        continue;
      if (!healed_ && rng_.chance(o_.p_dup))
        enqueue(in_flight{now_ + 1 + rng_.below(o_.max_delay + 1), seq_++, f.from, f.to, f.msg});
      if (o_.trace)
        trace("deliver %s", describe(f.msg).c_str());
      dst.core->step(f.msg);
    }
  }

  void send(std::size_t from, message m) {
    auto it = std::find(members_.begin(), members_.end(), m.to);
    if (it == members_.end()) {
      fail("message to unknown node " + m.to.str());
      return;
    }
    if (o_.json_roundtrip) {
      nlohmann::json j = to_json(m);
      auto back = parse_message(j.dump());
      if (!back || to_json(*back) != j) {
        fail("JSON round trip changed " + describe(m) + (back ? ": " + j.dump().substr(0, 600) + " became "
                                                                  + to_json(*back).dump().substr(0, 600)
                                                            : ": " + back.err().message));
        return;
      }
      m = std::move(*back);
    }
    ++res_.messages;
    auto to = static_cast<std::size_t>(it - members_.begin());
    enqueue(in_flight{now_ + 1 + rng_.below(o_.max_delay + 1), seq_++, from, to, std::move(m)});
  }

  void process_ready(std::size_t i) {
    sim_node& n = nodes_[i];
    if (!n.core || !n.core->has_ready())
      return;
    ready_batch rd = n.core->ready();
    if (!healed_ && rng_.chance(o_.p_crash_in_ready)) {
      switch (rng_.below(3)) {
        case 0:
          crash(i, "before persisting a ready");
          return;
        case 1: {  // log and snapshot durable, hard state not yet
          ready_batch partial = rd;
          partial.hard.reset();
          if (auto st = apply_ready(n.disk, partial); !st)
            fail("apply_ready: " + st.err().message);
          crash(i, "after persisting the log but not the hard state");
          return;
        }
        default:
          if (auto st = apply_ready(n.disk, rd); !st)
            fail("apply_ready: " + st.err().message);
          crash(i, "after persisting, before sending");
          return;
      }
    }
    if (auto st = apply_ready(n.disk, rd); !st) {
      fail("apply_ready: " + st.err().message);
      return;
    }
    if (auto st = check_persisted(n.disk); !st) {
      fail(n.id.str() + " disk image invalid: " + st.err().message);
      return;
    }
    for (auto& m : rd.messages)
      send(i, std::move(m));
    if (rd.snap) {
      if (rd.snap->last_index > n.sm.applied_index())
        ++res_.snapshots_installed;
      n.sm.load(*rd.snap);
      check_state(n, "snapshot load");
      n.registered_commit = std::max(n.registered_commit, rd.snap->last_index);
    }
    for (const auto& e : rd.committed) {
      if (auto st = n.sm.apply(e); !st) {
        fail(n.id.str() + " apply out of order: " + st.err().message);
        return;
      }
      record_applied(n, e);
    }
    n.core->advance();
  }

  void record_applied(sim_node& n, const log_entry& e) {
    uint64_t i = e.index.value;
    if (i < ref_.size()) {
      if (!(n.sm == ref_[i]))
        fail(n.id.str() + " applied " + describe(e) + " but its state differs from the reference at that index");
    } else if (i == ref_.size()) {
      ownership_state next = ref_.back();
      (void)next.apply(e);
      ref_.push_back(std::move(next));
      check_state(n, "apply");
    } else {
      fail(n.id.str() + " applied index " + std::to_string(i) + " beyond the reference (gap)");
    }
    register_committed(n, e);
    res_.committed_entries = std::max<uint64_t>(res_.committed_entries, i);
    if (o_.trace)
      trace("apply %s %s", n.id.str().c_str(), describe(e).c_str());
  }

  /// Records `e` as committed (seen by `n`, whose term bounds the term it was committed in).
  void register_committed(const sim_node& n, const log_entry& e) {
    auto [it, inserted] = committed_.emplace(e.index.value, committed_record{e, n.core->current_term()});
    if (!inserted && it->second.entry != e)
      fail("committed entries differ at index " + std::to_string(e.index.value) + ": " +
           describe(it->second.entry) + " vs " + describe(e) + " on " + n.id.str());
  }

  void check_state(const sim_node& n, const char* what) {
    uint64_t i = n.sm.applied_index().value;
    if (i >= ref_.size()) {
      fail(n.id.str() + " " + what + " at index " + std::to_string(i) + " beyond anything applied");
      return;
    }
    if (!(n.sm == ref_[i]))
      fail(n.id.str() + " " + what + ": ownership state at index " + std::to_string(i) + " differs from the reference");
  }

  void check_invariants() {
    // Election safety.
    for (auto& n : nodes_) {
      if (!n.core || n.core->current_role() != role::leader)
        continue;
      uint64_t t = n.core->current_term().value;
      auto [it, inserted] = leaders_.emplace(t, n.id);
      if (!inserted && it->second != n.id) {
        fail("two leaders in term " + std::to_string(t) + ": " + it->second.str() + " and " + n.id.str());
        return;
      }
      if (inserted) {
        trace("leader %s term=%llu", n.id.str().c_str(), static_cast<unsigned long long>(t));
        note_election();
        check_leader_completeness(n);
      }
    }
    // Committed registry (feeds leader completeness).
    for (auto& n : nodes_) {
      if (!n.core)
        continue;
      const raft_log& lg = n.core->log();
      log_index from = std::max(n.registered_commit.next(), lg.first_index());
      for (log_index i = from; i <= n.core->commit_index() && res_.ok; i = i.next())
        register_committed(n, lg.at(i));
      if (!res_.ok)
        return;
      n.registered_commit = std::max(n.registered_commit, n.core->commit_index());
    }
    // Log matching, pairwise.
    for (std::size_t a = 0; a < nodes_.size(); ++a)
      for (std::size_t b = a + 1; b < nodes_.size(); ++b)
        if (nodes_[a].core && nodes_[b].core)
          check_log_matching(nodes_[a], nodes_[b]);
  }

  void check_log_matching(const sim_node& na, const sim_node& nb) {
    const raft_log& a = na.core->log();
    const raft_log& b = nb.core->log();
    log_index lo = std::max(a.first_index(), b.first_index());
    log_index hi = std::min(a.last_index(), b.last_index());
    bool matched = false;
    for (log_index i = hi; i >= lo && i.value > 0; i = i.prev()) {
      const log_entry& ea = a.at(i);
      const log_entry& eb = b.at(i);
      if (!matched && ea.entry_term == eb.entry_term)
        matched = true;
      if (matched && ea != eb) {
        fail("log matching violated at index " + std::to_string(i.value) + " between " + na.id.str() + " (" +
             describe(ea) + ") and " + nb.id.str() + " (" + describe(eb) + ")");
        return;
      }
    }
  }

  void check_leader_completeness(const sim_node& n) {
    const raft_log& lg = n.core->log();
    term t = n.core->current_term();
    for (const auto& [idx, rec] : committed_) {
      if (rec.observed_in >= t)
        continue;
      log_index i{idx};
      if (i <= lg.snapshot_index())
        continue;  // folded into its snapshot, which check_state compares with the reference
      if (i > lg.last_index() || lg.at(i) != rec.entry) {
        fail("leader completeness: leader " + n.id.str() + " of term " + std::to_string(t.value) +
             " lacks committed " + describe(rec.entry));
        return;
      }
    }
  }

  void note_election() {
    if (res_.first_election_ticks == 0)
      res_.first_election_ticks = static_cast<uint32_t>(now_);
    if (leader_crashed_at_) {
      res_.failover_ticks.push_back(static_cast<uint32_t>(now_ - *leader_crashed_at_));
      leader_crashed_at_.reset();
    }
  }

  void liveness() {
    healed_ = true;
    std::fill(group_.begin(), group_.end(), 0);
    partitioned_ = false;
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (!nodes_[i].core)
        start(i);
    trace("%s", "liveness phase: healed, all nodes up");
    uint64_t healed_at = now_;
    std::optional<log_index> marker;
    std::optional<std::size_t> marker_node;
    term marker_term;
    for (uint32_t t = 0; t < o_.heal_ticks && res_.ok; ++t) {
      step_tick();
      std::optional<std::size_t> leader = stable_leader();
      if (leader && res_.heal_election_ticks == 0)
        res_.heal_election_ticks = static_cast<uint32_t>(now_ - healed_at);
      if (leader && (!marker || marker_node != leader || nodes_[*leader].core->current_term() != marker_term)) {
        marker = propose(*leader, owner_entry{"liveness", 0, nodes_[*leader].id});
        marker_node = leader;
        marker_term = nodes_[*leader].core->current_term();
      }
      if (marker && all_applied(*marker)) {
        auto it = committed_.find(marker->value);
        if (it != committed_.end() && it->second.entry.entry_term == marker_term) {
          res_.heal_commit_ticks = static_cast<uint32_t>(now_ - healed_at);
          return;
        }
      }
    }
    if (res_.ok)
      fail("liveness: no leader committed a proposal on every node within " + std::to_string(o_.heal_ticks) +
           " ticks after healing;" + node_summary());
  }

  std::string node_summary() const {
    std::string out;
    for (const auto& n : nodes_) {
      out += " " + n.id.str() + "{";
      if (n.core)
        out += std::string(to_string(n.core->current_role())) + " term=" + std::to_string(n.core->current_term().value) +
               " commit=" + std::to_string(n.core->commit_index().value) +
               " applied=" + std::to_string(n.core->applied_index().value) +
               " last=" + std::to_string(n.core->log().last_index().value) +
               " snap=" + std::to_string(n.core->log().snapshot_index().value);
      else
        out += "down";
      out += " sm=" + std::to_string(n.sm.applied_index().value) + "}";
    }
    return out;
  }

  /// A leader whose term is the highest term of any node.
  std::optional<std::size_t> stable_leader() const {
    std::optional<std::size_t> best;
    term max_term;
    for (const auto& n : nodes_)
      if (n.core)
        max_term = std::max(max_term, n.core->current_term());
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].core && nodes_[i].core->current_role() == role::leader &&
          nodes_[i].core->current_term() == max_term)
        best = i;
    return best;
  }

  bool all_applied(log_index i) const {
    for (const auto& n : nodes_)
      if (n.sm.applied_index() < i)
        return false;
    return true;
  }

  sim_options o_;
  rng rng_;
  sim_result res_;
  std::vector<sim_node> nodes_;
  std::vector<node_id> members_;
  std::vector<int> group_;
  bool partitioned_ = false;
  bool healed_ = false;
  std::map<uint64_t, std::vector<in_flight>> net_;  ///< delivery tick -> messages in send order
  uint64_t now_ = 0;
  uint64_t seq_ = 0;
  std::map<uint64_t, node_id> leaders_;
  std::map<uint64_t, committed_record> committed_;
  std::vector<ownership_state> ref_;  ///< ref_[i] = state after applying index i
  std::optional<uint64_t> leader_crashed_at_;
};

}  // namespace

sim_result run_simulation(const sim_options& opts) {
  cluster c(opts);
  return c.run();
}

}  // namespace moonmq::raft::sim

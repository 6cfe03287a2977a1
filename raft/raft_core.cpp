// raft_core: construction, ticks, message dispatch, elections (pre-vote,
// check-quorum, stickiness), proposals and the ready()/advance() cycle.
// Replication and snapshots are in raft_core_replication.cpp.

#include "raft/raft_core.hpp"

#include <algorithm>
#include <set>

#include "util/invariant.hpp"
#include "util/logging.hpp"

namespace moonmq::raft {

const char* to_string(role r) {
  switch (r) {
    case role::follower: return "follower";
    case role::pre_candidate: return "pre_candidate";
    case role::candidate: return "candidate";
    case role::leader: return "leader";
  }
  return "unknown";
}

raft_core::raft_core(core_config cfg) : cfg_(std::move(cfg)), rng_state_(cfg_.seed) {}

result<raft_core> raft_core::open(core_config cfg, const persisted_state& restored) {
  auto bad = [](const std::string& why) { return error{errc::invalid_argument, "raft config: " + why, {}, 0}; };
  if (!valid_node_id(cfg.self.str()))
    return bad("invalid self id");
  std::set<node_id> seen;
  for (const auto& m : cfg.members) {
    if (!valid_node_id(m.str()))
      return bad("invalid member id \"" + m.str() + "\"");
    if (!seen.insert(m).second)
      return bad("duplicate member " + m.str());
  }
  bool self_learner = std::find(cfg.learners.begin(), cfg.learners.end(), cfg.self) != cfg.learners.end();
  if (!seen.count(cfg.self) && !self_learner)
    return bad("self " + cfg.self.str() + " is neither a member nor a learner");
  if (cfg.members.empty())
    return bad("no voters");
  for (const auto& l : cfg.learners)
    if (!valid_node_id(l.str()))
      return bad("invalid learner id \"" + l.str() + "\"");
  if (cfg.heartbeat_ticks == 0 || cfg.heartbeat_ticks >= cfg.election_ticks)
    return bad("need 0 < heartbeat_ticks < election_ticks");
  if (cfg.max_log_entries == 0 || cfg.max_entries_per_append == 0)
    return bad("max_log_entries and max_entries_per_append must be > 0");
  if (auto st = check_persisted(restored); !st)
    return st.err();
  if (!restored.hard.voted_for.empty() && !seen.count(restored.hard.voted_for))
    return error{errc::corrupt_state, "persisted vote for non-member " + restored.hard.voted_for.str(), {}, 0};

  raft_core c(std::move(cfg));
  if (restored.snap) {
    c.log_.reset(restored.snap->last_index, restored.snap->last_term);
    c.state_.load(*restored.snap);
    c.snapshot_ = restored.snap;
  }
  for (const auto& e : restored.entries)
    c.log_.append(e);
  c.term_ = restored.hard.current_term;
  c.vote_ = restored.hard.voted_for;
  c.commit_ = std::max(restored.hard.commit, c.log_.snapshot_index());
  c.applied_ = c.log_.snapshot_index();
  c.last_hard_ = restored.hard;
  c.voter_ = std::find(c.cfg_.members.begin(), c.cfg_.members.end(), c.cfg_.self) != c.cfg_.members.end();
  for (const auto& m : c.cfg_.members)
    if (m != c.cfg_.self)
      c.progress_[m] = progress{};
  c.sync_learners();
  c.reset_election_timer();
  return c;
}

void raft_core::sync_learners() {
  std::set<node_id> want;
  std::vector<node_id> ids = cfg_.learners;
  for (const auto& [id, endpoints] : state_.registered())
    if (!state_.removed().count(id))
      ids.push_back(id);
  for (const auto& id : ids)
    if (id != cfg_.self && std::find(cfg_.members.begin(), cfg_.members.end(), id) == cfg_.members.end())
      want.insert(id);
  for (auto it = progress_.begin(); it != progress_.end();)
    it = !it->second.voter && !want.count(it->first) ? progress_.erase(it) : std::next(it);
  for (const auto& id : want) {
    if (progress_.count(id))
      continue;
    progress pr;
    pr.next = log_.last_index().next();
    pr.voter = false;
    progress_[id] = pr;
    if (role_ == role::leader)
      send_append(id, true);
  }
}

std::vector<node_id> raft_core::learners() const {
  std::vector<node_id> out;
  for (const auto& [id, pr] : progress_)
    if (!pr.voter)
      out.push_back(id);
  return out;
}

uint64_t raft_core::next_random() {
  // splitmix64 (Steele, Lea & Flood 2014): tiny, seedable, identical on every platform.
  uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void raft_core::reset_election_timer() {
  election_elapsed_ = 0;
  randomized_timeout_ = cfg_.election_ticks + static_cast<uint32_t>(next_random() % cfg_.election_ticks);
}

void raft_core::send(const node_id& to, term t, message_body body) {
  msgs_.push_back(message{cfg_.self, to, t, std::move(body)});
}

// ---- time -------------------------------------------------------------------

void raft_core::tick() {
  if (role_ == role::leader)
    tick_leader();
  else
    tick_election();
}

void raft_core::tick_election() {
  ++election_elapsed_;
  if (!voter_)
    return;  // a learner follows whoever leads; it never campaigns
  if (election_elapsed_ >= randomized_timeout_)
    campaign(cfg_.pre_vote);
}

void raft_core::tick_leader() {
  ++heartbeat_elapsed_;
  ++election_elapsed_;
  if (election_elapsed_ >= cfg_.election_ticks)
    election_elapsed_ = 0;
  // Check-quorum on every tick: the leader steps down as soon as a majority
  // (itself included) has not answered for election_ticks, so a leader cut
  // off from the majority stops acting within one election timeout of the
  // last answer it had — the window in which followers still honour its
  // lease (leader stickiness) and elect nobody else.
  if (cfg_.check_quorum) {
    std::size_t active = 1;
    for (auto& [id, pr] : progress_) {
      if (pr.silent_ticks < UINT32_MAX)
        ++pr.silent_ticks;
      if (pr.voter && pr.silent_ticks < cfg_.election_ticks)
        ++active;
    }
    if (active < quorum()) {
      log::get("raft")->debug("raft.step_down node={} term={} reason=check_quorum active={}", cfg_.self.str(),
                              term_.value, active);
      become_follower(term_, node_id{});
      return;
    }
  }
  if (heartbeat_elapsed_ >= cfg_.heartbeat_ticks) {
    heartbeat_elapsed_ = 0;
    broadcast_append(true);
  }
}

// ---- roles ------------------------------------------------------------------

void raft_core::become_follower(term t, node_id leader) {
  // Terms only grow (Raft paper §5.1): a node that went back to an earlier
  // term could vote twice in it.
  MOONMQ_INVARIANT(t >= term_, "node {} would go from term {} back to {}", cfg_.self.str(), term_.value, t.value);
  if (t != term_) {
    term_ = t;
    vote_ = node_id{};
  }
  role_ = role::follower;
  leader_ = std::move(leader);
  votes_.clear();
  reset_election_timer();
}

void raft_core::campaign(bool pre) {
  votes_.clear();
  leader_ = node_id{};
  reset_election_timer();
  term request_term = term_.next();
  if (pre) {
    role_ = role::pre_candidate;  // term and vote unchanged: a pre-vote never raises terms
  } else {
    role_ = role::candidate;
    term_ = request_term;
    vote_ = cfg_.self;
  }
  log::get("raft")->debug("raft.campaign node={} term={} pre_vote={}", cfg_.self.str(), request_term.value, pre);
  poll(cfg_.self, true, pre);
  if (role_ == role::leader || (pre && role_ != role::pre_candidate))
    return;  // single-node cluster: already won
  for (const auto& m : cfg_.members)
    if (m != cfg_.self)
      send(m, request_term, vote_request{log_.last_index(), log_.last_term(), pre});
}

void raft_core::poll(const node_id& from, bool granted, bool pre) {
  votes_[from] = granted;
  std::size_t yes = 0, no = 0;
  for (const auto& [id, g] : votes_)
    (g ? yes : no) += 1;
  if (yes >= quorum()) {
    if (pre)
      campaign(false);
    else
      become_leader();
  } else if (no > cfg_.members.size() - quorum()) {
    become_follower(term_, node_id{});
  }
}

void raft_core::become_leader() {
  role_ = role::leader;
  leader_ = cfg_.self;
  votes_.clear();
  heartbeat_elapsed_ = 0;
  election_elapsed_ = 0;
  for (auto& [id, pr] : progress_)
    pr = progress{log_index{0}, log_.last_index().next(), true, 0, log_index{0}, pr.voter};
  log::get("raft")->debug("raft.leader node={} term={}", cfg_.self.str(), term_.value);
  // The controller entry is both the claim and the current-term no-op that
  // lets earlier-term entries commit (Raft paper §5.4.2, §8).
  log_entry e{term_, log_.last_index().next(), controller_entry{cfg_.self}};
  mark_unstable(e.index);
  log_.append(std::move(e));
  maybe_commit();  // single-node cluster: commits at once
  broadcast_append(true);
}

// ---- input ------------------------------------------------------------------

void raft_core::step(const message& m) {
  if (m.to != cfg_.self || m.from == cfg_.self || !progress_.count(m.from))
    return;
  const auto* vreq = std::get_if<vote_request>(&m.body);
  const auto* vresp = std::get_if<vote_response>(&m.body);
  // Elections are among voters only: a vote message from or to a learner
  // changes nothing, not even the term.
  if ((vreq || vresp) && (!voter_ || !progress_.at(m.from).voter))
    return;
  bool is_leader_msg =
      std::holds_alternative<append_request>(m.body) || std::holds_alternative<snapshot_request>(m.body);

  if (m.msg_term > term_) {
    if (vreq) {
      // Leader stickiness (thesis §9.6): while we heard from a live leader
      // within the minimum election timeout, ignore vote requests entirely.
      bool in_lease = cfg_.check_quorum && !leader_.empty() && election_elapsed_ < cfg_.election_ticks;
      if (in_lease)
        return;
    }
    if (vreq && vreq->pre_vote) {
      // a pre-vote request never changes our term
    } else if (vresp && vresp->pre_vote && vresp->granted) {
      // a granted pre-vote echoes the proposed term; we adopt it only by campaigning
    } else {
      become_follower(m.msg_term, is_leader_msg ? m.from : node_id{});
    }
  } else if (m.msg_term < term_) {
    if (is_leader_msg) {
      // A stale leader: tell it our term so it steps down.
      send(m.from, term_, append_response{false, log_index{0}, log_index{0}, term{0}, log_index{0}});
    } else if (vreq && vreq->pre_vote) {
      send(m.from, term_, vote_response{false, true});
    }
    return;
  }

  if (vreq) {
    handle_vote_request(m, *vreq);
  } else if (vresp) {
    if (role_ == role::pre_candidate && vresp->pre_vote) {
      if ((vresp->granted && m.msg_term == term_.next()) || (!vresp->granted && m.msg_term == term_))
        poll(m.from, vresp->granted, true);
    } else if (role_ == role::candidate && !vresp->pre_vote && m.msg_term == term_) {
      poll(m.from, vresp->granted, false);
    }
  } else if (is_leader_msg) {
    if (role_ == role::leader) {
      // Two leaders in one term cannot exist (one vote per term, §5.2).
      log::get("raft")->error("raft.impossible node={} term={} reason=second_leader from={}", cfg_.self.str(),
                              term_.value, m.from.str());
      return;
    }
    if (role_ != role::follower)
      become_follower(term_, m.from);
    leader_ = m.from;
    election_elapsed_ = 0;
    if (auto* a = std::get_if<append_request>(&m.body)) {
      handle_append(m, *a);
      ++contact_.count;
      contact_.leader_term = term_;
      contact_.commit = a->commit;
      contact_.commit_in_term = log_.term_at(a->commit) == term_;
      contact_.echo = a->echo;
    } else
      handle_snapshot(m, std::get<snapshot_request>(m.body));
  } else if (auto* ar = std::get_if<append_response>(&m.body)) {
    if (role_ == role::leader)
      handle_append_response(m, *ar);
  } else if (auto* sr = std::get_if<snapshot_response>(&m.body)) {
    if (role_ == role::leader)
      handle_snapshot_response(m, *sr);
  }
}

void raft_core::handle_vote_request(const message& m, const vote_request& v) {
  bool can_vote = vote_ == m.from || (vote_.empty() && leader_.empty()) || (v.pre_vote && m.msg_term > term_);
  if (can_vote && log_.is_up_to_date(v.last_log_index, v.last_log_term)) {
    send(m.from, m.msg_term, vote_response{true, v.pre_vote});
    if (!v.pre_vote) {
      vote_ = m.from;
      election_elapsed_ = 0;
    }
  } else {
    send(m.from, term_, vote_response{false, v.pre_vote});
  }
}

uint64_t raft_core::quorum_answered_seq() const {
  if (role_ != role::leader)
    return 0;
  std::vector<uint64_t> answered{seq_};  // this node
  for (const auto& [id, pr] : progress_)
    if (pr.voter)
      answered.push_back(pr.answered_seq);
  std::sort(answered.begin(), answered.end(), [](uint64_t a, uint64_t b) { return a > b; });
  return answered[quorum() - 1];
}

result<log_index> raft_core::propose(entry_payload payload) {
  if (role_ != role::leader)
    return error{errc::not_leader, "propose: " + cfg_.self.str() + " is not the leader", leader_.str(), 0};
  log_entry e{term_, log_.last_index().next(), std::move(payload)};
  log_index idx = e.index;
  mark_unstable(idx);
  log_.append(std::move(e));
  if (maybe_commit()) {
    broadcast_append(true);
  } else {
    for (auto& [id, pr] : progress_)
      if (!pr.probe)
        send_append(id, false);
  }
  return idx;
}

// ---- output -----------------------------------------------------------------

void raft_core::mark_unstable(log_index i) {
  if (!unstable_from_ || i < *unstable_from_)
    unstable_from_ = i;
}

bool raft_core::has_ready() const {
  return hard_state{term_, vote_, commit_} != last_hard_ || snapshot_unsaved_ || unstable_from_ || !msgs_.empty() ||
         commit_ > applied_;
}

ready_batch raft_core::ready() {
  ready_batch rd;
  hard_state hs{term_, vote_, commit_};
  if (hs != last_hard_) {
    rd.hard = hs;
    last_hard_ = hs;
  }
  if (snapshot_unsaved_) {
    rd.snap = snapshot_;
    snapshot_unsaved_ = false;
  }
  if (unstable_from_) {
    log_index from = std::max(*unstable_from_, log_.first_index());
    rd.truncate_from = from;
    rd.entries = log_.slice(from, log_.last_index(), log_.size());
    unstable_from_.reset();
  }
  rd.messages = std::move(msgs_);
  msgs_.clear();
  MOONMQ_INVARIANT(commit_ <= log_.last_index(), "node {} commits {} past its last entry {}", cfg_.self.str(),
                   commit_.value, log_.last_index().value);
  for (log_index i = applied_.next(); i <= commit_; i = i.next()) {
    const log_entry& e = log_.at(i);
    auto st = state_.apply(e);
    // applied_ tracks state_.applied_index() exactly, and entries apply in
    // index order: a refusal here means the applied table and the log
    // disagree, and nothing applied after could be trusted.
    MOONMQ_INVARIANT(st.ok(), "node {} could not apply entry {}: {}", cfg_.self.str(), e.index.value,
                     st.ok() ? std::string{} : st.err().message);
    rd.committed.push_back(e);
    if (std::holds_alternative<broker_entry>(e.payload))
      sync_learners();
  }
  if (commit_ > applied_)
    applied_ = commit_;
  return rd;
}

void raft_core::advance() {
  maybe_compact();
}

}  // namespace moonmq::raft

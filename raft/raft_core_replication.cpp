// raft_core: log replication (Raft paper §5.3), commit (§5.4.2), snapshots
// (§7) and compaction. Elections and dispatch are in raft_core.cpp.

#include "raft/raft_core.hpp"

#include <algorithm>

#include "util/logging.hpp"

namespace moonmq::raft {

// ---- leader side ------------------------------------------------------------

void raft_core::broadcast_append(bool allow_empty) {
  for (const auto& [id, pr] : progress_)
    send_append(id, allow_empty);
}

void raft_core::send_snapshot(const node_id& to, progress& pr) {
  if (!snapshot_)  // cannot happen: entries are only compacted into snapshot_
    return;
  pr.pending_snapshot = snapshot_->last_index;
  send(to, term_, snapshot_request{*snapshot_, ++seq_});
}

void raft_core::send_append(const node_id& to, bool allow_empty) {
  progress& pr = progress_[to];
  if (pr.pending_snapshot != log_index{0}) {
    if (allow_empty)  // heartbeat: the snapshot or its reply may have been lost
      send_snapshot(to, pr);
    return;
  }
  log_index prev = pr.next.prev();
  auto prev_term = log_.term_at(prev);
  if (!prev_term) {  // the entries the peer needs are compacted away
    send_snapshot(to, pr);
    return;
  }
  std::vector<log_entry> entries = log_.slice(pr.next, log_.last_index(), cfg_.max_entries_per_append);
  if (entries.empty() && !allow_empty)
    return;
  if (!pr.probe && !entries.empty())
    pr.next = entries.back().index.next();  // streaming: optimistically assume delivery
  send(to, term_, append_request{prev, *prev_term, commit_, std::move(entries), ++seq_, pr.echo});
}

bool raft_core::maybe_commit() {
  // Commit index = highest index stored on a majority (Raft paper §5.3),
  // but only an entry of the current term commits by counting replicas
  // (§5.4.2, Figure 8); earlier entries commit with it.
  std::vector<log_index> match;
  match.push_back(log_.last_index());
  for (const auto& [id, pr] : progress_)
    if (pr.voter)
      match.push_back(pr.match);
  std::sort(match.begin(), match.end(), [](log_index a, log_index b) { return a > b; });
  log_index n = match[quorum() - 1];
  if (n > commit_ && log_.term_at(n) == term_) {
    commit_ = n;
    return true;
  }
  return false;
}

void raft_core::handle_append_response(const message& m, const append_response& r) {
  progress& pr = progress_[m.from];
  pr.silent_ticks = 0;
  // Any answer in this term, a rejection too, shows the peer followed this
  // leader when it received the request numbered r.seq.
  if (r.seq <= seq_)
    pr.answered_seq = std::max(pr.answered_seq, r.seq);
  // The last stamp received, not the largest: a follower that restarted
  // stamps from a steady clock that may have restarted too, and an answer
  // overtaken by a later one only echoes an earlier send time (shorter).
  if (r.stamp != 0)
    pr.echo = r.stamp;
  if (r.success) {
    if (r.match_index > log_.last_index())  // a reply to a log we never had: ignore
      return;
    if (r.match_index > pr.match)
      pr.match = r.match_index;
    if (pr.next <= pr.match)
      pr.next = pr.match.next();
    if (pr.pending_snapshot != log_index{0} && pr.match >= pr.pending_snapshot)
      pr.pending_snapshot = log_index{0};
    pr.probe = false;
    if (maybe_commit())
      broadcast_append(true);  // tell everyone the new commit index
    else if (pr.next <= log_.last_index())
      send_append(m.from, false);
    return;
  }
  // Rejection. Stale when it refers to an index we already know matches, or
  // (while probing) to anything but the probe in flight.
  if (r.reject_index <= pr.match || (pr.probe && r.reject_index != pr.next.prev()))
    return;
  if (pr.pending_snapshot != log_index{0})
    return;
  // Fast back-off (thesis §5.3): skip the follower's whole conflicting term.
  log_index next = r.conflict_index;
  if (r.conflict_term != term{0}) {
    log_index i = std::min(r.reject_index, log_.last_index());
    while (i > log_.snapshot_index() && log_.term_at(i) > r.conflict_term)
      i = i.prev();
    if (log_.term_at(i) == r.conflict_term)
      next = i.next();
  }
  next = std::min(next, r.reject_index);
  next = std::max(next, pr.match.next());
  pr.next = next;
  pr.probe = true;
  send_append(m.from, true);
}

void raft_core::handle_snapshot_response(const message& m, const snapshot_response& r) {
  progress& pr = progress_[m.from];
  pr.silent_ticks = 0;
  if (r.seq <= seq_)
    pr.answered_seq = std::max(pr.answered_seq, r.seq);
  if (r.stamp != 0)
    pr.echo = r.stamp;
  if (r.match_index > log_.last_index())
    return;
  pr.pending_snapshot = log_index{0};
  if (r.match_index > pr.match)
    pr.match = r.match_index;
  pr.next = pr.match.next();
  pr.probe = true;
  if (maybe_commit())
    broadcast_append(true);
  else
    send_append(m.from, true);
}

// ---- follower side ----------------------------------------------------------

void raft_core::handle_append(const message& m, const append_request& a) {
  if (a.prev_index < commit_) {
    // Everything up to our commit index is committed and therefore equal to
    // the leader's log; report that instead of re-checking older entries.
    send(m.from, term_, append_response{true, commit_, log_index{0}, term{0}, log_index{0}, a.seq});
    return;
  }
  if (log_.matches(a.prev_index, a.prev_term)) {
    log_index last_new{a.prev_index.value + a.entries.size()};
    for (const auto& e : a.entries) {
      if (e.index <= log_.last_index()) {
        if (log_.term_at(e.index) == e.entry_term)
          continue;  // duplicate: never truncate on an entry we already hold
        // Conflict (§5.3): drop the suffix. e.index > prev_index >= commit_,
        // so committed entries are never touched.
        log_.truncate_from(e.index);
      }
      mark_unstable(e.index);
      log_.append(e);
    }
    if (a.commit > commit_)
      commit_ = std::max(commit_, std::min(a.commit, last_new));
    send(m.from, term_, append_response{true, last_new, log_index{0}, term{0}, log_index{0}, a.seq});
    return;
  }
  append_response r{false, log_index{0}, a.prev_index, term{0}, log_.last_index().next(), a.seq};
  if (a.prev_index <= log_.last_index()) {
    if (a.prev_index <= log_.snapshot_index()) {
      // prev_index >= commit_ >= snapshot index, so this is a mismatch on a
      // committed entry: impossible unless a leader broke Leader Completeness.
      log::get("raft")->error("raft.impossible node={} reason=committed_mismatch index={}", cfg_.self.str(),
                              a.prev_index.value);
      return;
    }
    r.conflict_term = *log_.term_at(a.prev_index);
    r.conflict_index = log_.first_index_of_term(a.prev_index);
  }
  send(m.from, term_, r);
}

void raft_core::handle_snapshot(const message& m, const snapshot_request& req) {
  const snapshot& s = req.snap;
  if (s.last_index <= commit_) {
    // Stale snapshot: refuse it, report what we already have committed.
    send(m.from, term_, snapshot_response{commit_, req.seq});
    return;
  }
  if (log_.matches(s.last_index, s.last_term)) {
    // We already hold the snapshot's last entry: keep our log (§7 step 6),
    // the snapshot only tells us that prefix is committed.
    commit_ = s.last_index;
    send(m.from, term_, snapshot_response{s.last_index, req.seq});
    return;
  }
  log::get("raft")->info("raft.snapshot_installed node={} index={} term={} leader={}", cfg_.self.str(),
                         s.last_index.value, s.last_term.value, m.from.str());
  ++snapshots_installed_;
  log_.reset(s.last_index, s.last_term);
  state_.load(s);
  sync_learners();
  snapshot_ = s;
  snapshot_unsaved_ = true;
  commit_ = s.last_index;
  applied_ = s.last_index;
  unstable_from_ = s.last_index.next();  // the durable log is discarded too
  send(m.from, term_, snapshot_response{s.last_index, req.seq});
}

void raft_core::maybe_compact() {
  if (log_.size() <= cfg_.max_log_entries || applied_ <= log_.snapshot_index())
    return;
  // applied_ entries were persisted before this advance(), so the snapshot
  // never covers anything that is not durable.
  snapshot s = state_.to_snapshot();
  log_.compact(s.last_index, s.last_term);
  snapshot_ = std::move(s);
  snapshot_unsaved_ = true;
}

}  // namespace moonmq::raft

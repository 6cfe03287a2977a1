#include "cluster/lease.hpp"

#include <algorithm>

namespace moonmq::cluster {

void broker_lease::update(const raft_position& p) {
  if (p.term != term_ || p.role != role_) {
    // A new term, or a role change within one: whatever was heard or sent
    // before speaks for a leadership that is over (docs/shared-storage.md).
    end();
    term_ = p.term;
    role_ = p.role;
  }
  applied_ = p.applied;
  if (role_ == lease_role::follower) {
    renew_heard();
    return;
  }
  if (role_ != lease_role::leader || !p.committed_in_term)
    return;
  if (p.alone) {
    deadline_ = time_point::max();
    return;
  }
  if (p.quorum_seq == 0 || sent_.empty() || sent_.front().seq > p.quorum_seq)
    return;  // nothing answered yet, or its send time was dropped: no renewal
  // The newest request sent no later than the one the majority answered:
  // its send time is at or before that request's.
  auto it = std::upper_bound(sent_.begin(), sent_.end(), p.quorum_seq,
                             [](uint64_t seq, const sent& s) { return seq < s.seq; });
  --it;
  renew(it->at);
  sent_.erase(sent_.begin(), it);  // later answers are to this request or newer ones
}

void broker_lease::answer_sent(time_point at) {
  if (role_ != lease_role::follower || (!answers_.empty() && at <= answers_.back()))
    return;
  answers_.push_back(at);
  if (answers_.size() > max_answers)
    answers_.pop_front();
}

void broker_lease::heard_from_leader(uint64_t term, uint64_t commit, bool commit_in_term, time_point echo) {
  if (role_ != lease_role::follower || term != term_ || !commit_in_term)
    return;
  if (!std::binary_search(answers_.begin(), answers_.end(), echo))
    return;  // not a stamp of this broker's, or one too old to be kept
  if (commit <= applied_) {
    renew(echo);
    return;
  }
  // Keep only messages no other beats on both counts (needs no more
  // applied, renews no less), sorted by commit and so by echo too.
  auto dominated = [&](const heard& h) { return h.commit <= commit && h.at >= echo; };
  if (std::any_of(heard_.begin(), heard_.end(), dominated))
    return;
  heard_.erase(std::remove_if(heard_.begin(), heard_.end(),
                              [&](const heard& h) { return h.commit >= commit && h.at <= echo; }),
               heard_.end());
  auto at = std::upper_bound(heard_.begin(), heard_.end(), commit,
                             [](uint64_t c, const heard& h) { return c < h.commit; });
  heard_.insert(at, {commit, echo});
  if (heard_.size() > max_heard)
    heard_.pop_front();
}

void broker_lease::request_sent(uint64_t seq, time_point at) {
  if (role_ != lease_role::leader || (!sent_.empty() && seq <= sent_.back().seq))
    return;
  sent_.push_back({seq, at});
  if (sent_.size() > max_sent)
    sent_.pop_front();
}

void broker_lease::end() {
  deadline_ = time_point::min();
  heard_.clear();
  sent_.clear();
  answers_.clear();
}

void broker_lease::renew(time_point from) {
  deadline_ = std::max(deadline_, from + lease_);
}

void broker_lease::renew_heard() {
  while (!heard_.empty() && heard_.front().commit <= applied_) {
    renew(heard_.front().at);
    heard_.pop_front();
  }
}

}  // namespace moonmq::cluster

#include "raft/raft_log.hpp"

#include <algorithm>
#include <cassert>

namespace moonmq::raft {

std::optional<term> raft_log::term_at(log_index i) const {
  if (i == snap_index_)
    return snap_term_;
  if (i < snap_index_ || i > last_index())
    return std::nullopt;
  return entries_[i.value - first_index().value].entry_term;
}

bool raft_log::matches(log_index i, term t) const {
  auto got = term_at(i);
  return got && *got == t;
}

const log_entry& raft_log::at(log_index i) const {
  assert(i >= first_index() && i <= last_index());
  return entries_[i.value - first_index().value];
}

bool raft_log::is_up_to_date(log_index last, term last_t) const {
  return last_t > last_term() || (last_t == last_term() && last >= last_index());
}

log_index raft_log::first_index_of_term(log_index i) const {
  term t = at(i).entry_term;
  while (i > first_index() && at(i.prev()).entry_term == t)
    i = i.prev();
  return i;
}

std::vector<log_entry> raft_log::slice(log_index from, log_index to, std::size_t max) const {
  std::vector<log_entry> out;
  from = std::max(from, first_index());
  to = std::min(to, last_index());
  for (log_index i = from; i <= to && out.size() < max; i = i.next())
    out.push_back(at(i));
  return out;
}

void raft_log::append(log_entry e) {
  assert(e.index == last_index().next());
  entries_.push_back(std::move(e));
}

void raft_log::truncate_from(log_index i) {
  assert(i > snap_index_);
  if (i > last_index())
    return;
  entries_.resize(i.value - first_index().value);
}

void raft_log::compact(log_index i, term t) {
  assert(i > snap_index_ && i <= last_index());
  entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(i.value - snap_index_.value));
  snap_index_ = i;
  snap_term_ = t;
}

void raft_log::reset(log_index i, term t) {
  entries_.clear();
  snap_index_ = i;
  snap_term_ = t;
}

}  // namespace moonmq::raft

#include "goals/load_index.hpp"

#include <algorithm>

namespace moonmq::goals {

replica_load_index::entry replica_load_index::make_entry(std::uint32_t r) const {
  const replica_index ri{r};
  double tie = 0.0;
  for (std::size_t k = 0; k < kMeasuredResources; ++k) tie += s_->load(ri, static_cast<resource>(k));
  return entry{s_->load(ri, res_), tie, r};
}

replica_load_index::replica_load_index(const snapshot& s, resource r)
    : s_(&s), res_(r), lists_(s.broker_count()), pending_(s.broker_count()), dead_(s.broker_count(), 0),
      crowded_(s.broker_count(), 0) {
  std::vector<std::size_t> counts(s.broker_count(), 0);
  for (std::uint32_t i = 0; i < s.replica_count(); ++i) {
    const replica_index ri{i};
    if (s.movable(ri) && s.eligible(s.owner(ri))) ++counts[s.owner(ri).value];
  }
  for (std::size_t b = 0; b < lists_.size(); ++b) lists_[b].reserve(counts[b]);
  for (std::uint32_t i = 0; i < s.replica_count(); ++i) {
    const replica_index ri{i};
    if (s.movable(ri) && s.eligible(s.owner(ri))) lists_[s.owner(ri).value].push_back(make_entry(i));
  }
  for (auto& list : lists_) std::sort(list.begin(), list.end(), less);
}

void replica_load_index::on_move(replica_index r, broker_index from, broker_index to) {
  ++dead_[from.value];
  if (s_->eligible(to)) pending_[to.value].push_back(make_entry(r.value));
}

void replica_load_index::compact(std::uint32_t b) {
  auto& list = lists_[b];
  auto& pending = pending_[b];
  const broker_index bi{b};
  // A replica that left and came back is both a tombstone-looking entry and
  // pending; keep exactly one entry per replica owned by b.
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const entry& e) { return s_->owner(replica_index{e.replica}) != bi; }),
             list.end());
  pending.erase(std::remove_if(pending.begin(), pending.end(),
                               [&](const entry& e) { return s_->owner(replica_index{e.replica}) != bi; }),
                pending.end());
  std::sort(pending.begin(), pending.end(), less);
  const auto mid = static_cast<std::ptrdiff_t>(list.size());
  list.insert(list.end(), pending.begin(), pending.end());
  std::inplace_merge(list.begin(), list.begin() + mid, list.end(), less);
  list.erase(std::unique(list.begin(), list.end(),
                         [](const entry& a, const entry& c) { return a.replica == c.replica; }),
             list.end());
  pending.clear();
  dead_[b] = 0;
  crowded_[b] = 0;
}

}  // namespace moonmq::goals

#include "storage/txn_state.hpp"

#include <algorithm>

namespace moonmq::storage {

void txn_state::record(const batch_header_info& h) {
  if (h.producer_id < 0 || (h.attributes & attr_transactional) == 0)
    return;
  if ((h.attributes & attr_control) == 0) {
    open_.emplace(h.producer_id, h.base);  // keeps the first offset of an open one
    return;
  }
  auto it = open_.find(h.producer_id);
  if (it == open_.end())
    return;  // a marker with nothing open: readers skip it, nothing to index
  if (h.control_type == control_abort)
    aborted_.push_back({h.producer_id, it->second, h.base});
  if (h.control_type == control_abort || h.control_type == control_commit)
    open_.erase(it);
}

offset txn_state::last_stable_offset(offset high_watermark) const {
  offset lso = high_watermark;
  for (const auto& [pid, first] : open_)
    lso = std::min(lso, first);
  return lso;
}

std::vector<aborted_range> txn_state::aborted_between(offset from, offset to) const {
  // aborted_ is in marker order, so by last offset: skip those that end
  // before `from` without looking at them.
  auto it = std::lower_bound(aborted_.begin(), aborted_.end(), from,
                             [](const aborted_txn& a, offset x) { return a.last < x; });
  std::vector<aborted_range> out;
  for (; it != aborted_.end(); ++it)
    if (it->first <= to)
      out.push_back({it->producer_id, it->first});
  std::stable_sort(out.begin(), out.end(),
                   [](const aborted_range& a, const aborted_range& b) { return a.first < b.first; });
  return out;
}

void txn_state::trim(offset log_start) {
  aborted_.erase(std::remove_if(aborted_.begin(), aborted_.end(),
                                [&](const aborted_txn& a) { return a.last < log_start; }),
                 aborted_.end());
}

void txn_state::clear() {
  open_.clear();
  aborted_.clear();
}

committed_filter::committed_filter(std::vector<aborted_range> aborted) : pending_(std::move(aborted)) {
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const aborted_range& a, const aborted_range& b) { return a.first < b.first; });
}

bool committed_filter::skip(const batch_header_info& h) {
  // Every aborted transaction that starts at or before this batch's end
  // is entered: its producer's transactional batches are skipped until
  // its ABORT marker.
  while (next_ < pending_.size() && pending_[next_].first <= h.last)
    aborting_.insert(pending_[next_++].producer_id);
  const bool control = (h.attributes & attr_control) != 0;
  if (control) {
    if (h.control_type == control_abort)
      aborting_.erase(h.producer_id);
    return true;
  }
  if ((h.attributes & attr_transactional) == 0)
    return false;
  return aborting_.count(h.producer_id) != 0;
}

}  // namespace moonmq::storage

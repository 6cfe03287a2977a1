#include "storage/txn_state.hpp"

#include "storage/binary_codec.hpp"

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

void txn_state::encode_to(std::string& out) const {
  codec::put(out, static_cast<uint32_t>(open_.size()));
  for (const auto& [id, first] : open_) {
    codec::put(out, id);
    codec::put(out, first.value);
  }
  codec::put(out, static_cast<uint32_t>(aborted_.size()));
  for (const auto& a : aborted_) {
    codec::put(out, a.producer_id);
    codec::put(out, a.first.value);
    codec::put(out, a.last.value);
  }
}

bool txn_state::decode_from(std::string_view& in) {
  clear();
  uint32_t n = 0;
  if (!codec::get(in, n))
    return false;
  for (uint32_t i = 0; i < n; ++i) {
    int64_t id = 0;
    offset first{0};
    if (!codec::get(in, id) || !codec::get(in, first.value))
      return false;
    open_[id] = first;
  }
  if (!codec::get(in, n))
    return false;
  for (uint32_t i = 0; i < n; ++i) {
    aborted_txn a;
    if (!codec::get(in, a.producer_id) || !codec::get(in, a.first.value) || !codec::get(in, a.last.value))
      return false;
    aborted_.push_back(a);
  }
  return true;
}

}  // namespace moonmq::storage

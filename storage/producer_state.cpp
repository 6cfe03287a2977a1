#include "storage/producer_state.hpp"

#include "storage/binary_codec.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace moonmq::storage {

namespace {

constexpr int32_t max_seq = std::numeric_limits<int32_t>::max();

/// `seq + n` wrapping past INT32_MAX to 0 (Kafka's
/// DefaultRecordBatch.incrementSequence).
int32_t increment(int32_t seq, int64_t n) {
  if (seq > max_seq - n)
    return static_cast<int32_t>(n - (max_seq - seq) - 1);
  return static_cast<int32_t>(seq + n);
}

std::string stale_reason(const batch_header_info& h, int16_t current) {
  return "producer " + std::to_string(h.producer_id) + " epoch " + std::to_string(h.producer_epoch)
         + " is older than the current epoch " + std::to_string(current);
}

int32_t last_sequence(const batch_header_info& h) {
  return increment(h.base_sequence, h.last.value - h.base.value);
}

}  // namespace

bool producer_state::is_idempotent(const batch_header_info& h) {
  return h.producer_id >= 0 && h.base_sequence >= 0 && (h.attributes & attr_control) == 0;
}

producer_verdict producer_state::check(const batch_header_info& h) const {
  producer_verdict v;
  auto it = producers_.find(h.producer_id);
  if (it == producers_.end())
    return v;
  const auto& e = it->second;
  if (h.producer_epoch < e.epoch) {
    v.kind = producer_verdict::stale_epoch;
    v.reason = stale_reason(h, e.epoch);
    return v;
  }
  if (e.count == 0)
    return v;  // known by a marker only: any sequence starts it
  if (h.producer_epoch > e.epoch) {
    if (h.base_sequence != 0) {
      v.kind = producer_verdict::out_of_order;
      v.reason = "a new epoch " + std::to_string(h.producer_epoch) + " of producer "
                 + std::to_string(h.producer_id) + " must start at sequence 0, not "
                 + std::to_string(h.base_sequence);
    }
    return v;
  }
  const auto last = last_sequence(h);
  for (size_t i = 0; i < e.count; ++i)
    if (e.batches[i].first_seq == h.base_sequence && e.batches[i].last_seq == last) {
      v.kind = producer_verdict::duplicate;
      v.original = e.batches[i].base;
      return v;
    }
  const auto expected = increment(e.batches[e.count - 1].last_seq, 1);
  if (h.base_sequence != expected) {
    v.kind = producer_verdict::out_of_order;
    v.reason = "producer " + std::to_string(h.producer_id) + " sent sequence " + std::to_string(h.base_sequence)
               + ", expected " + std::to_string(expected);
  }
  return v;
}

bool producer_state::is_marker(const batch_header_info& h) {
  return h.producer_id >= 0 && (h.attributes & attr_control) != 0;
}

producer_verdict producer_state::check_marker(const batch_header_info& h) const {
  producer_verdict v;
  auto it = producers_.find(h.producer_id);
  if (it != producers_.end() && h.producer_epoch < it->second.epoch) {
    v.kind = producer_verdict::stale_epoch;
    v.reason = stale_reason(h, it->second.epoch);
  }
  return v;
}

int16_t producer_state::epoch_of(int64_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? int16_t{-1} : it->second.epoch;
}

void producer_state::record(const batch_header_info& h) {
  if (is_marker(h)) {
    auto& e = producers_[h.producer_id];
    if (h.producer_epoch > e.epoch) {
      e.epoch = h.producer_epoch;
      e.count = 0;
    }
    e.last_timestamp = std::max(e.last_timestamp, h.max_timestamp);
    return;
  }
  if (!is_idempotent(h))
    return;
  auto& e = producers_[h.producer_id];
  if (h.producer_epoch != e.epoch) {
    e.epoch = h.producer_epoch;
    e.count = 0;
  }
  if (e.count == producer_batches_kept) {  // drop the oldest
    std::move(e.batches.begin() + 1, e.batches.end(), e.batches.begin());
    --e.count;
  }
  e.batches[e.count++] = {h.base_sequence, last_sequence(h), h.base};
  e.last_timestamp = std::max(e.last_timestamp, h.max_timestamp);
}

size_t producer_state::expire(int64_t now_ms, int64_t max_age_ms, const std::function<bool(int64_t)>& keep) {
  size_t n = 0;
  for (auto it = producers_.begin(); it != producers_.end();) {
    if (it->second.last_timestamp >= 0 && it->second.last_timestamp < now_ms - max_age_ms
        && !(keep && keep(it->first))) {
      it = producers_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

void producer_state::encode_to(std::string& out) const {
  codec::put(out, static_cast<uint32_t>(producers_.size()));
  for (const auto& [id, e] : producers_) {
    codec::put(out, id);
    codec::put(out, e.epoch);
    codec::put(out, e.count);
    codec::put(out, e.last_timestamp);
    for (const auto& b : e.batches) {
      codec::put(out, b.first_seq);
      codec::put(out, b.last_seq);
      codec::put(out, b.base.value);
    }
  }
}

bool producer_state::decode_from(std::string_view& in) {
  producers_.clear();
  uint32_t n = 0;
  if (!codec::get(in, n))
    return false;
  for (uint32_t i = 0; i < n; ++i) {
    int64_t id = 0;
    entry e;
    if (!codec::get(in, id) || !codec::get(in, e.epoch) || !codec::get(in, e.count) ||
        !codec::get(in, e.last_timestamp) || e.count > producer_batches_kept)
      return false;
    for (auto& b : e.batches)
      if (!codec::get(in, b.first_seq) || !codec::get(in, b.last_seq) || !codec::get(in, b.base.value))
        return false;
    producers_[id] = e;
  }
  return true;
}

}  // namespace moonmq::storage

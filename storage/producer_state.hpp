#pragma once
// Idempotent-producer state of one partition (KIP-98), after Kafka's
// ProducerStateManager: per producer id, its epoch and the sequence numbers
// and offsets of its last five batches. The state is a function of the log:
// partition_log records every idempotent batch it appends (client appends and
// a move's copies alike) and rebuilds the state from the batch headers when
// it opens, so it survives restarts and moves with the partition.
#include <cstdint>
#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "storage/record_batch.hpp"
#include "storage/types.hpp"

namespace moonmq::storage {

/// Batches remembered per producer for duplicate detection (Kafka:
/// ProducerStateEntry.NUM_BATCHES_TO_RETAIN = 5, which is also the most
/// in-flight requests an idempotent producer may have).
inline constexpr size_t producer_batches_kept = 5;

/// How long a producer with no new batch is remembered, in ms (Kafka's
/// producer.id.expiration.ms default, one day).
inline constexpr int64_t producer_expiration_ms = 86'400'000;

/// Judgement of an idempotent batch before it is appended.
struct producer_verdict {
  enum kind_t { accept, duplicate, out_of_order, stale_epoch } kind = accept;
  offset original{-1};  ///< duplicate: base offset the batch was first appended at
  std::string reason;   ///< out_of_order / stale_epoch: what was expected
};

class producer_state {
public:
  /// True when the header names an idempotent batch (producerId >= 0 and
  /// baseSequence >= 0, not a control batch).
  static bool is_idempotent(const batch_header_info& h);

  /// Judges the idempotent batch `h` (Kafka's ProducerAppendInfo rules):
  /// an unknown producer (or one known by a marker only) is accepted at
  /// sequence 0 of a newer epoch or any sequence of its epoch; an older
  /// epoch is
  /// stale_epoch; a newer epoch must start at sequence 0; at the same epoch a
  /// batch equal to one of the last five (first and last sequence) is a
  /// duplicate, and anything but last sequence + 1 (wrapping at INT32_MAX)
  /// is out_of_order.
  producer_verdict check(const batch_header_info& h) const;

  /// True when the header names a transaction marker: a control batch
  /// carrying a producer id.
  static bool is_marker(const batch_header_info& h);

  /// Judges the transaction marker `h` (Kafka's ProducerAppendInfo.
  /// appendEndTxnMarker, checkProducerEpoch): an epoch older than the
  /// producer's current one is stale_epoch; any other is accepted.
  producer_verdict check_marker(const batch_header_info& h) const;

  /// Remembers an appended idempotent batch; a new epoch forgets the old
  /// one's batches. A transaction marker sets the producer's epoch (a newer
  /// one fences every batch of an older epoch, and forgets its batches).
  /// Other headers are ignored.
  void record(const batch_header_info& h);

  /// The current epoch of producer `producer_id`, -1 when unknown.
  int16_t epoch_of(int64_t producer_id) const;

  /// Forgets producers whose newest batch timestamp is older than
  /// `now_ms - max_age_ms`, but those `keep` names (Kafka keeps a producer
  /// with an ongoing transaction). Returns how many were forgotten.
  size_t expire(int64_t now_ms, int64_t max_age_ms = producer_expiration_ms,
                const std::function<bool(int64_t)>& keep = {});

  void clear() { producers_.clear(); }
  size_t producer_count() const { return producers_.size(); }

  /// Appends the whole state to `out` (storage/chain_summary.hpp): count
  /// u32, then per producer id i64, epoch i16, batches u8, last timestamp
  /// i64 and the batches {first_seq i32, last_seq i32, base i64}.
  void encode_to(std::string& out) const;
  /// Replaces the state with one encode_to wrote at the front of `in` and
  /// advances `in` past it; false (state unspecified) when `in` does not
  /// hold one whole.
  bool decode_from(std::string_view& in);

private:
  struct batch {
    int32_t first_seq;
    int32_t last_seq;
    offset base;
  };
  struct entry {
    int16_t epoch = -1;
    uint8_t count = 0;  ///< batches in use, oldest first
    int64_t last_timestamp = -1;
    std::array<batch, producer_batches_kept> batches{};
  };
  std::unordered_map<int64_t, entry> producers_;
};

}  // namespace moonmq::storage

#pragma once
// Transaction state of one partition (KIP-98), after Kafka's
// ProducerStateManager (ongoing transactions) and TransactionIndex (aborted
// transactions): which producers have a transaction open in this log, from
// which offset, and which transactions were aborted, over which offsets.
// Like producer_state it is a function of the log: partition_log records
// every batch header it appends (client appends, markers and a move's
// copies alike) and rebuilds the state from the batch headers when it
// opens, so it survives restarts and moves with the partition
// (docs/transactions.md).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "storage/record_batch.hpp"
#include "storage/types.hpp"

namespace moonmq::storage {

/// One aborted transaction of the index: the producer, its first offset in
/// this log and the offset of its ABORT marker.
struct aborted_txn {
  int64_t producer_id = -1;
  offset first{0};
  offset last{0};  ///< the ABORT marker's offset
  friend bool operator==(const aborted_txn& a, const aborted_txn& b) {
    return a.producer_id == b.producer_id && a.first == b.first && a.last == b.last;
  }
};

/// An aborted transaction as a Fetch response lists it (Kafka's
/// FetchResponse.AbortedTransaction: producer id and first offset).
struct aborted_range {
  int64_t producer_id = -1;
  offset first{0};
  friend bool operator==(const aborted_range& a, const aborted_range& b) {
    return a.producer_id == b.producer_id && a.first == b.first;
  }
};

class txn_state {
 public:
  /// Records the batch `h` appended to the log, in log order:
  /// a transactional data batch opens its producer's transaction when none
  /// is open (first offset = its base offset); a control batch with
  /// control_type COMMIT closes the producer's open transaction, ABORT closes
  /// it and adds {producer, first, marker offset} to the aborted index; a
  /// marker for a producer with no open transaction records nothing. Other
  /// batches are ignored.
  void record(const batch_header_info& h);

  /// The last stable offset (Kafka's LSO): the first offset of the oldest
  /// open transaction, or `high_watermark` when that is lower or none is
  /// open. Every offset below it belongs to a decided transaction or to none.
  offset last_stable_offset(offset high_watermark) const;

  /// The aborted transactions whose range [first, last] overlaps [from, to]
  /// (last >= from and first <= to), sorted by first offset: Kafka's
  /// collectAbortedTxns(fetchOffset, upperBoundOffset), what a Fetch
  /// response lists for the batches it returns from `from` to `to`. Kafka
  /// lists them in marker order; kafkajs 2.2.4 reads the list as sorted by
  /// first offset (it looks at its head only), librdkafka and the Java
  /// consumer sort it themselves. O(log n + k) for k listed.
  std::vector<aborted_range> aborted_between(offset from, offset to) const;

  /// Drops the aborted transactions whose marker lies below `log_start`
  /// (retention, DeleteRecords): no read can reach them any more.
  void trim(offset log_start);

  void clear();

  /// Open transactions: producer id -> first offset.
  const std::map<int64_t, offset>& open() const { return open_; }
  /// The aborted index, in marker order.
  const std::vector<aborted_txn>& aborted() const { return aborted_; }

  /// Appends the whole state to `out` (storage/chain_summary.hpp): open
  /// count u32, {producer id i64, first offset i64}, aborted count u32,
  /// {producer id i64, first i64, last i64}.
  void encode_to(std::string& out) const;
  /// Replaces the state with one encode_to wrote at the front of `in` and
  /// advances `in` past it; false (state unspecified) when `in` does not
  /// hold one whole.
  bool decode_from(std::string_view& in);

 private:
  std::map<int64_t, offset> open_;
  std::vector<aborted_txn> aborted_;
};

/// Which records of read_committed reads a reader leaves out, as Kafka's
/// consumer does (Fetcher: abortedProducerIds, nextFetchedBatch): fed
/// batches in offset order, it skips control batches and the transactional
/// batches of a producer from the first offset of one of its aborted
/// transactions up to that transaction's ABORT marker.
class committed_filter {
 public:
  /// `aborted`: the aborted transactions overlapping the batches to filter
  /// (txn_state::aborted_between).
  explicit committed_filter(std::vector<aborted_range> aborted);
  /// True when the batch (with this header) is to be left out. Call for
  /// every batch, in offset order.
  bool skip(const batch_header_info& h);

 private:
  std::vector<aborted_range> pending_;  ///< by first offset, not reached yet
  size_t next_ = 0;
  std::set<int64_t> aborting_;  ///< producers inside an aborted transaction
};

}  // namespace moonmq::storage

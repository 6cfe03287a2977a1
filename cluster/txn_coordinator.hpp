#pragma once
// The transaction coordinator's rules (KIP-98; Kafka's
// TransactionCoordinator and TransactionMetadata state machine), as pure
// functions of one transactional id's record: what a request answers and
// which new record, if any, must be written to the metadata log first.
// The actor that runs them (actors/txn_coordinator.hpp) proposes the record
// as a compare-and-set on the record's version, writes the markers and
// completes the transaction; docs/transactions.md gives the argument.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/txn_record.hpp"

namespace moonmq::cluster {

/// Kafka's largest transaction.timeout.ms a coordinator accepts by default
/// (transaction.max.timeout.ms, 15 minutes).
inline constexpr int32_t max_transaction_timeout_ms = 900000;

/// Errors a transactional request can get, mapped to Kafka codes at the
/// edge (api/kafka_txn.cpp).
enum class txn_error : uint8_t {
  none,
  invalid_producer_id_mapping,  ///< 49: unknown id, or another producer id
  invalid_producer_epoch,       ///< 47: an older (fenced) or unknown epoch
  concurrent_transactions,      ///< 51: the id's last transaction is still ending; retry
  invalid_txn_state,            ///< 48: the request does not fit the state (EndTxn with nothing open, ...)
  invalid_transaction_timeout,  ///< 50: timeout <= 0 or above the maximum
  coordinator_not_available,    ///< 15: the metadata log did not take the change; retry
  not_coordinator,              ///< 16: another broker coordinates the id (an operator's abort)
};
const char* to_string(txn_error e);

/// One transactional request, as the Kafka listener decoded it.
struct txn_request {
  /// `expire` is the coordinator's own: abort the id's transaction if it
  /// is open past its timeout at now_ms (timed_out), else nothing.
  /// `abort` is an operator's (POST /admin/transactions/{id}/abort): abort
  /// the id's open transaction now, fencing its producer.
  enum class kind : uint8_t { init, add_partitions, add_offsets, offset_commit, end, expire, abort } what = kind::init;
  std::string transactional_id;
  int64_t producer_id = -1;     ///< all but init
  int16_t producer_epoch = -1;  ///< all but init
  int32_t timeout_ms = 0;       ///< init: transaction.timeout.ms
  std::vector<txn_partition> partitions;  ///< add_partitions
  std::string group;                      ///< add_offsets, offset_commit
  std::vector<txn_offset> offsets;        ///< offset_commit (group set on each)
  bool commit = false;                    ///< end: true = commit, false = abort
};

/// What the coordinator answers.
struct txn_answer {
  txn_error error = txn_error::none;
  int64_t producer_id = -1;  ///< init
  int16_t producer_epoch = -1;
  std::string message;  ///< why, for the log and tests
};

/// A request's outcome: write `write` (when set) at the version read, then
/// answer `answer`; `ends` when the write begins ending the transaction
/// (prepare_commit / prepare_abort), whose markers come next.
struct txn_decision {
  txn_answer answer;
  std::optional<txn_record> write;
  bool ends = false;
};

/// Decides `req` against the id's current record (nullopt: unknown id).
/// `now_ms` is the coordinator's wall clock; `new_producer_id` is used when
/// the id gets a producer id (first InitProducerId, or an exhausted epoch).
/// Rules (Kafka 2.x behaviour):
///  - init: timeout outside (0, max_timeout_ms] → invalid_transaction_timeout;
///    an ending transaction → concurrent_transactions; an open one is aborted
///    with the epoch bumped (fencing its producer) and the answer is
///    concurrent_transactions (the client retries once the abort is done);
///    otherwise the epoch is bumped (a new producer id at epoch 0 once the
///    epoch is 32765: one value stays for a fencing abort's bump) and the
///    record is empty.
///  - add_partitions / add_offsets: another producer id → invalid_producer_id_mapping,
///    another epoch → invalid_producer_epoch, an ending transaction →
///    concurrent_transactions; otherwise the transaction is (or stays)
///    ongoing with the partitions or group added (no write when nothing is new).
///  - offset_commit: as add, and the transaction must be ongoing with the
///    group added (else invalid_txn_state); the offsets replace earlier ones
///    of the same group and partition.
///  - end: an ongoing transaction goes to prepare_commit / prepare_abort
///    (`ends`); a retry after it completed the same way answers none; a
///    retry while it ends answers concurrent_transactions; anything else
///    (nothing open, the other outcome) is invalid_txn_state.
///  - expire: fencing_abort when timed_out, else no write; answers none.
///  - abort: an ongoing transaction → fencing_abort (`ends`), answering the
///    bumped epoch; an ending one → concurrent_transactions; an unknown id
///    or nothing open → invalid_txn_state. (Kafka's operators abort a
///    hanging transaction at its partitions, KIP-664; here the coordinator
///    knows every partition of it, so the abort is the coordinator's.)
txn_decision decide(const txn_request& req, const std::optional<txn_record>& current, int64_t now_ms,
                    int64_t new_producer_id, int32_t max_timeout_ms = max_transaction_timeout_ms);

/// The record once every marker of an ending transaction is written:
/// complete_commit / complete_abort, nothing open. `r` must be prepare_*.
txn_record completed(txn_record r);

/// The abort a coordinator starts on its own for an ongoing transaction
/// open longer than its timeout (Kafka's transaction timeout): prepare_abort
/// with the epoch bumped, so the late producer is fenced. nullopt when `r`
/// is not ongoing or not timed out at `now_ms`.
std::optional<txn_record> timed_out(const txn_record& r, int64_t now_ms);

/// prepare_abort of the ongoing transaction `r` at a bumped epoch (at most
/// 32766; init hands out a new producer id before an epoch gets there): an abort the coordinator decides, on a
/// timeout or when InitProducerId fences the producer of an open transaction.
txn_record fencing_abort(const txn_record& r);

/// True for prepare_commit and prepare_abort: markers still to write.
inline bool ending(const txn_record& r) {
  return r.state == txn_state::prepare_commit || r.state == txn_state::prepare_abort;
}

}  // namespace moonmq::cluster

#pragma once
// The durable state of one transactional id (Kafka's TransactionMetadata,
// KIP-98), as the metadata log holds it (docs/transactions.md "Coordinator
// state"). Plain data with no dependencies, shared by the metadata log
// (raft::txn_entry carries one whole record), the image every broker reads
// (owner_view::transactions) and the coordinator's pure rules
// (cluster/txn_coordinator.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace moonmq::cluster {

/// Kafka's TransactionState, minus Dead and PrepareEpochFence (an epoch
/// bump is written as the abort it forces: docs/transactions.md).
enum class txn_state : uint8_t {
  empty,            ///< a producer id and epoch, no transaction open
  ongoing,          ///< partitions or offsets added, no EndTxn yet
  prepare_commit,   ///< EndTxn(commit) decided; markers being written
  prepare_abort,    ///< EndTxn(abort), a timeout or an epoch bump decided; markers being written
  complete_commit,  ///< every marker written; the producer may begin again
  complete_abort,
};

inline const char* to_string(txn_state s) {
  switch (s) {
    case txn_state::empty: return "empty";
    case txn_state::ongoing: return "ongoing";
    case txn_state::prepare_commit: return "prepare_commit";
    case txn_state::prepare_abort: return "prepare_abort";
    case txn_state::complete_commit: return "complete_commit";
    case txn_state::complete_abort: return "complete_abort";
  }
  return "empty";
}

inline std::optional<txn_state> txn_state_from(const std::string& s) {
  for (auto st : {txn_state::empty, txn_state::ongoing, txn_state::prepare_commit, txn_state::prepare_abort,
                  txn_state::complete_commit, txn_state::complete_abort})
    if (s == to_string(st))
      return st;
  return std::nullopt;
}

/// A partition of a transaction.
struct txn_partition {
  std::string topic;
  int32_t partition = 0;
  friend bool operator<(const txn_partition& a, const txn_partition& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  }
  friend bool operator==(const txn_partition& a, const txn_partition& b) {
    return a.topic == b.topic && a.partition == b.partition;
  }
};

/// An offset committed inside a transaction (TxnOffsetCommit): held in the
/// record, committed to the group when the transaction commits, dropped
/// when it aborts.
struct txn_offset {
  std::string group;
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;  ///< the next offset to read, >= 0
  std::string metadata;
  friend bool operator==(const txn_offset& a, const txn_offset& b) {
    return a.group == b.group && a.topic == b.topic && a.partition == b.partition && a.offset == b.offset &&
           a.metadata == b.metadata;
  }
};

struct txn_record {
  int64_t producer_id = -1;
  int16_t producer_epoch = 0;
  txn_state state = txn_state::empty;
  /// The client's transaction.timeout.ms (InitProducerId), ms.
  int32_t timeout_ms = 60000;
  /// Wall-clock ms (coordinator's clock) when the open transaction began
  /// (empty → ongoing); 0 when none is open.
  int64_t started_ms = 0;
  /// Partitions of the open (or ending) transaction, sorted, no duplicates.
  std::vector<txn_partition> partitions;
  /// Groups added by AddOffsetsToTxn, sorted, no duplicates.
  std::vector<std::string> groups;
  /// Offsets committed in the transaction (one per group and partition).
  std::vector<txn_offset> offsets;
  /// Index of the metadata-log entry that last wrote this record: its
  /// version, the compare-and-set condition of the next write (0 = none).
  uint64_t version = 0;
  /// Wall-clock ms (the writing coordinator's clock) of the last write; 0 =
  /// unknown (a record written before the field existed, never expired).
  int64_t updated_ms = 0;
  friend bool operator==(const txn_record& a, const txn_record& b) {
    return a.producer_id == b.producer_id && a.producer_epoch == b.producer_epoch && a.state == b.state &&
           a.timeout_ms == b.timeout_ms && a.started_ms == b.started_ms && a.partitions == b.partitions &&
           a.groups == b.groups && a.offsets == b.offsets && a.version == b.version && a.updated_ms == b.updated_ms;
  }
};

/// Longest transactional id accepted, in bytes (Kafka sets none; a bound
/// keeps one id from bloating every broker's image).
inline constexpr size_t max_transactional_id_bytes = 1024;

}  // namespace moonmq::cluster

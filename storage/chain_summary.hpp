#pragma once
// Shared storage (docs/shared-storage.md "The chain summary"): what a
// takeover read of the earlier epochs, kept beside the takeover records so
// that the next takeover does not read it again.
//
//   <root>/chains/<epoch, 20 digits>   the chain below that epoch's start:
//                                      every segment it reads (epoch, base,
//                                      bytes served, max timestamp, sparse
//                                      index) and the producer and
//                                      transaction state at its start
//
// A summary is a cache, never the truth: written without fsync by the owner
// that took the epoch over, right after its takeover record; a reader uses
// it only when it decodes (magic, version, CRC32C over the whole file),
// names the epoch and start offset of that epoch's takeover record, and
// every segment it lists still exists. Anything else and the reader walks
// the epochs' batch headers as before.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/partition_log.hpp"

namespace moonmq::storage {

/// `<root>/chains/<epoch, 20 digits>`.
std::string chain_summary_path(const std::string& root, uint64_t epoch);

/// The chain below epoch `epoch`'s start `prefix.end`: `prefix.segments`
/// (each one an earlier epoch's, its `dir` `<root>/e<E>`), producers and
/// transactions as the walk recorded them. Layout (little-endian):
///   "MQCHAIN1", epoch u64, end i64, segment count u32, per segment
///   {epoch u64, base i64, size u64, max_timestamp i64, index count u32,
///   index entries {relative u32, position u32}}, producer_state,
///   txn_state (their encode_to), CRC32C u32 of everything before it.
std::string encode_chain_summary(const std::string& root, uint64_t epoch, const chain_prefix& prefix);

/// Decodes a summary of `root` written for `epoch`; nullopt when it does
/// not decode whole, fails its CRC, names another epoch, or lists a
/// segment outside `root`'s epoch directories.
std::optional<chain_prefix> decode_chain_summary(const std::string& root, uint64_t epoch, std::string_view bytes);

/// Writes `<root>/chains/<epoch>` (temp file and rename, no fsync: a cache)
/// and removes the summaries of earlier epochs. Best effort: a failure is
/// logged and leaves the next takeover to walk the headers.
void write_chain_summary(const std::string& root, uint64_t epoch, const chain_prefix& prefix);

/// The newest epoch at or below `at_most` with a file in `<root>/chains`
/// (by name only: it may not decode); nullopt when there is none.
std::optional<uint64_t> newest_chain_summary_epoch(const std::string& root, uint64_t at_most);

/// The newest usable summary among `epochs` (ascending; each with the
/// start offset of its takeover record): its epoch's index in `epochs` and
/// the prefix, whose segments all exist on disk. nullopt when none is.
struct loaded_chain_summary {
  size_t index = 0;
  chain_prefix prefix;
};
std::optional<loaded_chain_summary> read_chain_summary(const std::string& root,
                                                       const std::vector<std::pair<uint64_t, offset>>& epochs);

}  // namespace moonmq::storage

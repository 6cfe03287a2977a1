#pragma once
// Which broker coordinates a consumer group (issue 8, docs/groups.md
// "Cluster-wide groups"): a pure function of the group id and the set of
// configured brokers, so every broker computes the same answer without
// talking to anyone.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moonmq::cluster {

/// FNV-1a, 32 bits, over the bytes of `text` (offset basis 2166136261,
/// prime 16777619). Source: Fowler, Noll, Vo, "FNV Hash",
/// http://www.isthe.com/chongo/tech/comp/fnv/ and
/// draft-eastlake-fnv (IETF). fnv1a_32("") = 0x811c9dc5,
/// fnv1a_32("a") = 0xe40c292c, fnv1a_32("foobar") = 0xbf9cf968.
uint32_t fnv1a_32(std::string_view text);

/// The coordinator of `group`: the broker at index fnv1a_32(group) mod N of
/// `brokers` sorted byte-wise with duplicates removed (N = their number).
/// `brokers` is this broker plus Cluster.Peers[].Id (only this broker
/// without a Cluster section). "" when `brokers` is empty.
std::string group_coordinator(std::string_view group, std::vector<std::string> brokers);

}  // namespace moonmq::cluster

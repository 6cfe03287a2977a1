#pragma once
// Kafka's default partitioner for keyed records: murmur2 of the key bytes
// (seed 0x9747b28c, Kafka's Utils.murmur2), made positive with & 0x7fffffff,
// modulo the partition count. Records keyed alike land in the same partition
// as with a Kafka client.

#include <cstdint>
#include <string_view>

namespace moonmq::dataplane {

/// Kafka's Utils.murmur2 over `data` (signed 32-bit result, as in Java).
int32_t murmur2(std::string_view data);

/// The partition of `key` among `partitions` (> 0).
int32_t partition_for_key(std::string_view key, int32_t partitions);

}  // namespace moonmq::dataplane

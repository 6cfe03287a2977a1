#include "dataplane/partitioner.hpp"

namespace moonmq::dataplane {

int32_t murmur2(std::string_view data) {
  // Kafka org.apache.kafka.common.utils.Utils#murmur2 (MurmurHash2, 32 bit).
  const uint32_t seed = 0x9747b28c;
  const uint32_t m = 0x5bd1e995;
  const int r = 24;
  auto length = static_cast<uint32_t>(data.size());
  uint32_t h = seed ^ length;
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(data[i])); };
  size_t blocks = data.size() / 4;
  for (size_t i = 0; i < blocks; ++i) {
    size_t i4 = i * 4;
    uint32_t k = byte(i4) | (byte(i4 + 1) << 8) | (byte(i4 + 2) << 16) | (byte(i4 + 3) << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  size_t tail = blocks * 4;
  switch (data.size() % 4) {
    case 3:
      h ^= byte(tail + 2) << 16;
      [[fallthrough]];
    case 2:
      h ^= byte(tail + 1) << 8;
      [[fallthrough]];
    case 1:
      h ^= byte(tail);
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>(h);
}

int32_t partition_for_key(std::string_view key, int32_t partitions) {
  auto positive = static_cast<uint32_t>(murmur2(key)) & 0x7fffffffU;
  return static_cast<int32_t>(positive % static_cast<uint32_t>(partitions));
}

}  // namespace moonmq::dataplane

#include "cluster/group_placement.hpp"

#include <algorithm>

namespace moonmq::cluster {

uint32_t fnv1a_32(std::string_view text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string group_coordinator(std::string_view group, std::vector<std::string> brokers) {
  std::sort(brokers.begin(), brokers.end());
  brokers.erase(std::unique(brokers.begin(), brokers.end()), brokers.end());
  if (brokers.empty())
    return {};
  return brokers[fnv1a_32(group) % brokers.size()];
}

}  // namespace moonmq::cluster

#include "cluster/topic_placement.hpp"

#include <algorithm>
#include <map>

namespace moonmq::cluster {
namespace {

/// Orders a/wa against b/wb without dividing: -1, 0 or 1. Weights are
/// positive; a relative tolerance keeps decimal weights (0.1 + 0.2) from
/// splitting ties.
int compare_share(double a, double wa, double b, double wb) {
  double left = a * wb, right = b * wa;
  double scale = std::max({1.0, left < 0 ? -left : left, right < 0 ? -right : right});
  if (left < right - 1e-9 * scale)
    return -1;
  if (left > right + 1e-9 * scale)
    return 1;
  return 0;
}

struct rack_totals {
  double weight = 0;
  double of_topic = 0;
  double partitions = 0;
};

}  // namespace

std::vector<std::string> place_partitions(std::vector<placement_candidate> brokers, int32_t count) {
  std::vector<std::string> owners;
  if (brokers.empty() || count < 1)
    return owners;
  std::map<std::string, rack_totals> racks;  // ordered: ties go to the smaller rack name
  for (const auto& b : brokers) {
    auto& r = racks[b.rack];
    r.weight += b.weight;
    r.of_topic += b.of_topic;
    r.partitions += static_cast<double>(b.partitions);
  }
  owners.reserve(static_cast<size_t>(count));
  for (int32_t n = 0; n < count; ++n) {
    const std::string* rack = nullptr;
    const rack_totals* best = nullptr;
    for (const auto& [name, r] : racks) {
      int c = best ? compare_share(2 * r.of_topic + 1, r.weight, 2 * best->of_topic + 1, best->weight) : -1;
      if (c == 0)
        c = compare_share(r.partitions + 1, r.weight, best->partitions + 1, best->weight);
      if (c < 0) {
        rack = &name;
        best = &r;
      }
    }
    placement_candidate* pick = nullptr;
    for (auto& b : brokers) {
      if (b.rack != *rack)
        continue;
      int c = pick ? compare_share(2.0 * b.of_topic + 1, b.weight, 2.0 * pick->of_topic + 1, pick->weight) : -1;
      if (c == 0)
        c = compare_share(static_cast<double>(b.partitions + 1), b.weight, static_cast<double>(pick->partitions + 1),
                          pick->weight);
      if (c == 0)
        c = b.id < pick->id ? -1 : 1;
      if (c < 0)
        pick = &b;
    }
    ++pick->of_topic;
    ++pick->partitions;
    auto& r = racks[*rack];
    r.of_topic += 1;
    r.partitions += 1;
    owners.push_back(pick->id);
  }
  return owners;
}

}  // namespace moonmq::cluster

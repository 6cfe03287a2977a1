#include "goals/text.hpp"

#include <cmath>
#include <cstdio>

namespace moonmq::goals {

std::string format_amount(double x) {
  if (!std::isfinite(x)) return "0";
  char buf[64];
  if (std::fabs(x) >= 1000.0) std::snprintf(buf, sizeof buf, "%.0f", x);
  else std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::string format_brokers(const snapshot& s, const std::vector<broker_index>& brokers) {
  std::string out = "[";
  for (std::size_t i = 0; i < brokers.size(); ++i) {
    if (i) out += ", ";
    out += s.broker_id(brokers[i]);
  }
  return out + "]";
}

}  // namespace moonmq::goals

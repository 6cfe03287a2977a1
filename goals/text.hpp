#pragma once
// Number and list formatting for reason and explanation sentences.

#include <string>
#include <vector>

#include "goals/snapshot.hpp"

namespace moonmq::goals {

/// Integer text for |x| ≥ 1000, else 4 significant digits; "0" for non-finite.
std::string format_amount(double x);
/// "[b1, b3]" from broker indices.
std::string format_brokers(const snapshot& s, const std::vector<broker_index>& brokers);

}  // namespace moonmq::goals

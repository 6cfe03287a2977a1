#pragma once
// moonmq-demo: the verification after the producers stopped and the
// consumers drained.

#include <string>
#include <vector>

#include "tools/moonmq-demo/demo.hpp"

namespace moonmq::demo {

struct verify_result {
  bool passed = false;
  std::vector<std::string> lines;  ///< "verify: ..." lines, one per partition, then totals and PASSED/FAILED
};

/// Reads every partition back from its current owner (following 421) and
/// checks: each acknowledged (offset, record) is in the log at that offset;
/// no record of this run is in the log twice; no offset was acknowledged
/// twice; the consumers delivered every acknowledged record, contiguously
/// per partition except rewinds to a committed offset (counted as repeats),
/// with the record the log holds there. Passes only when something was
/// acknowledged.
verify_result verify(run& r);

}  // namespace moonmq::demo

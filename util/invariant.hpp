#pragma once
// Assertions for states the code makes impossible, checked in release
// builds too (FoundationDB's and TigerBeetle's habit): an offset handed out
// twice, a commit index going back, an owner epoch going down. A broken
// invariant means the broker's own state can no longer be trusted, so the
// process stops at once rather than acknowledge or serve from it
// (fail-stop): the line `invariant.broken what="…" at=file:line detail="…"`
// is logged at critical level (component "invariant") and flushed, then the
// handler runs, by default std::abort(). Tests install a handler that
// throws, to check that a check fires. Each check costs one branch.
//
//   MOONMQ_INVARIANT(base == log_end(), "append at {} but the log ends at {}", base.value, log_end().value);

#include <functional>
#include <string>

#include <spdlog/fmt/fmt.h>

namespace moonmq::util {

/// What runs after a broken invariant was logged: (condition text,
/// "file:line", detail). Must not return normally in production.
using invariant_handler = std::function<void(const std::string& what, const std::string& at,
                                             const std::string& detail)>;

/// Installs `h` (null: back to std::abort()); returns the previous one.
/// For tests; not thread-safe against a check firing at the same time.
invariant_handler set_invariant_handler(invariant_handler h);

/// Logs the broken invariant and runs the handler.
void invariant_broken(const char* what, const char* file, int line, const std::string& detail);

}  // namespace moonmq::util

/// Checks `cond`; when false, util::invariant_broken with the message
/// formatted from the remaining arguments (fmt syntax), which stops the
/// process unless a test's handler throws.
#define MOONMQ_INVARIANT(cond, ...)                                                        \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::moonmq::util::invariant_broken(#cond, __FILE__, __LINE__, fmt::format(__VA_ARGS__)); \
  } while (0)

#pragma once
// The goal plugin ABI: the single source of truth for what a goal plugin
// (a shared library in the goals directory) exports.
//
// A plugin exports one `extern "C"` function, kGoalPluginEntry
// ("moonmq_goal_plugin"), returning a pointer to a static
// moonmq_goal_plugin_info. The host reads `abi_version` first and refuses
// the plugin unless it lies in [MOONMQ_GOAL_ABI_MIN_VERSION,
// MOONMQ_GOAL_ABI_VERSION]; only then are the other fields used.
//
// Ownership and lifetime:
// - `name` and `version` are static NUL-terminated strings owned by the plugin.
// - `create` returns a new goal (or nullptr and a NUL-terminated message in
//   `error`, at most `error_len` bytes); it must not throw.
// - The object is released only through `destroy` from the same plugin; the
//   host keeps the library loaded while any object it created is alive.
// - The goal object is a C++ moonmq::goals::goal (goals/goal.hpp): plugins
//   are built with the host's compiler, standard library and SDK headers.
//   Bump MOONMQ_GOAL_ABI_VERSION whenever goals/goal.hpp, goals/snapshot.hpp
//   or this struct change; raise MOONMQ_GOAL_ABI_MIN_VERSION too unless a
//   plugin built for the older version still runs correctly in this host.
// - No exception crosses the boundary: MOONMQ_DEFINE_GOAL_PLUGIN catches.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>

#include "goals/goal.hpp"

/// ABI version of this header (3: goal interface with stats/check/score/optimize,
/// optimize_context with others_score; 4: the snapshot's per-topic counts,
/// snapshot::topic_partitions_on and friends, appended after its other
/// members; 5: snapshot::slow, appended after those; 6: broker weights and
/// racks, snapshot::weight, rack, same_rack, eligible_weight_total,
/// weighted, appended after those; 7: optimize_context::propose_together,
/// appended after others_score).
#define MOONMQ_GOAL_ABI_VERSION 7u
/// The oldest ABI this host loads. A version 3 plugin reads every snapshot
/// member it knows at the same offset, and changes the snapshot only
/// through optimize_context::propose, so it runs unchanged (a version 3 or
/// 4 plugin never sees a slow broker as eligible, so it never moves
/// partitions onto one; a version 3 to 5 plugin carries its own copy of
/// the older SDK and ignores weights and racks, so a distribution goal built
/// that way balances towards the unweighted mean; a version 3 to 6 plugin
/// never calls propose_together, whose slot comes after every older one); a newer plugin is
/// refused by an older host, whose
/// snapshots lack what it reads.
#define MOONMQ_GOAL_ABI_MIN_VERSION 3u

#define MOONMQ_PLUGIN_EXPORT __attribute__((visibility("default")))

extern "C" {

/// Opaque handle: a moonmq::goals::goal* in disguise (C-compatible struct).
typedef struct moonmq_goal_handle moonmq_goal_handle;

/// Versioned plugin description. `abi_version` must stay the first field.
typedef struct moonmq_goal_plugin_info {
  std::uint32_t abi_version;
  const char* name;     // goal name, e.g. "NW_IN"; equals the created goal's name()
  const char* version;  // plugin version, e.g. "1.0.0"
  moonmq_goal_handle* (*create)(char* error, std::size_t error_len);
  void (*destroy)(moonmq_goal_handle* goal);
} moonmq_goal_plugin_info;

/// Signature of the entry point.
typedef const moonmq_goal_plugin_info* (*moonmq_goal_plugin_entry_fn)(void);
}

namespace moonmq::plugins {

/// Name of the exported entry point.
inline constexpr const char* kGoalPluginEntry = "moonmq_goal_plugin";

inline goals::goal* from_handle(moonmq_goal_handle* h) { return reinterpret_cast<goals::goal*>(h); }
inline moonmq_goal_handle* to_handle(goals::goal* g) { return reinterpret_cast<moonmq_goal_handle*>(g); }

/// Copies `msg` into `buf` (NUL-terminated, truncated to `len`).
inline void write_error(char* buf, std::size_t len, const char* msg) {
  if (buf == nullptr || len == 0) return;
  std::size_t i = 0;
  for (; msg != nullptr && msg[i] != '\0' && i + 1 < len; ++i) buf[i] = msg[i];
  buf[i] = '\0';
}

}  // namespace moonmq::plugins

/// Defines the entry point of a plugin whose goal is made by `make_expr`
/// (an expression yielding std::unique_ptr<moonmq::goals::goal>).
#define MOONMQ_DEFINE_GOAL_PLUGIN(goal_name, plugin_version, make_expr)                              \
  namespace {                                                                                        \
  moonmq_goal_handle* moonmq_plugin_create(char* error, std::size_t error_len) {                     \
    try {                                                                                            \
      auto made = (make_expr);                                                                       \
      if (!made) {                                                                                   \
        ::moonmq::plugins::write_error(error, error_len, "factory returned no goal");                \
        return nullptr;                                                                              \
      }                                                                                              \
      return ::moonmq::plugins::to_handle(made.release());                                           \
    } catch (const std::exception& e) {                                                              \
      ::moonmq::plugins::write_error(error, error_len, e.what());                                    \
    } catch (...) {                                                                                  \
      ::moonmq::plugins::write_error(error, error_len, "unknown exception in factory");              \
    }                                                                                                \
    return nullptr;                                                                                  \
  }                                                                                                  \
  void moonmq_plugin_destroy(moonmq_goal_handle* g) { delete ::moonmq::plugins::from_handle(g); }    \
  const moonmq_goal_plugin_info moonmq_plugin_info = {MOONMQ_GOAL_ABI_VERSION, goal_name,            \
                                                      plugin_version, &moonmq_plugin_create,         \
                                                      &moonmq_plugin_destroy};                       \
  }                                                                                                  \
  extern "C" MOONMQ_PLUGIN_EXPORT const moonmq_goal_plugin_info* moonmq_goal_plugin(void) {          \
    return &moonmq_plugin_info;                                                                      \
  }

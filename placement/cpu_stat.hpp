#pragma once
// CPU load from Linux /proc text (DESIGN §6: the load_meter's cpuLoad, after
// the EventMesh LoadMeter's OperatingSystemMXBean figure). Pure: the caller
// reads /proc/self/stat and /proc/stat and passes the text; two readings a
// heartbeat apart give the fractions.
//
// Units: every counter is in clock ticks (USER_HZ, proc(5)). The machine
// total counts every cpu, so `process_ticks / machine total` is this
// process's share of the whole machine without needing the tick rate, the
// cpu count or a wall clock.

#include <cstdint>
#include <string_view>

#include "placement/load_report.hpp"

namespace moonmq::placement {

/// One reading of the counters.
struct cpu_ticks {
  uint64_t process = 0;        ///< utime + stime of the process (/proc/self/stat fields 14, 15)
  uint64_t machine_total = 0;  ///< user+nice+system+idle+iowait+irq+softirq+steal of the "cpu " line of /proc/stat
  uint64_t machine_idle = 0;   ///< idle + iowait of the same line
};

/// utime + stime from the text of /proc/<pid>/stat. The command name (field
/// 2) may hold spaces and parentheses: fields are counted after its last
/// ')'. Errors name the field ("utime: ...").
result<uint64_t> parse_process_stat(std::string_view text);

/// The aggregate "cpu " line of /proc/stat (the first 8 counters; guest time
/// is already inside user). Kernels with fewer than 8 counters (before 2.6.11)
/// count the missing ones as 0; at least 4 (user..idle) are required.
/// Errors name the field ("cpu: ...").
result<cpu_ticks> parse_machine_stat(std::string_view text);

/// Fractions of the whole machine in [0, 1] between two readings.
struct cpu_load {
  double process = 0;  ///< Δprocess / Δmachine_total
  double machine = 0;  ///< 1 − Δidle / Δmachine_total
};

/// The load between `prev` and `next`. No tick elapsed, or a counter that
/// went backwards (a reset), gives 0 for the figures concerned; results are
/// clamped to [0, 1] (the process and machine files are read at slightly
/// different instants, so the process share can round above the machine's).
cpu_load cpu_between(const cpu_ticks& prev, const cpu_ticks& next);

}  // namespace moonmq::placement

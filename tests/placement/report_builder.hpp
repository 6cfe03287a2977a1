#pragma once
// Fixed load reports for the placement tests.

#include <string>

#include "placement/load_report.hpp"
#include "placement/load_tracker.hpp"

namespace moonmq::placement::test {

inline constexpr double mib = 1024.0 * 1024.0;

/// A fresh, valid report of broker `id` with the given sessions, in+out
/// byte rate (split evenly) and cpu (process = machine).
inline load_report report(const std::string& id, int64_t sessions = 0, double byte_rate = 0, double cpu = 0) {
  load_report r;
  r.broker = broker_id{id};
  r.report_time_ms = 1'000'000;
  r.started_ms = 1;
  r.active_sessions = sessions;
  r.bytes_in_per_sec = byte_rate / 2;
  r.bytes_out_per_sec = byte_rate / 2;
  r.bytes_in_total = 1'000'000;
  r.bytes_out_total = 1'000'000;
  r.process_cpu = cpu;
  r.machine_cpu = cpu;
  return r;
}

/// The report as the scorer gets it: seen at `seen_ms`, alive, counters fine.
inline broker_load seen(load_report r, int64_t seen_ms = 1'000'000) {
  return broker_load{std::move(r), seen_ms, true, false};
}

}  // namespace moonmq::placement::test

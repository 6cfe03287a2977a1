#pragma once
// Process-wide Prometheus metrics (text exposition format 0.0.4).
//
//   auto& c = metrics::registry::global().get_counter("moonmq_http_requests_total",
//                                                  "HTTP requests answered", {{"listener","admin"},{"code","200"}});
//   c.inc();
//
// Families are created on first use; the same name with different labels
// gives separate series. Counters and gauges are lock-free once created;
// creation, removal and rendering take a mutex. Names follow Prometheus
// conventions (`_total` for counters, base units: seconds, bytes).
//
// A series lives until it is removed (`remove`, `remove_if`): removal is for
// series whose subject left (a broker removed from the cluster), and only
// for series written with `set_gauge` (under the lock) or only from the
// thread that removes them, never for one a writer keeps a reference to
// (the reference would dangle). Series computed from
// live state at each scrape are not kept here at all: `render_families`
// renders them, so that what no longer exists is not listed.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace moonmq::metrics {

using labels = std::vector<std::pair<std::string, std::string>>;

class counter {
public:
  void inc(double v = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

private:
  std::atomic<double> value_{0.0};
};

class gauge {
public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double v);
  double value() const { return value_.load(std::memory_order_relaxed); }

private:
  std::atomic<double> value_{0.0};
};

/// Cumulative histogram with fixed upper bounds (seconds or bytes).
class histogram {
public:
  explicit histogram(std::vector<double> bounds);
  void observe(double v);
  struct snapshot_t {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  ///< per bound, then +Inf last
    double sum = 0;
    uint64_t count = 0;
  };
  snapshot_t snapshot() const;

private:
  mutable std::mutex mtx_;
  std::vector<double> bounds_;
  std::vector<uint64_t> buckets_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

class registry {
public:
  static registry& global();

  counter& get_counter(const std::string& name, const std::string& help, const labels& l = {});
  gauge& get_gauge(const std::string& name, const std::string& help, const labels& l = {});
  histogram& get_histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                        const labels& l = {});

  /// Sets gauge `name`{`l`} to `v` under the registry's lock, creating it
  /// if needed: for series that may be removed from another thread, whose
  /// writers must never hold a reference across a removal.
  void set_gauge(const std::string& name, const std::string& help, const labels& l, double v);

  /// Removes the series of family `name` whose labels are exactly `l`
  /// (counter, gauge or histogram). Returns whether there was one.
  bool remove(const std::string& name, const labels& l);

  /// Removes every series of family `name` for which `drop` is true.
  /// Returns how many went (0 for an unknown family).
  size_t remove_if(const std::string& name, const std::function<bool(const labels&)>& drop);

  /// Registers a callback run at each render, before the text is produced
  /// (used to refresh gauges such as process RSS).
  void on_collect(std::function<void()> fn);

  /// Renders every family with at least one series in the Prometheus text
  /// format (a family whose series were all removed is left out).
  std::string render();

private:
  struct family {
    std::string help, type;
    std::map<labels, std::unique_ptr<counter>> counters;
    std::map<labels, std::unique_ptr<gauge>> gauges;
    std::map<labels, std::unique_ptr<histogram>> histograms;
  };
  family& get_family(const std::string& name, const std::string& help, const char* type);

  std::mutex mtx_;
  std::map<std::string, family> families_;
  std::vector<std::function<void()>> collectors_;
};

/// A family computed at scrape time from live state (the partitions this
/// broker owns, the moves of its journal): rendered once, never stored, so a
/// series whose subject is gone is simply not produced by the next scrape.
struct sample_family {
  std::string name;
  std::string help;
  std::string type = "gauge";  ///< "gauge" or "counter"
  std::vector<std::pair<labels, double>> samples;
};

/// The Prometheus text (0.0.4) of `families`, in the order given; a family
/// without samples still gets its HELP and TYPE lines (its series are known
/// to be none rather than unknown).
std::string render_families(const std::vector<sample_family>& families);

/// Default latency buckets in seconds (0.5 ms .. 10 s).
std::vector<double> latency_buckets();

/// Registers process metrics (process_cpu_seconds_total,
/// process_resident_memory_bytes, process_open_fds, process_start_time_seconds,
/// read from /proc/self) and moonmq_build_info{version}. Idempotent.
void register_process_metrics(const std::string& version);

}  // namespace moonmq::metrics

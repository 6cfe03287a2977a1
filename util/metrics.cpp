#include "util/metrics.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace moonmq::metrics {
namespace {

void atomic_add(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string render_labels(const labels& l, const std::string& extra = {}) {
  if (l.empty() && extra.empty())
    return {};
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : l) {
    if (!first)
      out += ',';
    first = false;
    out += k + "=\"" + escape(v) + "\"";
  }
  if (!extra.empty())
    out += (first ? "" : ",") + extra;
  return out + "}";
}

std::string number(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

}  // namespace

void counter::inc(double v) {
  atomic_add(value_, v);
}

void gauge::add(double v) {
  atomic_add(value_, v);
}

histogram::histogram(std::vector<double> bounds)
  : bounds_(std::move(bounds)), buckets_(bounds_.size() + 1, 0) {}

void histogram::observe(double v) {
  std::lock_guard<std::mutex> g{mtx_};
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i])
    ++i;
  ++buckets_[i];
  sum_ += v;
  ++count_;
}

histogram::snapshot_t histogram::snapshot() const {
  std::lock_guard<std::mutex> g{mtx_};
  snapshot_t s{bounds_, {}, sum_, count_};
  uint64_t acc = 0;
  for (auto b : buckets_) {
    acc += b;
    s.cumulative.push_back(acc);
  }
  return s;
}

registry& registry::global() {
  static registry r;
  return r;
}

registry::family& registry::get_family(const std::string& name, const std::string& help,
                                       const char* type) {
  auto& f = families_[name];
  if (f.type.empty()) {
    f.help = help;
    f.type = type;
  }
  return f;
}

counter& registry::get_counter(const std::string& name, const std::string& help, const labels& l) {
  std::lock_guard<std::mutex> g{mtx_};
  auto& slot = get_family(name, help, "counter").counters[l];
  if (!slot)
    slot = std::make_unique<counter>();
  return *slot;
}

gauge& registry::get_gauge(const std::string& name, const std::string& help, const labels& l) {
  std::lock_guard<std::mutex> g{mtx_};
  auto& slot = get_family(name, help, "gauge").gauges[l];
  if (!slot)
    slot = std::make_unique<gauge>();
  return *slot;
}

void registry::set_gauge(const std::string& name, const std::string& help, const labels& l, double v) {
  std::lock_guard<std::mutex> g{mtx_};
  auto& slot = get_family(name, help, "gauge").gauges[l];
  if (!slot)
    slot = std::make_unique<gauge>();
  slot->set(v);
}

histogram& registry::get_histogram(const std::string& name, const std::string& help,
                                std::vector<double> bounds, const labels& l) {
  std::lock_guard<std::mutex> g{mtx_};
  auto& slot = get_family(name, help, "histogram").histograms[l];
  if (!slot)
    slot = std::make_unique<histogram>(std::move(bounds));
  return *slot;
}

bool registry::remove(const std::string& name, const labels& l) {
  std::lock_guard<std::mutex> g{mtx_};
  auto f = families_.find(name);
  if (f == families_.end())
    return false;
  return f->second.counters.erase(l) + f->second.gauges.erase(l) + f->second.histograms.erase(l) > 0;
}

size_t registry::remove_if(const std::string& name, const std::function<bool(const labels&)>& drop) {
  std::lock_guard<std::mutex> g{mtx_};
  auto f = families_.find(name);
  if (f == families_.end())
    return 0;
  auto sweep = [&drop](auto& series) {
    size_t n = 0;
    for (auto it = series.begin(); it != series.end();) {
      if (drop(it->first)) {
        it = series.erase(it);
        ++n;
      } else {
        ++it;
      }
    }
    return n;
  };
  return sweep(f->second.counters) + sweep(f->second.gauges) + sweep(f->second.histograms);
}

void registry::on_collect(std::function<void()> fn) {
  std::lock_guard<std::mutex> g{mtx_};
  collectors_.push_back(std::move(fn));
}

std::string registry::render() {
  std::vector<std::function<void()>> collectors;
  {
    std::lock_guard<std::mutex> g{mtx_};
    collectors = collectors_;
  }
  for (auto& c : collectors)
    c();
  std::lock_guard<std::mutex> g{mtx_};
  std::ostringstream out;
  for (const auto& [name, f] : families_) {
    if (f.counters.empty() && f.gauges.empty() && f.histograms.empty())
      continue;  // every series removed
    out << "# HELP " << name << ' ' << f.help << '\n' << "# TYPE " << name << ' ' << f.type << '\n';
    for (const auto& [l, c] : f.counters)
      out << name << render_labels(l) << ' ' << number(c->value()) << '\n';
    for (const auto& [l, gg] : f.gauges)
      out << name << render_labels(l) << ' ' << number(gg->value()) << '\n';
    for (const auto& [l, h] : f.histograms) {
      auto s = h->snapshot();
      for (size_t i = 0; i < s.bounds.size(); ++i)
        out << name << "_bucket" << render_labels(l, "le=\"" + number(s.bounds[i]) + "\"") << ' '
            << s.cumulative[i] << '\n';
      out << name << "_bucket" << render_labels(l, "le=\"+Inf\"") << ' ' << s.cumulative.back() << '\n';
      out << name << "_sum" << render_labels(l) << ' ' << number(s.sum) << '\n';
      out << name << "_count" << render_labels(l) << ' ' << s.count << '\n';
    }
  }
  return out.str();
}

std::string render_families(const std::vector<sample_family>& families) {
  std::ostringstream out;
  for (const auto& f : families) {
    out << "# HELP " << f.name << ' ' << f.help << '\n' << "# TYPE " << f.name << ' ' << f.type << '\n';
    for (const auto& [l, v] : f.samples)
      out << f.name << render_labels(l) << ' ' << number(v) << '\n';
  }
  return out.str();
}

std::vector<double> latency_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

void register_process_metrics(const std::string& version) {
  static std::once_flag once;
  std::call_once(once, [&] {
    auto& r = registry::global();
    r.get_gauge("moonmq_build_info", "Build information; the value is always 1", {{"version", version}}).set(1);
    auto start = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    r.get_gauge("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds")
      .set(std::floor(start));
    r.on_collect([] {
      auto& reg = registry::global();
      static const long ticks = ::sysconf(_SC_CLK_TCK);
      static const long page = ::sysconf(_SC_PAGESIZE);
      std::ifstream stat{"/proc/self/stat"};
      std::string line;
      std::getline(stat, line);
      auto close = line.rfind(')');
      if (close != std::string::npos) {
        std::istringstream in{line.substr(close + 2)};
        std::string field;
        double utime = 0, stime = 0, rss = 0;
        // Fields after the command name start at field 3 (state).
        for (int i = 3; in >> field; ++i) {
          if (i == 14)
            utime = std::stod(field);
          else if (i == 15)
            stime = std::stod(field);
          else if (i == 24) {
            rss = std::stod(field);
            break;
          }
        }
        auto& cpu_total = reg.get_counter("process_cpu_seconds_total", "Total user and system CPU time in seconds");
        double now = (utime + stime) / static_cast<double>(ticks);
        if (now > cpu_total.value())
          cpu_total.inc(now - cpu_total.value());
        reg.get_gauge("process_resident_memory_bytes", "Resident memory size in bytes").set(rss * page);
      }
      std::error_code ec;
      size_t fds = 0;
      for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
           !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
        ++fds;
      reg.get_gauge("process_open_fds", "Number of open file descriptors").set(static_cast<double>(fds));
    });
  });
}

}  // namespace moonmq::metrics

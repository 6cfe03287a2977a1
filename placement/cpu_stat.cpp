#include "placement/cpu_stat.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

namespace moonmq::placement {
namespace {

/// Splits on runs of spaces/tabs.
std::vector<std::string_view> fields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
      ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\n')
      ++j;
    if (j > i)
      out.push_back(s.substr(i, j - i));
    if (j < s.size() && s[j] == '\n')
      break;
    i = j;
  }
  return out;
}

bool to_u64(std::string_view s, uint64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

}  // namespace

result<uint64_t> parse_process_stat(std::string_view text) {
  auto close = text.rfind(')');
  if (close == std::string_view::npos)
    return field_error{"comm", "no ')' closing the command name"};
  // After ')': field 3 (state) is index 0, so utime (14) is 11 and stime (15) 12.
  auto f = fields(text.substr(close + 1));
  if (f.size() < 13)
    return field_error{"utime", "expected at least 15 fields, got " + std::to_string(f.size() + 2)};
  uint64_t utime = 0, stime = 0;
  if (!to_u64(f[11], utime))
    return field_error{"utime", "not an unsigned integer: '" + std::string(f[11].substr(0, 32)) + "'"};
  if (!to_u64(f[12], stime))
    return field_error{"stime", "not an unsigned integer: '" + std::string(f[12].substr(0, 32)) + "'"};
  return utime + stime;
}

result<cpu_ticks> parse_machine_stat(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    auto line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line.substr(0, 4) == "cpu " || line.substr(0, 4) == "cpu\t") {
      auto f = fields(line.substr(3));
      if (f.size() < 4)
        return field_error{"cpu", "expected at least 4 counters, got " + std::to_string(f.size())};
      uint64_t v[8] = {};
      for (size_t i = 0; i < std::min<size_t>(f.size(), 8); ++i)
        if (!to_u64(f[i], v[i]))
          return field_error{"cpu", "counter " + std::to_string(i + 1) + " is not an unsigned integer: '"
                                      + std::string(f[i].substr(0, 32)) + "'"};
      cpu_ticks t;
      for (uint64_t x : v)
        t.machine_total += x;
      t.machine_idle = v[3] + v[4];
      return t;
    }
    if (end == std::string_view::npos)
      break;
    pos = end + 1;
  }
  return field_error{"cpu", "no aggregate \"cpu \" line"};
}

cpu_load cpu_between(const cpu_ticks& prev, const cpu_ticks& next) {
  cpu_load out;
  if (next.machine_total <= prev.machine_total)
    return out;
  auto total = static_cast<double>(next.machine_total - prev.machine_total);
  if (next.process >= prev.process)
    out.process = std::clamp(static_cast<double>(next.process - prev.process) / total, 0.0, 1.0);
  if (next.machine_idle >= prev.machine_idle)
    out.machine = std::clamp(1.0 - static_cast<double>(next.machine_idle - prev.machine_idle) / total, 0.0, 1.0);
  return out;
}

}  // namespace moonmq::placement

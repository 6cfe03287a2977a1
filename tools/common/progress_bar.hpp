#pragma once
// The text progress bar of a partition move and the byte counts printed
// beside it, shared by the programs that show moves: moonmqctl
// (`reassign verify`) and moonmq-demo (the live summary, which also prints
// its other byte counts and rates with human_bytes).
// Header-only: tools/common has no CMakeLists.txt and builds no library; a
// program includes it by its path from the source root.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace moonmq::tools {

/// "[#########-----------]  45%" for `copied` of `total` bytes: 20 cells and
/// the share in whole percent, both rounded to nearest and clamped to
/// 0..100 %. A `done` move is full whatever its counters say; an unknown
/// total (0 or below) of an unfinished move is empty.
inline std::string progress_bar(int64_t copied, int64_t total, bool done) {
  constexpr int width = 20;
  double frac = done ? 1.0 : total > 0 ? static_cast<double>(copied) / static_cast<double>(total) : 0.0;
  frac = std::clamp(frac, 0.0, 1.0);
  int filled = static_cast<int>(frac * width + 0.5);
  char pct[8];
  std::snprintf(pct, sizeof pct, "%3d%%", static_cast<int>(frac * 100 + 0.5));
  return "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '-') +
         "] " + pct;
}

/// `n` bytes in binary units: "512 B", "1.5 KiB", "3.0 MiB", ... up to TiB,
/// one decimal above bytes.
inline std::string human_bytes(double n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (n >= 1024.0 && u < 4) {
    n /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", n, units[u]);
  return buf;
}

}  // namespace moonmq::tools

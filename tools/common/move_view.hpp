#pragma once
// What `moonmqctl reassign verify` shows of GET /admin/reassignments: the
// current move of each partition (older rows of the 24 h journal are
// history, such as a failed move retried since), and each copy's rate and
// time left between two polls. Header-only, like progress_bar.hpp.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace moonmq::tools {

/// Of the journal rows (oldest first), the newest per (topic, partition),
/// in the order of the rows: a row from the metadata log alone (no
/// "started_ms": its source did not answer; the log holds the current
/// move) wins over journal rows, the last such one if several; otherwise
/// the newest by "started_ms" (ties: the later row).
inline std::vector<nlohmann::json> current_moves(const nlohmann::json& rows) {
  std::map<std::pair<std::string, int64_t>, size_t> newest;
  std::vector<nlohmann::json> list;
  if (!rows.is_array())
    return list;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    auto key = std::make_pair(r.value("topic", std::string{}), r.value("partition", int64_t{-1}));
    auto it = newest.find(key);
    if (it == newest.end()) {
      newest[key] = i;
      continue;
    }
    const auto& best = rows[it->second];
    bool log_only = !r.contains("started_ms");
    bool best_log_only = !best.contains("started_ms");
    if (log_only || (!best_log_only && r.value("started_ms", int64_t{0}) >= best.value("started_ms", int64_t{0})))
      it->second = i;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    auto key = std::make_pair(r.value("topic", std::string{}), r.value("partition", int64_t{-1}));
    if (newest[key] == i)
      list.push_back(r);
  }
  return list;
}

/// Copy rates of moves between polls.
class move_rates {
 public:
  /// Records `copied` bytes of move `id` at `now_ms`; the rate in bytes/s
  /// since that move's previous sample, nullopt for its first one or when
  /// no time passed.
  std::optional<double> sample(const std::string& id, int64_t copied, int64_t now_ms) {
    auto it = last_.find(id);
    std::optional<double> rate;
    if (it != last_.end() && now_ms > it->second.second)
      rate = static_cast<double>(copied - it->second.first) * 1000.0 / static_cast<double>(now_ms - it->second.second);
    last_[id] = {copied, now_ms};
    return rate;
  }

 private:
  std::map<std::string, std::pair<int64_t, int64_t>> last_;  ///< id -> (copied, at ms)
};

/// "ETA 1m05s" for `remaining` bytes at `rate` bytes/s; "" when the rate is
/// not positive or nothing remains.
inline std::string eta_text(int64_t remaining, double rate) {
  if (rate <= 0 || remaining <= 0)
    return {};
  auto s = static_cast<int64_t>(static_cast<double>(remaining) / rate + 0.5);
  if (s < 60)
    return "ETA " + std::to_string(s) + "s";
  auto sec = std::to_string(s % 60);
  return "ETA " + std::to_string(s / 60) + "m" + (sec.size() < 2 ? "0" : "") + sec + "s";
}

}  // namespace moonmq::tools

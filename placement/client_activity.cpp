#include "placement/client_activity.hpp"

#include <algorithm>

namespace moonmq::placement {

void client_activity::touch(std::string key, std::string_view client, int64_t now_ms, int64_t ttl_ms) {
  auto it = sessions_.find(key);
  if (it == sessions_.end()) {
    if (sessions_.size() >= max_sessions)
      return;
    it = sessions_.emplace(std::move(key), session{}).first;
  }
  if (!client.empty() || it->second.client.empty())
    it->second.client = std::string(client);
  it->second.expires_ms = std::max(it->second.expires_ms, now_ms + std::max<int64_t>(ttl_ms, 1));
}

void client_activity::count(std::string_view client, uint64_t bytes, bool in, int64_t now_ms, int64_t ttl_ms) {
  (in ? bytes_in_ : bytes_out_) += bytes;
  (in ? in_total_ : out_total_) += bytes;
  if (client.empty())
    return;
  std::string key = "client:";
  key.append(client);
  touch(key, client, now_ms, ttl_ms);
  if (!sessions_.count(key))
    return;  // the session table is full: totals only
  auto& row = interval_[std::string(client)];
  (in ? row.bytes_in : row.bytes_out) += bytes;
}

void client_activity::produced(std::string_view client, uint64_t bytes, int64_t now_ms, int64_t ttl_ms) {
  count(client, bytes, true, now_ms, ttl_ms);
}

void client_activity::fetched(std::string_view client, uint64_t bytes, int64_t now_ms, int64_t ttl_ms) {
  count(client, bytes, false, now_ms, ttl_ms);
}

void client_activity::member_seen(std::string_view group, std::string_view member, std::string_view client,
                                  int64_t now_ms, int64_t ttl_ms) {
  std::string key = "member:";
  key.append(group).append("/").append(member);
  touch(std::move(key), client, now_ms, ttl_ms);
}

void client_activity::member_left(std::string_view group, std::string_view member) {
  std::string key = "member:";
  key.append(group).append("/").append(member);
  sessions_.erase(key);
}

activity_sample client_activity::sample(int64_t now_ms) {
  activity_sample s;
  s.interval_ms = std::max<int64_t>(1, now_ms - last_sample_ms_);
  last_sample_ms_ = now_ms;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->second.expires_ms <= now_ms) {
      it = sessions_.erase(it);
      continue;
    }
    if (!it->second.client.empty())
      ++s.clients[it->second.client].sessions;
    ++it;
  }
  s.active_sessions = static_cast<int64_t>(sessions_.size());
  // Bytes of a client whose session expired within the interval still count.
  for (auto& [id, c] : interval_) {
    auto& row = s.clients[id];
    row.bytes_in += c.bytes_in;
    row.bytes_out += c.bytes_out;
  }
  interval_.clear();
  s.bytes_in = bytes_in_;
  s.bytes_out = bytes_out_;
  bytes_in_ = bytes_out_ = 0;
  s.bytes_in_total = in_total_;
  s.bytes_out_total = out_total_;
  return s;
}

void fill_report(load_report& r, const activity_sample& s) {
  r.active_sessions = s.active_sessions;
  r.bytes_in_per_sec = std::min(s.in_per_sec(), max_byte_rate);
  r.bytes_out_per_sec = std::min(s.out_per_sec(), max_byte_rate);
  r.bytes_in_total = s.bytes_in_total;
  r.bytes_out_total = s.bytes_out_total;
  r.clients.clear();
  auto per_sec = [&](uint64_t b) {
    return std::min(static_cast<double>(b) * 1000.0 / static_cast<double>(s.interval_ms), max_byte_rate);
  };
  for (const auto& [id, c] : s.clients) {
    if (r.clients.size() >= max_report_clients)
      break;
    r.clients[id] = client_load{c.sessions, per_sec(c.bytes_in), per_sec(c.bytes_out)};
  }
}

}  // namespace moonmq::placement

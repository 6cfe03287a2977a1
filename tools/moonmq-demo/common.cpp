// moonmq-demo: broker list, record values, shared run state, HTTP helpers.

#include <sstream>

#include "tools/moonmq-demo/demo.hpp"

namespace moonmq::demo {

std::atomic<int> interrupted{0};

std::optional<std::vector<broker_endpoint>> parse_brokers(const std::string& text, std::string& why) {
  std::vector<broker_endpoint> out;
  std::stringstream ss{text};
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty())
      continue;
    auto eq = item.find('=');
    auto slash = item.find('/', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || eq == 0 || slash == std::string::npos) {
      why = "'" + item + "' is not id=client_host:port/admin_host:port";
      return std::nullopt;
    }
    broker_endpoint b;
    b.id = item.substr(0, eq);
    if (!transport::split_host_port(item.substr(eq + 1, slash - eq - 1), b.client_host, b.client_port) ||
        !transport::split_host_port(item.substr(slash + 1), b.admin_host, b.admin_port)) {
      why = "'" + item + "': an address is not host:port";
      return std::nullopt;
    }
    for (const auto& o : out)
      if (o.id == b.id) {
        why = "broker " + b.id + " is given twice";
        return std::nullopt;
      }
    out.push_back(std::move(b));
  }
  if (out.empty()) {
    why = "no brokers given";
    return std::nullopt;
  }
  return out;
}

std::string make_value(const std::string& run, const tp_key& tp, uint64_t seq, int bytes) {
  std::string v = run + "|" + tp.topic + "|" + std::to_string(tp.partition) + "|" + std::to_string(seq) + "|";
  // Filler differs with seq, so two records never share a value by accident.
  uint64_t x = seq * 0x9E3779B97F4A7C15ULL + 1;
  while (static_cast<int>(v.size()) < bytes) {
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ULL;
    v += static_cast<char>('a' + (x >> 59) % 26);
  }
  return v;
}

std::optional<uint64_t> parse_value(const std::string& value, const std::string& run, const tp_key& tp, int bytes) {
  std::string head = run + "|" + tp.topic + "|" + std::to_string(tp.partition) + "|";
  if (value.compare(0, head.size(), head) != 0)
    return std::nullopt;
  auto bar = value.find('|', head.size());
  if (bar == std::string::npos || bar == head.size())
    return std::nullopt;
  uint64_t seq = 0;
  for (size_t i = head.size(); i < bar; ++i) {
    if (value[i] < '0' || value[i] > '9')
      return std::nullopt;
    seq = seq * 10 + static_cast<uint64_t>(value[i] - '0');
  }
  if (make_value(run, tp, seq, bytes) != value)
    return std::nullopt;
  return seq;
}

void error_counts::add(const std::string& what) {
  std::lock_guard<std::mutex> g{mu_};
  ++counts_[what];
}

std::map<std::string, uint64_t> error_counts::snapshot() const {
  std::lock_guard<std::mutex> g{mu_};
  return counts_;
}

uint64_t error_counts::total() const {
  std::lock_guard<std::mutex> g{mu_};
  uint64_t n = 0;
  for (const auto& [k, v] : counts_)
    n += v;
  return n;
}

std::string run::owner_of(const tp_key& tp) const {
  std::lock_guard<std::mutex> g{owners_mu_};
  auto it = owners_.find(tp);
  return it != owners_.end() ? it->second : opt.brokers.front().id;
}

void run::set_owner(const tp_key& tp, const std::string& broker) {
  std::lock_guard<std::mutex> g{owners_mu_};
  owners_[tp] = broker;
}

const broker_endpoint* run::broker(const std::string& broker_id) const {
  for (const auto& b : opt.brokers)
    if (b.id == broker_id)
      return &b;
  return nullptr;
}

transport::http_result client_pool::call(const std::string& broker, const std::string& method,
                                         const std::string& target, const std::string& body,
                                         std::chrono::milliseconds timeout) {
  auto it = conns_.find(broker);
  if (it == conns_.end()) {
    const auto* b = run_.broker(broker);
    if (!b) {
      transport::http_result r;
      r.error = "unknown broker " + broker;
      return r;
    }
    it = conns_.emplace(broker, std::make_unique<transport::http_connection>(b->client_host, b->client_port)).first;
  }
  return it->second->call(method, target, body, timeout);
}

transport::http_result admin_call(const options& o, const broker_endpoint& b, const std::string& method,
                                  const std::string& target, const std::string& body,
                                  std::chrono::milliseconds timeout) {
  transport::header_list headers;
  if (!o.admin_token.empty())
    headers.emplace_back("Authorization", "Bearer " + o.admin_token);
  return transport::http_call(b.admin_host, b.admin_port, method, target, body, headers, timeout);
}

std::string describe_failure(const transport::http_result& res) {
  if (res.status == 0)
    return "transport: " + res.error;
  auto j = json::parse(res.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string())
    return std::to_string(res.status) + " " + j["error"].get<std::string>();
  return std::to_string(res.status);
}

}  // namespace moonmq::demo

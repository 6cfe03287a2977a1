// moonmqctl's admin API client (CONTRACT §4): one request at a time over
// transport::http_call, the bearer token sent and never printed, and the
// ways a request fails told in one line on stderr.

#include <iostream>

#include <nlohmann/json.hpp>

#include "tools/moonmqctl/commands.hpp"

namespace moonmq::ctl {

using json = nlohmann::json;

std::optional<transport::http_result> admin_call(const admin_endpoint& ep, const std::string& method,
                                                 const std::string& target, const std::string& body,
                                                 std::chrono::milliseconds timeout) {
  transport::header_list headers;
  if (!body.empty())
    headers.emplace_back("Content-Type", "application/json");
  if (!ep.token.empty())
    headers.emplace_back("Authorization", "Bearer " + ep.token);
  auto res = transport::http_call(ep.host, ep.port, method, target, body, headers, timeout);
  if (res.status == 0) {
    std::cerr << "moonmqctl: cannot reach the admin API at " << ep.host << ":" << ep.port << " (" << method << " "
              << target << "): " << res.error << "\n";
    return std::nullopt;
  }
  if (res.status == 401 || res.status == 403) {
    std::cerr << "moonmqctl: the admin API refused " << method << " " << target << " with " << res.status
              << " (check --token)\n";
    return std::nullopt;
  }
  return res;
}

std::optional<json> body_json(const transport::http_result& res, const std::string& what) {
  auto j = json::parse(res.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    std::cerr << "moonmqctl: " << what << " answered " << res.status << " with a body that is not a JSON object\n";
    return std::nullopt;
  }
  return j;
}

void print_http_error(const std::string& what, const transport::http_result& res) {
  std::cerr << "moonmqctl: " << what << " failed: " << res.status << " " << res.body << "\n";
}

std::optional<json> admin_request(const admin_endpoint& ep, const std::string& method, const std::string& target,
                                  const std::string& body) {
  auto res = admin_call(ep, method, target, body);
  if (!res)
    return std::nullopt;
  auto what = method + " " + target;
  if (res->status / 100 != 2) {
    print_http_error(what, *res);
    return std::nullopt;
  }
  return body_json(*res, what);
}

}  // namespace moonmq::ctl

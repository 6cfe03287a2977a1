#include "net/router.hpp"

namespace moonmq::transport {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    auto j = path.find('/', i);
    if (j == std::string::npos)
      j = path.size();
    if (j > i)
      out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

void router::add(std::string method, const std::string& pattern, handler h, pipelining mode) {
  routes_.push_back(route{std::move(method), split_path(pattern), std::move(h), mode});
}

pipelining router::mode_of(const std::string& method, const std::string& path) const {
  auto segs = split_path(path);
  std::map<std::string, std::string> params;
  for (const auto& r : routes_)
    if (r.method == method && match(r, segs, params))
      return r.mode;
  return pipelining::alone;
}

bool router::match(const route& r, const std::vector<std::string>& segs,
                   std::map<std::string, std::string>& params) {
  if (r.segments.size() != segs.size())
    return false;
  std::map<std::string, std::string> found;
  for (size_t i = 0; i < segs.size(); ++i) {
    const auto& p = r.segments[i];
    if (p.size() > 2 && p.front() == '{' && p.back() == '}')
      found[p.substr(1, p.size() - 2)] = segs[i];
    else if (p != segs[i])
      return false;
  }
  params = std::move(found);
  return true;
}

void router::dispatch(http_request& req, const responder& respond) const {
  if (guard_) {
    if (auto denied = guard_(req)) {
      respond(std::move(*denied));
      return;
    }
  }
  auto segs = split_path(req.path);
  std::string allow;
  for (const auto& r : routes_) {
    std::map<std::string, std::string> params;
    if (!match(r, segs, params))
      continue;
    if (r.method == req.method) {
      req.params = std::move(params);
      r.fn(req, respond);
      return;
    }
    if (allow.find(r.method) == std::string::npos)
      allow += (allow.empty() ? "" : ", ") + r.method;
  }
  if (!allow.empty()) {
    auto res = http_response::error(405, "method_not_allowed", req.method + " is not allowed on " + req.path);
    res.headers.emplace_back("Allow", allow);
    respond(std::move(res));
    return;
  }
  respond(http_response::error(404, "not_found", "no route for " + req.path));
}

}  // namespace moonmq::transport

#include "api/console_routes.hpp"

namespace moonmq::transport {
namespace {

const embedded_file* find_file(std::string_view name) {
  for (const auto& f : console_files())
    if (f.name == name)
      return &f;
  return nullptr;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

void serve_file(std::string_view name, const responder& respond) {
  const auto* f = find_file(name);
  if (!f) {
    respond(http_response::error(404, "not_found", "the console has no file '" + std::string{name} + "'"));
    return;
  }
  http_response res;
  res.content_type = content_type_of(f->name);
  res.body = std::string{f->bytes};
  // The files change only with the binary: a reload after an upgrade must
  // not mix old and new ones.
  res.headers.emplace_back("Cache-Control", "no-cache");
  respond(std::move(res));
}

}  // namespace

std::string content_type_of(std::string_view name) {
  static const std::pair<std::string_view, std::string_view> types[] = {
    {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},   {".json", "application/json"},
    {".png", "image/png"},                 {".svg", "image/svg+xml"}};
  for (const auto& [ext, type] : types)
    if (ends_with(name, ext))
      return std::string{type};
  return "application/octet-stream";
}

bool is_console_path(std::string_view path) { return path == "/" || path.rfind("/console/", 0) == 0; }

void add_console_routes(router& r, std::shared_ptr<const router> client) {
  r.add("GET", "/", [](http_request&, responder respond) { serve_file("index.html", respond); });
  r.add("GET", "/console/{file}",
        [](http_request& req, responder respond) { serve_file(req.params["file"], respond); });
  // The admin guard has run; the client router answers as on its own listener.
  for (const char* pattern : {"/v1/topics", "/v1/topics/{topic}", "/v1/groups", "/v1/groups/{group}"})
    r.add("GET", pattern, [client](http_request& req, responder respond) { client->dispatch(req, respond); });
}

}  // namespace moonmq::transport

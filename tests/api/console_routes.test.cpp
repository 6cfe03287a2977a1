#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>

#include "api/admin_routes.hpp"
#include "api/console_routes.hpp"

using namespace moonmq::transport;

namespace {

/// One request through `r`, answered synchronously by the routes used here.
http_response dispatch(const router& r, std::string method, std::string path, std::string token = {}) {
  http_request req;
  req.method = std::move(method);
  req.path = path;
  req.target = path;
  if (!token.empty())
    req.headers.emplace_back("authorization", "Bearer " + token);
  std::optional<http_response> answer;
  r.dispatch(req, [&answer](http_response res) { answer = std::move(res); });
  REQUIRE(answer);
  return *answer;
}

/// The admin router with a token, the console, and a client router whose
/// topic list answers a fixed body.
std::shared_ptr<router> admin_with_console(const std::string& token) {
  auto client = std::make_shared<router>();
  client->add("GET", "/v1/topics", [](http_request&, responder respond) {
    respond(http_response::json(200, R"({"topics":[{"name":"orders","partitions":3}]})"));
  });
  client->add("POST", "/v1/topics", [](http_request&, responder respond) { respond(http_response::json(201, "{}")); });
  auto admin = std::make_shared<router>();
  admin_context ctx;
  ctx.token = token;
  add_admin_routes(*admin, ctx);
  add_console_routes(*admin, client);
  return admin;
}

}  // namespace

TEST_CASE("console files are built in with their content types, README.md left out", "[console]") {
  std::vector<std::string> names;
  for (const auto& f : console_files()) {
    names.emplace_back(f.name);
    CHECK_FALSE(f.bytes.empty());
  }
  CHECK(names == std::vector<std::string>{"console.css", "console.js", "index.html"});
  CHECK(content_type_of("index.html") == "text/html; charset=utf-8");
  CHECK(content_type_of("console.js") == "text/javascript; charset=utf-8");
  CHECK(content_type_of("console.css") == "text/css; charset=utf-8");
  CHECK(content_type_of("shot.png") == "image/png");
  CHECK(content_type_of("js") == "application/octet-stream");
  CHECK(is_console_path("/"));
  CHECK(is_console_path("/console/console.js"));
  CHECK_FALSE(is_console_path("/console"));
  CHECK_FALSE(is_console_path("/admin/cluster"));
}

TEST_CASE("the console's files need no token, its data calls do, and only the client's reads are relayed",
          "[console]") {
  auto admin = admin_with_console("secret");
  auto page = dispatch(*admin, "GET", "/");
  CHECK(page.status == 200);
  CHECK(page.content_type == "text/html; charset=utf-8");
  CHECK(page.body.find("<title>moonmq console</title>") != std::string::npos);
  CHECK(dispatch(*admin, "GET", "/console/console.js").content_type == "text/javascript; charset=utf-8");
  auto missing = dispatch(*admin, "GET", "/console/README.md");
  CHECK(missing.status == 404);
  CHECK(missing.body.find("not_found") != std::string::npos);

  CHECK(dispatch(*admin, "GET", "/v1/topics").status == 401);
  auto topics = dispatch(*admin, "GET", "/v1/topics", "secret");
  CHECK(topics.status == 200);
  CHECK(topics.body == R"({"topics":[{"name":"orders","partitions":3}]})");
  CHECK(dispatch(*admin, "POST", "/v1/topics", "secret").status == 405);
  CHECK(dispatch(*admin, "GET", "/v1/topics/orders/partitions/0/records", "secret").status == 404);
}

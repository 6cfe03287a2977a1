#include <catch2/catch.hpp>

#include "net/router.hpp"

using namespace moonmq::transport;

namespace {
http_response call(const router& r, const std::string& method, const std::string& path) {
  http_request req;
  req.method = method;
  req.path = path;
  http_response out;
  r.dispatch(req, [&](http_response res) { out = std::move(res); });
  return out;
}
}  // namespace

TEST_CASE("router matches literal segments and placeholders", "[router]") {
  router r;
  std::string seen;
  r.add("GET", "/admin/actors", [&](http_request&, responder respond) {
    seen = "list";
    respond(http_response::json(200, "{}"));
  });
  r.add("GET", "/admin/actors/{id}", [&](http_request& req, responder respond) {
    seen = "one:" + req.params["id"];
    respond(http_response::json(200, "{}"));
  });
  CHECK(call(r, "GET", "/admin/actors").status == 200);
  CHECK(seen == "list");
  CHECK(call(r, "GET", "/admin/actors/42").status == 200);
  CHECK(seen == "one:42");
  CHECK(call(r, "GET", "/admin/actors/").status == 200);  // trailing slash: same route as without
  CHECK(seen == "list");
}

TEST_CASE("router answers 404 for unknown paths and 405 with Allow for wrong methods", "[router]") {
  router r;
  r.add("GET", "/health", [](http_request&, responder respond) { respond(http_response::json(200, "{}")); });
  r.add("DELETE", "/health", [](http_request&, responder respond) { respond(http_response::json(200, "{}")); });
  auto missing = call(r, "GET", "/nope");
  CHECK(missing.status == 404);
  CHECK(missing.body.find("\"error\":\"not_found\"") != std::string::npos);
  auto wrong = call(r, "POST", "/health");
  CHECK(wrong.status == 405);
  REQUIRE(wrong.headers.size() == 1);
  CHECK(wrong.headers[0].second == "GET, DELETE");
}

TEST_CASE("router guard short-circuits before any handler runs", "[router]") {
  router r;
  bool ran = false;
  r.add("GET", "/x", [&](http_request&, responder respond) {
    ran = true;
    respond(http_response::json(200, "{}"));
  });
  r.set_guard([](const http_request&) -> std::optional<http_response> {
    return http_response::error(401, "unauthorized", "no");
  });
  CHECK(call(r, "GET", "/x").status == 401);
  CHECK_FALSE(ran);
}

TEST_CASE("url_decode and constant_time_equals", "[router]") {
  CHECK(url_decode("a%20b%2Fc").value() == "a b/c");
  CHECK_FALSE(url_decode("bad%2").has_value());
  CHECK_FALSE(url_decode("bad%zz").has_value());
  CHECK(constant_time_equals("secret", "secret"));
  CHECK_FALSE(constant_time_equals("secret", "secreT"));
  CHECK_FALSE(constant_time_equals("secret", "secret2"));
  CHECK_FALSE(constant_time_equals("", "x"));
  CHECK(constant_time_equals("", ""));
}

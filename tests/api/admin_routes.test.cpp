#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/node.hpp"
#include "actors/registry.hpp"
#include "actors/system.hpp"
#include "tests/actors/test_actors.hpp"
#include "tests/support/raw_http.hpp"
#include "net/blocking_client.hpp"
#include "tests/support/process.hpp"
#include "api/admin_routes.hpp"
#include "net/http_server.hpp"
#include "util/metrics.hpp"

using namespace moonmq;
using namespace std::chrono_literals;
using nlohmann::json;
using transport::http_call;

namespace {

struct admin_fixture {
  explicit admin_fixture(std::string token = {}) : cfg(make_system_config({})), sys(*cfg), pool(1) {
    metrics::register_process_metrics("test");
    reg = spawn_registry(sys, 150ms);
    node = spawn_node(sys, node_settings{"b7", "/tmp/x", {}, {{"admin", "127.0.0.1:0"}}}, reg);
    auto r = std::make_shared<transport::router>();
    transport::admin_context ctx;
    ctx.system = &sys;
    ctx.registry = reg;
    ctx.broker_id = "b7";
    ctx.token = std::move(token);
    transport::add_admin_routes(*r, ctx);
    server = std::make_unique<transport::http_server>(pool, transport::http_server_options{}, r);
    REQUIRE_FALSE(server->start());
  }
  ~admin_fixture() {
    server->stop(1s);
    pool.stop();
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  }
  uint16_t port() const { return server->port(); }

  std::unique_ptr<caf::actor_system_config> cfg;
  caf::actor_system sys;
  transport::io_pool pool;
  registry_actor reg;
  node_actor node;
  std::unique_ptr<transport::http_server> server;
};

json actors_of(uint16_t port) {
  auto res = http_call(port, "GET", "/admin/actors");
  REQUIRE(res.status == 200);
  return json::parse(res.body)["actors"];
}

}  // namespace

TEST_CASE("GET /health names the broker", "[admin]") {
  admin_fixture f;
  auto res = http_call(f.port(), "GET", "/health");
  CHECK(res.status == 200);
  CHECK(json::parse(res.body) == json{{"status", "ok"}, {"broker_id", "b7"}});
}

TEST_CASE("GET /admin/actors lists node and registry with their summaries", "[admin]") {
  admin_fixture f;
  REQUIRE(test::wait_until([&] { return actors_of(f.port()).size() == 2; }, 3s));
  auto actors = actors_of(f.port());
  std::map<std::string, json> by_kind;
  for (auto& a : actors) {
    CHECK(a.contains("id"));
    CHECK(a.contains("name"));
    CHECK(a.contains("spawned_at"));
    by_kind[a["kind"]] = a;
  }
  REQUIRE(by_kind.count("node"));
  REQUIRE(by_kind.count("registry"));
  CHECK(by_kind["node"]["status"] == "ok");
  CHECK(by_kind["node"]["state"]["broker_id"] == "b7");
  CHECK(by_kind["registry"]["state"]["actors"] == 2);
}

TEST_CASE("an unresponsive actor is listed as such and an exited one disappears", "[admin]") {
  admin_fixture f;
  auto mute = f.sys.spawn(test::silent_actor);
  enroll(f.reg, mute, "mute", "silent");
  REQUIRE(test::wait_until([&] { return actors_of(f.port()).size() == 3; }, 3s));
  bool seen = false;
  for (auto& a : actors_of(f.port()))
    if (a["kind"] == "silent") {
      seen = true;
      CHECK(a["status"] == "unresponsive");
      CHECK(a["state"].is_null());
      auto one = http_call(f.port(), "GET", "/admin/actors/" + std::to_string(a["id"].get<uint64_t>()));
      CHECK(one.status == 200);
      CHECK(json::parse(one.body)["status"] == "unresponsive");
    }
  CHECK(seen);
  caf::anon_send_exit(mute, caf::exit_reason::kill);
  CHECK(test::wait_until([&] { return actors_of(f.port()).size() == 2; }, 3s));
}

TEST_CASE("GET /admin/actors/{id}: 200 for a live actor, 404 unknown, 400 malformed", "[admin]") {
  admin_fixture f;
  auto ok = http_call(f.port(), "GET", "/admin/actors/" + std::to_string(f.node.id()));
  CHECK(ok.status == 200);
  CHECK(json::parse(ok.body)["kind"] == "node");
  auto unknown = http_call(f.port(), "GET", "/admin/actors/987654321");
  CHECK(unknown.status == 404);
  CHECK(json::parse(unknown.body)["error"] == "unknown_actor");
  CHECK(http_call(f.port(), "GET", "/admin/actors/abc").status == 400);
}

TEST_CASE("GET /metrics is Prometheus text with build info and process metrics", "[admin]") {
  admin_fixture f;
  http_call(f.port(), "GET", "/health");
  auto res = http_call(f.port(), "GET", "/metrics");
  CHECK(res.status == 200);
  CHECK(res.headers["content-type"].find("text/plain") == 0);
  CHECK(res.body.find("# TYPE moonmq_build_info gauge") != std::string::npos);
  CHECK(res.body.find("moonmq_build_info{version=\"test\"} 1") != std::string::npos);
  CHECK(res.body.find("process_resident_memory_bytes ") != std::string::npos);
  CHECK(res.body.find("moonmq_http_requests_total{code=\"200\",listener=\"http\"}") != std::string::npos);
}

TEST_CASE("with a token, admin routes need the bearer token, /health stays open", "[admin]") {
  admin_fixture f{"s3cret"};
  CHECK(http_call(f.port(), "GET", "/health").status == 200);
  auto denied = http_call(f.port(), "GET", "/admin/actors");
  CHECK(denied.status == 401);
  CHECK(denied.headers["www-authenticate"] == "Bearer");
  CHECK(http_call(f.port(), "GET", "/admin/actors", {}, {{"Authorization", "Bearer wrong"}}).status == 401);
  CHECK(http_call(f.port(), "GET", "/metrics").status == 401);
  CHECK(http_call(f.port(), "GET", "/admin/actors", {}, {{"Authorization", "Bearer s3cret"}}).status == 200);
}

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/cluster_state.hpp"
#include "actors/registry.hpp"
#include "actors/system.hpp"
#include "tests/support/process.hpp"
#include "transport/blocking_client.hpp"
#include "transport/cluster_routes.hpp"
#include "transport/http_server.hpp"

using namespace moonmq;
using namespace std::chrono_literals;
using nlohmann::json;
using transport::http_call;

namespace {

struct cluster_fixture {
  explicit cluster_fixture(const std::string& data_dir)
    : cfg(make_system_config({})), sys(*cfg), pool(1), self(sys) {
    reg = spawn_registry(sys, 200ms);
    owners = std::make_shared<owner_view>();
    state = spawn_cluster_state(sys, data_dir, "b1", owners, reg);
    auto r = std::make_shared<transport::router>();
    transport::cluster_context ctx;
    ctx.system = &sys;
    ctx.state = state;
    ctx.catalog = std::make_shared<catalog_view>();
    ctx.owners = owners;
    ctx.broker_id = "b1";
    ctx.token = "secret";
    transport::add_cluster_routes(*r, ctx);
    server = std::make_unique<transport::http_server>(pool, transport::http_server_options{}, r);
    REQUIRE_FALSE(server->start());
  }
  ~cluster_fixture() {
    server->stop(1s);
    pool.stop();
    caf::anon_send_exit(state, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
  }
  int64_t highest() {
    int64_t out = -1;
    self->request(state, 5s, get_atom::value).receive([&](int64_t e, std::string&) { out = e; }, [](caf::error&) {});
    return out;
  }
  transport::http_result post(const std::string& target, const std::string& body, const transport::header_list& h) {
    return http_call(server->port(), "POST", target, body, h);
  }

  std::unique_ptr<caf::actor_system_config> cfg;
  caf::actor_system sys;
  transport::io_pool pool;
  caf::scoped_actor self;
  registry_actor reg;
  std::shared_ptr<owner_view> owners;
  cluster_state_actor state;
  std::unique_ptr<transport::http_server> server;
};

transport::header_list control(const std::string& epoch, const std::string& id, const std::string& token = "secret") {
  transport::header_list h{{"X-Controller-Epoch", epoch}, {"X-Controller-Id", id}};
  if (!token.empty())
    h.emplace_back("X-Cluster-Token", token);
  return h;
}

}  // namespace

TEST_CASE("an unauthenticated control-plane request gets 401 and does not move the fence", "[cluster]") {
  test::temp_dir dir;
  cluster_fixture f{dir.path()};
  CHECK(f.post("/cluster/controller", "", control("5", "b2", "")).status == 401);
  CHECK(f.post("/cluster/controller", "", control("5", "b2", "wrong")).status == 401);
  CHECK(f.post("/cluster/owners", R"({"topic":"t","partition":0,"owner":"b2"})", control("5", "b2", "")).status == 401);
  CHECK(f.highest() == 0);
  CHECK(json::parse(http_call(f.server->port(), "GET", "/cluster/owners", {}, {{"X-Cluster-Token", "secret"}}).body)
          ["owners"].empty());
  CHECK(http_call(f.server->port(), "GET", "/cluster/owners").status == 401);
}

TEST_CASE("the controller fence accepts newer epochs and refuses stale or conflicting ones", "[cluster]") {
  test::temp_dir dir;
  {
    cluster_fixture f{dir.path()};
    CHECK(f.post("/cluster/controller", "", control("3", "b2")).status == 200);
    CHECK(f.highest() == 3);
    auto stale = f.post("/cluster/controller", "", control("2", "b3"));
    CHECK(stale.status == 409);
    CHECK(json::parse(stale.body)["error"] == "stale_epoch");
    CHECK(stale.body.find("b2") != std::string::npos);
    auto conflict = f.post("/cluster/controller", "", control("3", "b9"));
    CHECK(conflict.status == 409);
    CHECK(json::parse(conflict.body)["error"] == "epoch_conflict");
    CHECK(f.post("/cluster/controller", "", {{"X-Cluster-Token", "secret"}}).status == 400);
    CHECK(f.post("/cluster/controller", "", control("abc", "b2")).status == 400);
    CHECK(f.highest() == 3);
  }
  // The fence is durable: a restarted broker still refuses the old epoch.
  cluster_fixture again{dir.path()};
  CHECK(again.highest() == 3);
  CHECK(again.post("/cluster/controller", "", control("2", "b3")).status == 409);
}

TEST_CASE("ownership changes pass the fence and are refused at a stale epoch", "[cluster]") {
  test::temp_dir dir;
  cluster_fixture f{dir.path()};
  CHECK(f.post("/cluster/owners", R"({"topic":"t","partition":1,"owner":"b2"})", control("4", "b2")).status == 200);
  auto owners = json::parse(http_call(f.server->port(), "GET", "/cluster/owners", {}, {{"X-Cluster-Token", "secret"}}).body);
  REQUIRE(owners["owners"].size() == 1);
  CHECK(owners["owners"][0]["owner"] == "b2");
  CHECK(f.post("/cluster/owners", R"({"topic":"t","partition":1,"owner":"b3"})", control("3", "b3")).status == 409);
  CHECK(f.owners->get()->at(cluster::topic_partition{"t", 1}) == "b2");
  CHECK(f.post("/cluster/owners", R"({"topic":"t"})", control("4", "b2")).status == 400);
}

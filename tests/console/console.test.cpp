// The web console (console/, docs/console.md) on real brokers: its files and
// routes on the admin listener, and the page itself in headless Chromium
// (Debian's chromium, puppeteer-core from scripts/install-deps.sh) driven by
// tests/console/console.test.js.

#include <catch2/catch.hpp>

#include <csignal>
#include <functional>

#include "tests/node/metadata_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;
using namespace moonmq::test::move;
using namespace std::chrono_literals;

namespace {

/// Runs the driver with `args` (after the mode) against broker 0's admin
/// listener; REQUIREs exit 0 within 3 minutes, and stops it by its pid
/// otherwise (puppeteer closes its browser on SIGTERM). `when_asked` runs
/// once the driver prints "stop the node now" (--then-unreachable).
void drive(move_cluster& c, const temp_dir& dir, std::vector<std::string> args,
           const std::function<void()>& when_asked = {}) {
  const auto modules = npm_modules();
  INFO("puppeteer-core must be installed by scripts/install-deps.sh under " << modules);
  REQUIRE(!read_text(modules + "/puppeteer-core/package.json").empty());
  std::vector<std::string> argv{"NODE_PATH=" + modules, "node", MOONMQ_SOURCE_DIR "/tests/console/console.test.js"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--url", "http://127.0.0.1:" + std::to_string(c.admin(0))});
  child_process driver;
  const auto log = dir.path() + "/driver.log";
  REQUIRE(driver.start("/usr/bin/env", argv, log));
  if (when_asked && wait_until([&] { return read_text(log).find("stop the node now") != std::string::npos; }, 120s))
    when_asked();
  auto rc = driver.wait(180s);
  if (!rc) {
    driver.signal(SIGTERM);
    rc = driver.wait(10s);
  }
  INFO("driver output:\n" << read_text(log));
  INFO("broker logs:\n" << c.all_logs());
  REQUIRE(rc == 0);
}

/// The owner of topic/partition in broker 0's GET /admin/cluster.
std::string owner_of(move_cluster& c, const std::string& topic, int partition) {
  auto a = call(c.admin(0), "GET", "/admin/cluster");
  REQUIRE(a.status == 200);
  for (const auto& p : a.body["partitions"])
    if (p["topic"] == topic && p["partition"] == partition)
      return p["owner"].get<std::string>();
  FAIL("no " << topic << "/" << partition << " in /admin/cluster: " << a.raw);
  return {};
}

}  // namespace

TEST_CASE("the console shows a 3-broker Raft cluster and follows a move to done with no console error",
          "[console]") {
  move_cluster c{{"b1", "b2", "b3"}, meta::raft_config(meta::throttled())};
  meta::start_all(c);
  create_topic(c.client(0), "orders", 2);
  // ~2 MB at ~1 MB/s: the move copies for a couple of seconds.
  fill(c.client(0), "orders", 0, 500, 50, 4000);
  const auto from = owner_of(c, "orders", 0);
  const std::string to = from == "b2" ? "b3" : "b2";

  // The files are served with their types and without a token; the client
  // API's topic and group reads answer on the admin listener as well.
  auto page = transport::http_call(c.admin(0), "GET", "/");
  REQUIRE(page.status == 200);
  CHECK(page.headers["content-type"] == "text/html; charset=utf-8");
  CHECK(page.body.find("/console/console.js") != std::string::npos);
  CHECK(transport::http_call(c.admin(0), "GET", "/console/console.js").headers["content-type"]
        == "text/javascript; charset=utf-8");
  CHECK(transport::http_call(c.admin(0), "GET", "/console/console.css").headers["content-type"]
        == "text/css; charset=utf-8");
  auto missing = call(c.admin(0), "GET", "/console/nope.js");
  CHECK(missing.status == 404);
  CHECK(missing.body["error"] == "not_found");
  CHECK(call(c.admin(0), "GET", "/console/README.md").status == 404);
  auto topics = call(c.admin(0), "GET", "/v1/topics");
  REQUIRE(topics.status == 200);
  CHECK(topics.body == call(c.client(0), "GET", "/v1/topics").body);
  CHECK(call(c.admin(0), "GET", "/v1/topics/orders").body["partitions"].size() == 2);
  CHECK(call(c.admin(0), "GET", "/v1/groups").status == 200);
  CHECK(call(c.admin(0), "POST", "/v1/topics", R"({"name":"x"})").status == 405);  // read-only here
  // Another broker's balancer status through this one, as the page asks it.
  auto remote = call(c.admin(0), "GET", "/admin/balancer?broker=b2");
  REQUIRE(remote.status == 200);
  CHECK(remote.body["broker_id"] == "b2");
  CHECK(call(c.admin(0), "GET", "/admin/balancer?broker=b9").status == 404);

  temp_dir dir{"moonmq-console"};
  drive(c, dir, {"check", "--brokers", "3", "--move", "orders/0:" + to});
  CHECK(owner_of(c, "orders", 0) == to);
}

TEST_CASE("the console asks for the admin token, shows the cluster once it is given, and says when the node "
          "stops answering",
          "[console]") {
  move_cluster c{{"b1"}, meta::raft_config({"Admin.Token=console-secret"})};
  c.start(0);
  // Files need no token; data does.
  CHECK(call(c.admin(0), "GET", "/").status == 200);
  CHECK(call(c.admin(0), "GET", "/console/console.js").status == 200);
  CHECK(call(c.admin(0), "GET", "/admin/cluster").status == 401);
  CHECK(call(c.admin(0), "GET", "/v1/topics").status == 401);
  CHECK(call(c.admin(0), "GET", "/v1/topics", {}, {{"Authorization", "Bearer console-secret"}}).status == 200);

  temp_dir dir{"moonmq-console"};
  drive(c, dir, {"check", "--brokers", "1", "--token", "console-secret", "--then-unreachable", "yes"},
        [&c] { c.stop(0); });
}

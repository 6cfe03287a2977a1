#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include <boost/asio.hpp>

#include "tests/support/raw_http.hpp"
#include "transport/blocking_client.hpp"
#include "tests/support/process.hpp"
#include "transport/http_server.hpp"

using namespace moonmq::transport;
using moonmq::transport::http_call;
using moonmq::test::raw_exchange;
using moonmq::test::status_of;
using namespace std::chrono_literals;

namespace {

struct fixture {
  explicit fixture(http_server_options opts = {}) : pool(2) {
    auto r = std::make_shared<router>();
    r->add("GET", "/hello/{name}", [](http_request& req, responder respond) {
      std::string q = req.query.count("q") ? req.query["q"] : "";
      respond(http_response::json(200, "{\"name\":\"" + req.params["name"] + "\",\"q\":\"" + q + "\"}"));
    });
    r->add("POST", "/echo", [](http_request& req, responder respond) {
      respond(http_response::json(200, req.body));
    });
    // Answers from another thread after a delay, like an actor reply.
    r->add("GET", "/slow", [this](http_request&, responder respond) {
      ++slow_started;
      std::thread([respond] {
        std::this_thread::sleep_for(300ms);
        respond(http_response::json(200, "{\"slow\":true}"));
      }).detach();
    });
    opts.max_body_bytes = opts.max_body_bytes == 16 * 1024 * 1024 ? 1024 : opts.max_body_bytes;
    server = std::make_unique<http_server>(pool, opts, r);
    REQUIRE_FALSE(server->start());
    port = server->port();
  }
  ~fixture() {
    server->stop(1s);
    pool.stop();
  }
  io_pool pool;
  std::unique_ptr<http_server> server;
  uint16_t port = 0;
  std::atomic<int> slow_started{0};
};

}  // namespace

TEST_CASE("server routes requests with path parameters and decoded query", "[http]") {
  fixture f;
  auto res = http_call(f.port, "GET", "/hello/wor%6Cd?q=a%20b");
  REQUIRE(res.error.empty());
  CHECK(res.status == 200);
  CHECK(res.body == "{\"name\":\"world\",\"q\":\"a b\"}");
  CHECK(res.headers["content-type"] == "application/json");
}

TEST_CASE("server answers 404 and 405 as JSON errors", "[http]") {
  fixture f;
  auto missing = http_call(f.port, "GET", "/nowhere");
  CHECK(missing.status == 404);
  CHECK(missing.body.find("not_found") != std::string::npos);
  auto wrong = http_call(f.port, "DELETE", "/echo");
  CHECK(wrong.status == 405);
  CHECK(wrong.headers["allow"] == "POST");
}

TEST_CASE("a body over the limit is refused with 413 before it is read", "[http]") {
  fixture f;
  // Announce 100 MB but send none of it: the answer must come anyway.
  bool closed = false;
  auto raw = raw_exchange(f.port, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n", 3s, &closed);
  CHECK(status_of(raw) == 413);
  CHECK(raw.find("payload_too_large") != std::string::npos);
  CHECK(closed);
}

TEST_CASE("a chunked body growing over the limit is cut off with 413", "[http]") {
  fixture f;
  std::string chunk(800, 'x');
  std::string req = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i)
    req += "320\r\n" + chunk + "\r\n";
  req += "0\r\n\r\n";
  auto raw = raw_exchange(f.port, req, 3s);
  CHECK(status_of(raw) == 413);
}

TEST_CASE("a body within the limit is passed through", "[http]") {
  fixture f;
  auto res = http_call(f.port, "POST", "/echo", std::string(1000, 'a'));
  CHECK(res.status == 200);
  CHECK(res.body.size() == 1000);
}

TEST_CASE("malformed HTTP gets 400 and the connection is closed", "[http]") {
  fixture f;
  bool closed = false;
  auto raw = raw_exchange(f.port, "THIS IS NOT HTTP\r\n\r\n", 3s, &closed);
  CHECK(status_of(raw) == 400);
  CHECK(closed);
  auto bad_escape = raw_exchange(f.port, "GET /hello/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 3s);
  CHECK(status_of(bad_escape) == 400);
}

TEST_CASE("keep-alive serves several requests on one connection", "[http]") {
  fixture f;
  std::string one = "GET /hello/a HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string last = "GET /hello/b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  auto raw = raw_exchange(f.port, one + one + last, 3s);
  size_t count = 0;
  for (size_t pos = raw.find("HTTP/1.1 200"); pos != std::string::npos; pos = raw.find("HTTP/1.1 200", pos + 1))
    ++count;
  CHECK(count == 3);
  CHECK(raw.find("\"name\":\"b\"") != std::string::npos);
}

TEST_CASE("a header that never completes is timed out", "[http]") {
  http_server_options o;
  o.header_timeout = 200ms;
  fixture f{o};
  bool closed = false;
  auto t0 = std::chrono::steady_clock::now();
  raw_exchange(f.port, "GET /hello/a HTTP/1.1\r\nHost: x\r\n", 5s, &closed);
  CHECK(closed);
  CHECK(std::chrono::steady_clock::now() - t0 < 4s);
}

TEST_CASE("connections over the cap get 503", "[http]") {
  http_server_options o;
  o.max_connections = 2;
  fixture f{o};
  boost::asio::io_context ioc;
  using tcp = boost::asio::ip::tcp;
  tcp::socket a{ioc}, b{ioc};
  tcp::endpoint ep{boost::asio::ip::make_address("127.0.0.1"), f.port};
  a.connect(ep);
  b.connect(ep);
  std::this_thread::sleep_for(100ms);  // let the server accept both
  auto raw = raw_exchange(f.port, "", 2s);
  CHECK(status_of(raw) == 503);
  a.close();
  b.close();
  // Once the server has seen the two clients go, there is room again.
  CHECK(moonmq::test::wait_until(
    [&] {
      return status_of(raw_exchange(f.port, "GET /hello/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 2s))
             == 200;
    },
    3s));
}

TEST_CASE("stop lets in-flight requests finish and refuses new connections", "[http]") {
  fixture f;
  moonmq::transport::http_result slow;
  std::thread client([&] { slow = http_call(f.port, "GET", "/slow"); });
  while (f.slow_started.load() == 0)
    std::this_thread::sleep_for(5ms);
  f.server->stop(2s);
  client.join();
  CHECK(slow.status == 200);
  CHECK(slow.body == "{\"slow\":true}");
  auto after = http_call(f.port, "GET", "/hello/x", {}, {}, 1s);
  CHECK(after.status == 0);
}

TEST_CASE("concurrent clients are all answered", "[http]") {
  fixture f;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&] {
      for (int i = 0; i < 25; ++i)
        if (http_call(f.port, "GET", "/hello/c").status == 200)
          ++ok;
    });
  for (auto& c : clients)
    c.join();
  CHECK(ok.load() == 200);
}

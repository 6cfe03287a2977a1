#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/process.hpp"
#include "tests/net/client_support.hpp"
#include "net/http_client.hpp"
#include "net/http_server.hpp"

using namespace moonmq::transport;
using moonmq::test::call;
using moonmq::test::result_collector;
using moonmq::test::scripted_peer;
using namespace std::chrono_literals;

namespace {

/// Our own server on loopback with routes that expose what the client did.
struct server_fixture {
  explicit server_fixture(http_server_options opts = {}) : pool(2) {
    auto r = std::make_shared<router>();
    // The client's address as the server saw it: one port per connection.
    r->add("GET", "/remote", [](http_request& req, responder respond) { respond(http_response::json(200, req.remote)); });
    r->add("POST", "/echo", [](http_request& req, responder respond) { respond(http_response::json(200, req.body)); });
    // Answers after `ms` milliseconds from another thread; records how many
    // run at once.
    r->add("GET", "/delay/{ms}", [this](http_request& req, responder respond) {
      int now = ++running;
      int seen = max_running.load();
      while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
      }
      auto ms = std::stoi(req.params["ms"]);
      std::thread([this, respond, ms, remote = req.remote] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        --running;
        respond(http_response::json(200, remote));
      }).detach();
    });
    // Never answers (the responder is kept so the connection stays open).
    r->add("GET", "/never", [this](http_request&, responder respond) {
      std::lock_guard<std::mutex> g{mtx};
      parked.push_back(std::move(respond));
    });
    server = std::make_unique<http_server>(pool, opts, r);
    REQUIRE_FALSE(server->start());
    port = server->port();
  }
  ~server_fixture() {
    server->stop(200ms);
    pool.stop();
  }
  http_client_options client_options() const {
    http_client_options o;
    o.port = port;
    o.timeout = 3s;
    return o;
  }

  io_pool pool;
  std::unique_ptr<http_server> server;
  uint16_t port = 0;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::mutex mtx;
  std::vector<responder> parked;
};

peer_request get(std::string target, bool idempotent = true) {
  peer_request r;
  r.method = "GET";
  r.target = std::move(target);
  r.idempotent = idempotent;
  return r;
}

/// A loopback port with nobody listening.
uint16_t closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

TEST_CASE("client answers many concurrent requests over a bounded pool", "[http_client]") {
  server_fixture f;
  auto o = f.client_options();
  o.max_connections = 4;
  http_client client{f.pool, o};
  result_collector got;
  const int n = 120;
  // Requests come from several threads at once.
  std::vector<std::thread> senders;
  for (int t = 0; t < 3; ++t)
    senders.emplace_back([&] {
      for (int i = 0; i < n / 3; ++i)
        client.request(get("/delay/5"), got.callback());
    });
  for (auto& s : senders)
    s.join();
  REQUIRE(got.wait_for(n, 10s));
  std::set<std::string> remotes;
  for (auto& r : got.results()) {
    CHECK(r.ok());
    CHECK(r.status == 200);
    remotes.insert(r.body);
  }
  CHECK(got.count() == static_cast<size_t>(n));
  // All four connections were used in parallel, and never more.
  CHECK(f.max_running.load() == 4);
  CHECK(remotes.size() == 4);
  CHECK(client.connections_opened() == 4);
  CHECK(client.open_connections() == 4);
}

TEST_CASE("sequential requests reuse one kept-alive connection", "[http_client]") {
  server_fixture f;
  http_client client{f.pool, f.client_options()};
  std::set<std::string> remotes;
  for (int i = 0; i < 10; ++i) {
    auto r = call(client, get("/remote"));
    REQUIRE(r.ok());
    CHECK(r.attempts == 1);
    remotes.insert(r.body);
  }
  CHECK(remotes.size() == 1);
  CHECK(client.connections_opened() == 1);
  auto echo = call(client, {"POST", "/echo", "{\"a\":1}", {}, 0ms, false});
  CHECK(echo.status == 200);
  CHECK(echo.body == "{\"a\":1}");
  CHECK(echo.headers["content-type"] == "application/json");
  CHECK(client.connections_opened() == 1);
}

TEST_CASE("a request with no answer times out and its connection is dropped", "[http_client]") {
  server_fixture f;
  http_client client{f.pool, f.client_options()};
  auto t0 = std::chrono::steady_clock::now();
  auto req = get("/never");
  req.timeout = 300ms;
  auto r = call(client, req);
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.error == client_error::timeout);
  CHECK(r.status == 0);
  CHECK(r.attempts == 1);
  CHECK_FALSE(r.unsent);  // written: the peer may have acted on it
  CHECK(took >= 290ms);
  CHECK(took < 1500ms);
  CHECK(moonmq::test::wait_until([&] { return client.open_connections() == 0; }, 2s));
  // The client still works, on a new connection.
  CHECK(call(client, get("/remote")).status == 200);
  CHECK(client.connections_opened() == 2);
}

TEST_CASE("the deadline includes the wait for a free connection", "[http_client]") {
  server_fixture f;
  auto o = f.client_options();
  o.max_connections = 1;
  result_collector blocker;  // outlives the client, whose close() answers it
  http_client client{f.pool, o};
  auto busy = get("/never");
  busy.timeout = 2s;
  client.request(busy, blocker.callback());
  auto queued = get("/remote");
  queued.timeout = 200ms;
  auto t0 = std::chrono::steady_clock::now();
  auto r = call(client, queued);
  CHECK(r.error == client_error::timeout);
  CHECK(r.attempts == 0);  // never got a connection
  CHECK(r.unsent);
  CHECK(std::chrono::steady_clock::now() - t0 < 1500ms);
  CHECK(blocker.count() == 0);
}

TEST_CASE("a connection the server closed while idle is not used again", "[http_client]") {
  http_server_options so;
  so.header_timeout = 150ms;  // also the server's keep-alive idle timeout
  server_fixture f{so};
  http_client client{f.pool, f.client_options()};
  auto first = call(client, get("/remote"));
  REQUIRE(first.ok());
  std::this_thread::sleep_for(500ms);
  // Neither request kind fails: the stale connection is noticed before use.
  auto idem = call(client, get("/remote"));
  CHECK(idem.status == 200);
  CHECK(idem.body != first.body);
  std::this_thread::sleep_for(500ms);
  auto post = call(client, {"POST", "/echo", "x", {}, 0ms, false});
  CHECK(post.status == 200);
  CHECK(client.connections_opened() == 3);
}

TEST_CASE("an idempotent request is retried once when the connection drops before any answer", "[http_client]") {
  // First connection: read the request, close without a byte. Then answer.
  scripted_peer peer([](int i) {
    return i == 0 ? std::string() : std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  io_pool pool(2);
  http_client_options o;
  o.port = peer.port();
  o.timeout = 3s;
  http_client client{pool, o};
  auto r = call(client, get("/x", true));
  CHECK(r.status == 200);
  CHECK(r.body == "ok");
  CHECK(r.attempts == 2);
  CHECK(peer.connections() == 2);
}

TEST_CASE("a non-idempotent request is not retried", "[http_client]") {
  scripted_peer peer([](int i) {
    return i == 0 ? std::string() : std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  io_pool pool(2);
  http_client_options o;
  o.port = peer.port();
  http_client client{pool, o};
  auto r = call(client, {"POST", "/x", "{}", {}, 2s, false});
  CHECK(r.error == client_error::connection_lost);
  CHECK(r.attempts == 1);
  CHECK_FALSE(r.unsent);
  CHECK_FALSE(r.error_message.empty());
  std::this_thread::sleep_for(100ms);
  CHECK(peer.connections() == 1);
}

TEST_CASE("a response cut off midway is an error, not retried", "[http_client]") {
  scripted_peer peer([](int) { return std::string("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"); });
  io_pool pool(2);
  http_client_options o;
  o.port = peer.port();
  http_client client{pool, o};
  auto r = call(client, get("/x", true));
  CHECK(r.error == client_error::connection_lost);
  CHECK(r.attempts == 1);
  std::this_thread::sleep_for(100ms);
  CHECK(peer.connections() == 1);
}

TEST_CASE("an invalid or oversized answer is bad_response", "[http_client]") {
  scripted_peer peer([](int i) {
    return i == 0 ? std::string("NOT HTTP AT ALL\r\n\r\n")
                  : std::string("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n") + std::string(100, 'x');
  });
  io_pool pool(2);
  http_client_options o;
  o.port = peer.port();
  o.max_response_bytes = 10;
  http_client client{pool, o};
  auto not_http = call(client, get("/x"));
  CHECK(not_http.error == client_error::bad_response);
  auto too_big = call(client, get("/x"));
  INFO(too_big.status << " " << too_big.body << " " << too_big.error_message);
  CHECK(too_big.error == client_error::bad_response);
}

TEST_CASE("connection refused fails at once with connect_failed", "[http_client]") {
  io_pool pool(1);
  http_client_options o;
  o.port = closed_port();
  http_client client{pool, o};
  auto t0 = std::chrono::steady_clock::now();
  auto r = call(client, get("/x", true));
  CHECK(r.error == client_error::connect_failed);
  CHECK(r.attempts == 1);
  CHECK(r.unsent);
  CHECK(r.error_message.find("connect 127.0.0.1:") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
  CHECK(client.open_connections() == 0);
}

TEST_CASE("an unknown method is refused without touching the network", "[http_client]") {
  io_pool pool(1);
  http_client_options o;
  o.port = closed_port();
  http_client client{pool, o};
  auto r = call(client, {"FROB", "/", "", {}, 0ms, false});
  CHECK(r.error == client_error::bad_request);
  CHECK(client.connections_opened() == 0);
}

TEST_CASE("close fails in-flight and queued requests exactly once", "[http_client]") {
  server_fixture f;
  auto o = f.client_options();
  o.max_connections = 2;
  http_client client{f.pool, o};
  const int n = 6;  // 2 in flight, 4 queued
  std::vector<std::atomic<int>> calls(n);
  result_collector got;
  for (int i = 0; i < n; ++i)
    client.request(get("/never"), [&, i, cb = got.callback()](peer_result r) {
      ++calls[static_cast<size_t>(i)];
      cb(std::move(r));
    });
  REQUIRE(moonmq::test::wait_until(
    [&] {
      std::lock_guard<std::mutex> g{f.mtx};
      return f.parked.size() == 2;
    },
    3s));
  client.close();
  // close() returned after the callbacks ran.
  CHECK(got.count() == static_cast<size_t>(n));
  for (auto& r : got.results())
    CHECK(r.error == client_error::closed);
  CHECK(moonmq::test::wait_until([&] { return client.open_connections() == 0; }, 2s));
  auto late = call(client, get("/remote"));
  CHECK(late.error == client_error::closed);
  std::this_thread::sleep_for(100ms);
  for (auto& c : calls)
    CHECK(c.load() == 1);
}

TEST_CASE("the answer to HEAD is complete without a body", "[http_client]") {
  scripted_peer peer([](int) { return std::string("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"); });
  io_pool pool(1);
  http_client_options o;
  o.port = peer.port();
  o.timeout = 2s;
  http_client client{pool, o};
  auto r = call(client, {"HEAD", "/x", "", {}, 0ms, true});
  CHECK(r.status == 200);
  CHECK(r.headers["content-length"] == "5");
  CHECK(r.body.empty());
}

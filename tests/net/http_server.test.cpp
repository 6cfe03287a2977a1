#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

#include "tests/support/raw_http.hpp"
#include "net/blocking_client.hpp"
#include "tests/support/process.hpp"
#include "net/http_server.hpp"

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

// --- HTTP/1.1 pipelining ------------------------------------------------------

namespace {

using moonmq::test::answers_of;
using moonmq::test::raw_answer;

std::vector<raw_answer> pipeline(uint16_t port, const std::string& bytes, size_t n) {
  return moonmq::test::pipelined_exchange(port, bytes, n, 5s);
}

std::string get(const std::string& target, bool close = false) {
  return "GET " + target + " HTTP/1.1\r\nHost: x\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n";
}

/// Routes that record when each request started and how many ran at once:
/// /together/{ms}/{id} (pipelining::together) and /alone/{ms}/{id} answer
/// {id} after {ms} milliseconds, from another thread; ?pad=N appends N
/// bytes 'x' to the answer.
struct pipeline_fixture {
  explicit pipeline_fixture(http_server_options opts = {}) : pool(2) {
    auto r = std::make_shared<router>();
    auto delayed = [this](http_request& req, responder respond) {
      auto ms = std::stoi(req.params["ms"]);
      auto id = req.params["id"];
      auto pad = req.query.count("pad") ? std::stoul(req.query["pad"]) : 0UL;
      std::lock_guard<std::mutex> g{mtx};
      started.push_back(id);
      peak = std::max(peak, ++running);
      workers.emplace_back([this, ms, id, pad, respond] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        {
          std::lock_guard<std::mutex> done{mtx};
          --running;
        }
        respond(http_response::json(200, id + std::string(pad, 'x')));
      });
    };
    r->add("GET", "/together/{ms}/{id}", delayed, pipelining::together);
    r->add("GET", "/alone/{ms}/{id}", delayed);
    // Holds the pipeline like a produce that forwards.
    r->add(
      "GET", "/held/{ms}/{id}",
      [delayed](http_request& req, responder respond) {
        req.hold_pipeline = true;
        delayed(req, std::move(respond));
      },
      pipelining::together);
    server = std::make_unique<http_server>(pool, opts, r);
    REQUIRE_FALSE(server->start());
    port = server->port();
  }
  ~pipeline_fixture() {
    server->stop(2s);
    join_workers();
    pool.stop();
  }
  /// Joins the handlers' threads (they use this fixture until they end).
  void join_workers() {
    for (;;) {
      std::vector<std::thread> done;
      {
        std::lock_guard<std::mutex> g{mtx};
        done.swap(workers);
      }
      if (done.empty())
        return;
      for (auto& t : done)
        t.join();
    }
  }
  int running_now() {
    std::lock_guard<std::mutex> g{mtx};
    return running;
  }
  std::vector<std::string> started_ids() {
    std::lock_guard<std::mutex> g{mtx};
    return started;
  }
  int peak_running() {
    std::lock_guard<std::mutex> g{mtx};
    return peak;
  }
  io_pool pool;
  std::unique_ptr<http_server> server;
  uint16_t port = 0;
  std::mutex mtx;
  std::vector<std::string> started;
  int running = 0;
  int peak = 0;
  /// The handlers' threads: joined by the destructor, which also runs when
  /// a REQUIRE ends a test (none is started before the constructor ends).
  std::vector<std::thread> workers;
};

std::vector<std::string> bodies(const std::vector<raw_answer>& answers) {
  std::vector<std::string> out;
  for (const auto& a : answers)
    out.push_back(a.body);
  return out;
}

}  // namespace

TEST_CASE("pipelined requests sent in one write are answered in request order", "[http][pipelining]") {
  pipeline_fixture f;
  // The first takes longest: its answer still comes first.
  auto got = pipeline(f.port, get("/together/400/a") + get("/together/5/b") + get("/together/100/c"), 3);
  REQUIRE(got.size() == 3);
  CHECK(bodies(got) == std::vector<std::string>{"a", "b", "c"});
  for (const auto& a : got) {
    CHECK(a.status == 200);
    CHECK_FALSE(a.close);
  }
  // `together` requests ran at the same time, and started in request order.
  CHECK(f.peak_running() >= 2);
  CHECK(f.started_ids() == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("pipelined alone and held requests run one at a time, in order", "[http][pipelining]") {
  pipeline_fixture f;
  auto got = pipeline(f.port,
                      get("/alone/150/a") + get("/together/5/b") + get("/alone/5/c") + get("/held/150/d")
                        + get("/together/5/e") + get("/alone/5/f"),
                      6);
  REQUIRE(got.size() == 6);
  CHECK(bodies(got) == std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
  CHECK(f.peak_running() == 1);
  CHECK(f.started_ids() == std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
}

TEST_CASE("a pipelined request with Connection: close is the connection's last", "[http][pipelining]") {
  pipeline_fixture f;
  bool closed = false;
  auto raw = moonmq::test::raw_exchange(
    f.port, get("/together/100/a") + get("/together/5/b", true) + get("/together/5/c"), 3s, &closed);
  auto got = answers_of(raw);
  REQUIRE(got.size() == 2);
  CHECK(bodies(got) == std::vector<std::string>{"a", "b"});
  CHECK_FALSE(got[0].close);
  CHECK(got[1].close);
  CHECK(closed);
  // The request after it was never read, let alone handled.
  CHECK(f.started_ids() == std::vector<std::string>{"a", "b"});
}

TEST_CASE("a client pipelining more than the bound gets every answer in order", "[http][pipelining]") {
  http_server_options o;
  o.max_pipelined = 4;
  pipeline_fixture f{o};
  std::string bytes;
  std::vector<std::string> want;
  for (int i = 0; i < 40; ++i) {
    want.push_back(std::to_string(i));
    bytes += get("/together/" + std::to_string(i % 3 == 0 ? 20 : 1) + "/" + want.back());
  }
  auto got = pipeline(f.port, bytes, 40);
  REQUIRE(got.size() == 40);
  CHECK(bodies(got) == want);
  CHECK(f.peak_running() <= 4);
  CHECK(f.started_ids() == want);
}

TEST_CASE("an error mid-pipeline is answered after the earlier answers, then the connection closes",
          "[http][pipelining]") {
  pipeline_fixture f;
  bool closed = false;
  // Malformed HTTP after request a: answered 400 after a's answer.
  auto bad_after_a = [&](const std::string& bad) {
    auto got = answers_of(
      moonmq::test::raw_exchange(f.port, get("/together/100/a") + bad + get("/together/1/c"), 3s, &closed));
    REQUIRE(got.size() == 2);
    CHECK(got[0].body == "a");
    CHECK(got[1].status == 400);
    CHECK(got[1].close);
  };
  SECTION("malformed HTTP") {
    bad_after_a("NOT HTTP AT ALL\r\n\r\n");
  }
  SECTION("a malformed chunked body") {
    bad_after_a("GET /together/1/b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n");
  }
  SECTION("a body over the limit") {
    auto raw = moonmq::test::raw_exchange(
      f.port, get("/together/100/a") + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n", 3s,
      &closed);
    auto got = answers_of(raw);
    REQUIRE(got.size() == 2);
    CHECK(got[0].body == "a");
    CHECK(got[1].status == 413);
    CHECK(got[1].body.find("payload_too_large") != std::string::npos);
  }
  CHECK(closed);
  CHECK(f.started_ids() == std::vector<std::string>{"a"});
}

TEST_CASE("a client that ends its sending side gets the answers to what it sent", "[http][pipelining]") {
  pipeline_fixture f;
  boost::asio::io_context ioc;
  using tcp = boost::asio::ip::tcp;
  tcp::socket s{ioc};
  s.connect({boost::asio::ip::make_address("127.0.0.1"), f.port});
  boost::asio::write(s, boost::asio::buffer(get("/together/100/a") + get("/alone/5/b")));
  s.shutdown(tcp::socket::shutdown_send);
  std::string raw;
  boost::system::error_code ec;
  char buf[4096];
  while (!ec) {
    auto n = s.read_some(boost::asio::buffer(buf), ec);
    raw.append(buf, n);
  }
  CHECK(ec == boost::asio::error::eof);  // closed once both answers were written
  CHECK(bodies(answers_of(raw)) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("at stop: every pipelined request already read is answered, the last with Connection: close",
          "[http][pipelining]") {
  pipeline_fixture f;
  std::vector<raw_answer> got;
  bool closed = false;
  std::thread client([&] {
    got = answers_of(moonmq::test::raw_exchange(f.port, get("/together/300/a") + get("/together/10/b"), 5s, &closed));
  });
  REQUIRE(moonmq::test::wait_until([&] { return f.started_ids().size() == 2; }, 3s));
  f.server->stop(3s);
  client.join();
  REQUIRE(got.size() == 2);
  CHECK(bodies(got) == std::vector<std::string>{"a", "b"});
  CHECK_FALSE(got[0].close);
  CHECK(got[1].close);
  CHECK(closed);
}

namespace {

using tcp = boost::asio::ip::tcp;

/// A client connection with a small receive buffer: an answer of a few MiB
/// stays unwritten on the server while the client does not read.
tcp::socket narrow_client(boost::asio::io_context& ioc, uint16_t port) {
  tcp::socket s{ioc};
  s.open(tcp::v4());
  s.set_option(boost::asio::socket_base::receive_buffer_size(16 * 1024));
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  return s;
}

/// Reads until the peer closes (or the connection fails: `*end` says which).
std::string read_to_end(tcp::socket& s, boost::system::error_code* end = nullptr) {
  std::string raw;
  boost::system::error_code ec;
  std::vector<char> buf(64 * 1024);
  while (!ec) {
    auto n = s.read_some(boost::asio::buffer(buf), ec);
    raw.append(buf.data(), n);
  }
  if (end)
    *end = ec;
  return raw;
}

constexpr size_t big_answer = 8 << 20;  // more than the socket buffers of a connection hold

}  // namespace

TEST_CASE("an alone request starts only once every earlier answer is written", "[http][pipelining]") {
  pipeline_fixture f;
  boost::asio::io_context ioc;
  auto s = narrow_client(ioc, f.port);
  auto pad = "?pad=" + std::to_string(big_answer);
  boost::asio::write(s, boost::asio::buffer(get("/alone/0/a" + pad) + get("/alone/0/b" + pad)
                                            + get("/alone/0/c" + pad, true)));
  // Nothing is read: a's answer is not written out, so b and c do not start
  // and the connection holds one large answer, not three.
  REQUIRE(moonmq::test::wait_until([&] { return f.started_ids().size() == 1 && f.running_now() == 0; }, 3s));
  std::this_thread::sleep_for(300ms);
  CHECK(f.started_ids() == std::vector<std::string>{"a"});
  auto got = answers_of(read_to_end(s));
  REQUIRE(got.size() == 3);
  CHECK(got[0].body == "a" + std::string(big_answer, 'x'));
  CHECK(got[1].body == "b" + std::string(big_answer, 'x'));
  CHECK(got[2].body == "c" + std::string(big_answer, 'x'));
  CHECK(f.started_ids() == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("a request read after a stopping server's last answer is not run", "[http][pipelining]") {
  pipeline_fixture f;
  boost::asio::io_context ioc;
  auto s = narrow_client(ioc, f.port);
  boost::asio::write(s, boost::asio::buffer(get("/together/200/a?pad=" + std::to_string(big_answer))));
  REQUIRE(moonmq::test::wait_until([&] { return f.started_ids().size() == 1; }, 3s));
  // The server stops while a runs: a's answer is its last (Connection:
  // close), and it stays unwritten while the client does not read.
  std::thread stopper([&] { f.server->stop(5s); });
  REQUIRE(moonmq::test::wait_until([&] { return f.running_now() == 0; }, 3s));
  std::this_thread::sleep_for(100ms);
  // The server is still reading the connection: b arrives after the answer
  // that closes it was decided, so b must not run.
  boost::asio::write(s, boost::asio::buffer(get("/together/0/b")));
  std::this_thread::sleep_for(300ms);
  CHECK(f.started_ids() == std::vector<std::string>{"a"});
  auto got = answers_of(read_to_end(s));
  stopper.join();
  REQUIRE(got.size() == 1);
  CHECK(got[0].body == "a" + std::string(big_answer, 'x'));
  CHECK(got[0].close);
  CHECK(f.started_ids() == std::vector<std::string>{"a"});
  CHECK(f.server->in_flight() == 0);
}

TEST_CASE("no request is read while the unanswered bodies reach max_body_bytes", "[http][pipelining]") {
  http_server_options o;
  o.max_body_bytes = 1000;
  pipeline_fixture f{o};
  auto with_body = [](const std::string& id) {
    return "GET /together/600/" + id + " HTTP/1.1\r\nHost: x\r\nContent-Length: 600\r\n\r\n" + std::string(600, 'b');
  };
  std::vector<raw_answer> got;
  std::thread client([&] { got = pipeline(f.port, with_body("a") + with_body("b") + with_body("c"), 3); });
  // a and b (1200 bytes of bodies) are read and run; c is not read until
  // an answer gives their bytes back.
  REQUIRE(moonmq::test::wait_until([&] { return f.started_ids().size() == 2; }, 3s));
  std::this_thread::sleep_for(150ms);
  CHECK(f.started_ids() == std::vector<std::string>{"a", "b"});
  client.join();
  CHECK(bodies(got) == std::vector<std::string>{"a", "b", "c"});
  CHECK(f.started_ids() == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("the last answer is not lost to a reset when the client sent bytes the server did not read",
          "[http][pipelining]") {
  pipeline_fixture f;
  boost::asio::io_context ioc;
  tcp::socket s{ioc};
  s.connect({boost::asio::ip::make_address("127.0.0.1"), f.port});
  // The body is over the limit: the server answers 413 from the header and
  // never reads the body as a request; closing with those bytes unread
  // would send a reset instead of the end of the stream.
  boost::system::error_code write_ec;
  boost::asio::write(s,
                     boost::asio::buffer("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n"
                                         + std::string(512 * 1024, 'b')),
                     write_ec);
  CHECK_FALSE(write_ec);
  std::this_thread::sleep_for(100ms);  // the 413 is written and the server closes meanwhile
  boost::system::error_code end;
  auto got = answers_of(read_to_end(s, &end));
  REQUIRE(got.size() == 1);
  CHECK(got[0].status == 413);
  CHECK(got[0].close);
  CHECK(end == boost::asio::error::eof);
}

TEST_CASE("a pipelined client whose write fails still gets the answers sent before the close", "[http][pipelining]") {
  namespace net = boost::asio;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc, {net::ip::make_address("127.0.0.1"), 0}};
  auto port = acceptor.local_endpoint().port();
  // Like a stopping node: answers the request it read, then closes while
  // the client still writes the large requests behind it (a reset, as
  // their bytes are unread).
  std::thread server([&] {
    auto s = acceptor.accept();
    net::streambuf buf;
    net::read_until(s, buf, "\r\n\r\n");
    std::this_thread::sleep_for(150ms);  // the client is done sending and sleeps
    net::write(s, net::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")));
    std::this_thread::sleep_for(50ms);
    s.close();
  });
  http_pipeline pipe{"127.0.0.1", port, 8, 5s};
  for (int i = 0; i < 4; ++i)
    pipe.send("POST", "/r", std::string(8 << 20, 'x'), {});
  // The answer and the reset that fails the write both arrive while the
  // client does not run: it sees them at once in next().
  std::this_thread::sleep_for(500ms);
  std::vector<http_result> got;
  while (auto r = pipe.next(true))
    got.push_back(std::move(*r));
  server.join();
  REQUIRE(got.size() == 4);
  CHECK(got[0].status == 200);
  CHECK(got[0].body == "first");
  for (size_t i = 1; i < got.size(); ++i) {
    CHECK(got[i].status == 0);
    CHECK(got[i].error.find("writing a request") != std::string::npos);
  }
}

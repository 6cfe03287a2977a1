#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "tests/support/process.hpp"
#include "tests/support/raw_http.hpp"
#include "tests/net/client_support.hpp"
#include "net/blocking_client.hpp"
#include "net/http_client.hpp"
#include "net/http_server.hpp"
#include "net/tls.hpp"

using namespace moonmq::transport;
using moonmq::test::call;
using namespace std::chrono_literals;

namespace {

/// A throw-away PKI made with the openssl command line: two CAs, a server
/// certificate for localhost/127.0.0.1, one for another name, and client
/// certificates from each CA. EC P-256 keys and one shell keep it fast.
struct pki {
  pki() {
    std::string script = ca("ca", "moonmq test CA") + " && " + ca("ca2", "other CA");
    script += " && " + leaf("server", "ca", "localhost", "DNS:localhost,IP:127.0.0.1", 2);
    script += " && " + leaf("other", "ca", "other.example", "DNS:other.example", 3);
    script += " && " + leaf("client", "ca", "b2", "DNS:b2", 4);
    script += " && " + leaf("stranger", "ca2", "b9", "DNS:b9", 5);
    auto full = "cd '" + dir.path() + "' && { " + script + "; } >openssl.log 2>&1";
    INFO(full);
    REQUIRE(std::system(full.c_str()) == 0);
  }
  std::string file(const std::string& name) const { return dir.path() + "/" + name; }
  tls_settings settings(const std::string& who, const std::string& ca, tls_verify v) const {
    tls_settings s;
    if (!who.empty()) {
      s.cert_file = file(who + ".pem");
      s.key_file = file(who + ".key");
    }
    if (!ca.empty())
      s.ca_file = file(ca + ".pem");
    s.verify = v;
    return s;
  }

  moonmq::test::temp_dir dir{"moonmq-tls"};

private:
  static constexpr const char* new_key = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2";
  static std::string ca(const std::string& name, const std::string& cn) {
    return std::string(new_key) + " -keyout " + name + ".key -out " + name + ".pem -subj '/CN=" + cn
           + "' -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign'";
  }
  /// A leaf certificate signed by `ca` in one step (req -x509 -CA).
  static std::string leaf(const std::string& name, const std::string& ca, const std::string& cn,
                          const std::string& san, int serial) {
    return std::string(new_key) + " -keyout " + name + ".key -out " + name + ".pem -subj '/CN=" + cn + "' -CA " + ca
           + ".pem -CAkey " + ca + ".key -set_serial " + std::to_string(serial) + " -addext 'subjectAltName=" + san
           + "' -addext 'basicConstraints=CA:FALSE' -addext 'keyUsage=digitalSignature'"
           + " -addext 'extendedKeyUsage=serverAuth,clientAuth'";
  }
};

std::shared_ptr<const tls_context> server_ctx(const tls_settings& s) {
  auto r = tls_context::make_server(s);
  INFO(r.error);
  REQUIRE(r.context);
  return r.context;
}

std::shared_ptr<const tls_context> client_ctx(const tls_settings& s) {
  auto r = tls_context::make_client(s);
  INFO(r.error);
  REQUIRE(r.context);
  return r.context;
}

/// A TLS (or plaintext, when `tls` is null) server with /hello and /echo.
struct tls_server {
  explicit tls_server(std::shared_ptr<const tls_context> tls, int64_t max_body = 1024) : pool(2) {
    auto r = std::make_shared<router>();
    r->add("GET", "/hello", [](http_request& req, responder respond) { respond(http_response::json(200, req.remote)); });
    r->add("POST", "/echo", [](http_request& req, responder respond) { respond(http_response::json(200, req.body)); });
    http_server_options o;
    o.name = "cluster";
    o.tls = std::move(tls);
    o.max_body_bytes = max_body;
    server = std::make_unique<http_server>(pool, o, r);
    REQUIRE_FALSE(server->start());
  }
  ~tls_server() {
    server->stop(100ms);
    pool.stop();
  }
  std::unique_ptr<http_client> client(std::shared_ptr<const tls_context> tls, const std::string& host = "127.0.0.1") {
    http_client_options o;
    o.host = host;
    o.port = server->port();
    o.timeout = 3s;
    o.tls = std::move(tls);
    return std::make_unique<http_client>(pool, o);
  }
  io_pool pool;
  std::unique_ptr<http_server> server;
};

peer_request hello() {
  peer_request r;
  r.target = "/hello";
  r.idempotent = true;
  return r;
}

}  // namespace

TEST_CASE("tls settings come from the cluster config", "[tls]") {
  moonmq::config::tls_config c{"/c.pem", "/k.pem", "/ca.pem", "required"};
  std::string error;
  auto s = tls_settings_from_config(c, error);
  REQUIRE(s);
  CHECK(s->verify == tls_verify::required);
  CHECK(s->enabled());
  CHECK_FALSE(tls_settings{}.enabled());
  c.verify = "strict";
  CHECK_FALSE(tls_settings_from_config(c, error));
  CHECK(error.find("Tls.Verify") != std::string::npos);
}

TEST_CASE("bad TLS files give an error naming the file", "[tls]") {
  pki p;
  auto s = p.settings("server", "ca", tls_verify::required);
  CHECK(tls_context::make_server(s).context);
  CHECK(tls_context::make_client(s).context);

  auto missing = s;
  missing.cert_file = p.file("nope.pem");
  auto r = tls_context::make_server(missing);
  CHECK_FALSE(r.context);
  CHECK(r.error.find("Tls.CertFile '" + p.file("nope.pem") + "'") != std::string::npos);

  std::ofstream(p.file("garbage.pem")) << "not a certificate\n";
  auto garbage = s;
  garbage.ca_file = p.file("garbage.pem");
  r = tls_context::make_client(garbage);
  CHECK_FALSE(r.context);
  CHECK(r.error.find("Tls.CaFile '" + p.file("garbage.pem") + "'") != std::string::npos);

  auto mismatch = s;
  mismatch.key_file = p.file("client.key");
  r = tls_context::make_server(mismatch);
  CHECK_FALSE(r.context);
  CHECK(r.error.find("Tls.KeyFile '" + p.file("client.key") + "'") != std::string::npos);

  auto no_ca = s;
  no_ca.ca_file.clear();
  CHECK(tls_context::make_server(no_ca).error.find("Tls.CaFile") != std::string::npos);
  CHECK(tls_context::make_client(no_ca).error.find("Tls.CaFile") != std::string::npos);
  CHECK(tls_context::make_server(p.settings("", "ca", tls_verify::peer)).error.find("Tls.CertFile")
        != std::string::npos);
}

TEST_CASE("a TLS client and a TLS server exchange requests over kept-alive connections", "[tls]") {
  pki p;
  tls_server s{server_ctx(p.settings("server", "ca", tls_verify::peer))};
  auto client = s.client(client_ctx(p.settings("", "ca", tls_verify::peer)));
  for (int i = 0; i < 5; ++i) {
    auto r = call(*client, hello());
    INFO(r.error_message);
    CHECK(r.status == 200);
  }
  auto echo = call(*client, {"POST", "/echo", "{\"tls\":true}", {}, 0ms, false});
  CHECK(echo.body == "{\"tls\":true}");
  CHECK(client->connections_opened() == 1);
  // The limits of the plaintext server hold under TLS too.
  auto big = call(*client, {"POST", "/echo", std::string(2000, 'x'), {}, 0ms, false});
  CHECK(big.status == 413);
}

TEST_CASE("verify none still encrypts and needs no CA", "[tls]") {
  pki p;
  tls_server s{server_ctx(p.settings("server", "", tls_verify::none))};
  auto client = s.client(client_ctx(p.settings("", "", tls_verify::none)));
  CHECK(call(*client, hello()).status == 200);
  // A client trusting another CA accepts the server only because it does
  // not verify.
  auto lax = s.client(client_ctx(tls_settings{}));
  CHECK(call(*lax, hello()).status == 200);
}

TEST_CASE("a plaintext client to a TLS server fails cleanly", "[tls]") {
  pki p;
  tls_server s{server_ctx(p.settings("server", "ca", tls_verify::peer))};
  auto plain = s.client(nullptr);
  auto t0 = std::chrono::steady_clock::now();
  auto r = call(*plain, hello());
  CHECK(r.status == 0);
  CHECK(r.error == client_error::connection_lost);
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  CHECK(moonmq::test::status_of(moonmq::test::raw_exchange(
          s.server->port(), "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", 2s))
        == 0);
  // The listener is unharmed.
  auto tls = s.client(client_ctx(p.settings("", "ca", tls_verify::peer)));
  CHECK(call(*tls, hello()).status == 200);
}

TEST_CASE("a TLS client to a plaintext server fails with tls_failed", "[tls]") {
  pki p;
  tls_server s{nullptr};
  auto client = s.client(client_ctx(p.settings("", "ca", tls_verify::peer)));
  auto r = call(*client, hello());
  CHECK(r.error == client_error::tls_failed);
}

TEST_CASE("mutual TLS refuses clients without a certificate from the CA", "[tls]") {
  pki p;
  tls_server s{server_ctx(p.settings("server", "ca", tls_verify::required))};

  auto anonymous = s.client(client_ctx(p.settings("", "ca", tls_verify::peer)));
  auto r = call(*anonymous, hello());
  INFO(r.error_message);
  CHECK(r.status == 0);
  CHECK(r.error == client_error::tls_failed);

  auto stranger = s.client(client_ctx(p.settings("stranger", "ca", tls_verify::peer)));
  r = call(*stranger, hello());
  INFO(r.error_message);
  CHECK(r.status == 0);
  CHECK(r.error == client_error::tls_failed);

  auto member = s.client(client_ctx(p.settings("client", "ca", tls_verify::required)));
  r = call(*member, hello());
  INFO(r.error_message);
  CHECK(r.status == 200);
}

TEST_CASE("a client trusting another CA refuses the server", "[tls]") {
  pki p;
  tls_server s{server_ctx(p.settings("server", "ca", tls_verify::peer))};
  auto client = s.client(client_ctx(p.settings("", "ca2", tls_verify::peer)));
  auto r = call(*client, hello());
  CHECK(r.error == client_error::tls_failed);
  CHECK(r.error_message.find("certificate verify failed") != std::string::npos);
}

TEST_CASE("server names are checked for DNS names, not for IP addresses", "[tls]") {
  pki p;
  {
    tls_server s{server_ctx(p.settings("server", "ca", tls_verify::peer))};
    auto by_name = s.client(client_ctx(p.settings("", "ca", tls_verify::peer)), "localhost");
    auto r = call(*by_name, hello());
    INFO(r.error_message);
    CHECK(r.status == 200);
  }
  tls_server s{server_ctx(p.settings("other", "ca", tls_verify::peer))};
  auto by_name = s.client(client_ctx(p.settings("", "ca", tls_verify::peer)), "localhost");
  auto r = call(*by_name, hello());
  CHECK(r.error == client_error::tls_failed);
  // By IP only the chain is verified: the CA's "other.example" is accepted.
  auto by_ip = s.client(client_ctx(p.settings("", "ca", tls_verify::peer)), "127.0.0.1");
  CHECK(call(*by_ip, hello()).status == 200);
}

TEST_CASE("pipelined requests over TLS are answered in order", "[tls][pipelining]") {
  pki p;
  tls_server s{server_ctx(p.settings("server", "", tls_verify::none)), 64 * 1024};
  auto ctx = client_ctx(p.settings("", "", tls_verify::none));
  namespace net = boost::asio;
  net::io_context ioc;
  net::ssl::stream<net::ip::tcp::socket> tls{ioc, *static_cast<net::ssl::context*>(ctx->native())};
  tls.next_layer().connect({net::ip::make_address("127.0.0.1"), s.server->port()});
  tls.handshake(net::ssl::stream_base::client);
  // Bodies of growing size, so that reading the next request overlaps
  // writing the answers of the earlier ones inside the TLS session.
  std::string bytes;
  std::vector<std::string> want;
  for (int i = 0; i < 20; ++i) {
    want.push_back(std::to_string(i) + std::string(static_cast<size_t>(i) * 1500, 'x'));
    bytes += "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(want.back().size()) + "\r\n"
             + (i == 19 ? "Connection: close\r\n" : "") + "\r\n" + want.back();
  }
  // The answers are as large as the requests: write and read at the same
  // time (one async write, one async read in the session, both on this
  // thread), or both sides could block on full socket buffers.
  boost::system::error_code write_ec;
  net::async_write(tls, net::buffer(bytes), [&](boost::system::error_code e, size_t) { write_ec = e; });
  std::string raw;
  std::vector<char> buf(16384);
  std::function<void()> read_more = [&] {
    tls.async_read_some(net::buffer(buf), [&](boost::system::error_code e, size_t n) {
      raw.append(buf.data(), n);
      if (!e)
        read_more();
    });
  };
  read_more();
  ioc.run_for(std::chrono::seconds(20));
  CHECK_FALSE(write_ec);
  auto got = moonmq::test::answers_of(raw);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].status == 200);
    CHECK(got[i].body == want[i]);
  }
  CHECK(got.back().close);
}

#include "tests/support/http_client.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace moonmq::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

http_result http_call(uint16_t port, const std::string& method, const std::string& target,
                      const std::string& body, const header_list& headers, std::chrono::milliseconds timeout) {
  http_result out;
  try {
    net::io_context ioc;
    beast::tcp_stream stream{ioc};
    stream.expires_after(timeout);
    stream.connect(tcp::endpoint{net::ip::make_address("127.0.0.1"), port});
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers)
      req.set(k, v);
    req.body() = body;
    if (!body.empty() && req.find(http::field::content_type) == req.end())
      req.set(http::field::content_type, "application/json");
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ULL << 32);
    http::read(stream, buf, parser);
    auto& res = parser.get();
    out.status = static_cast<int>(res.result_int());
    out.body = res.body();
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (auto& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(f.value());
    }
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

std::string raw_exchange(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                         bool* closed) {
  net::io_context ioc;
  tcp::socket sock{ioc};
  std::string got;
  bool peer_closed = false;
  beast::error_code ec;
  sock.connect(tcp::endpoint{net::ip::make_address("127.0.0.1"), port}, ec);
  if (ec)
    return got;
  if (!bytes.empty())
    net::write(sock, net::buffer(bytes), ec);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  std::function<void()> read_more;
  read_more = [&] {
    sock.async_read_some(net::buffer(buf), [&](beast::error_code e, size_t n) {
      got.append(buf, n);
      if (e) {
        peer_closed = true;
        return;
      }
      read_more();
    });
  };
  read_more();
  ioc.run_until(deadline);
  if (closed)
    *closed = peer_closed;
  return got;
}

int status_of(const std::string& raw) {
  if (raw.rfind("HTTP/1.", 0) != 0 || raw.size() < 12)
    return 0;
  return std::atoi(raw.substr(9, 3).c_str());
}

}  // namespace moonmq::test

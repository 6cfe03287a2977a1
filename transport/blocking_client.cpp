#include "transport/blocking_client.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <optional>

namespace moonmq::transport {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

/// Writes one request on `stream` and reads the answer into `out`; throws
/// beast::system_error on a connection failure.
void exchange(beast::tcp_stream& stream, beast::flat_buffer& buf, const std::string& host, const std::string& method,
              const std::string& target, const std::string& body, const header_list& headers, bool keep_alive,
              std::chrono::milliseconds timeout, http_result& out) {
  // The body is sent from the caller's string, not copied into the request.
  http::request<http::span_body<const char>> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, host);
  for (const auto& [k, v] : headers)
    req.set(k, v);
  req.body() = {body.data(), body.size()};
  if (!body.empty() && req.find(http::field::content_type) == req.end())
    req.set(http::field::content_type, "application/json");
  req.keep_alive(keep_alive);
  req.prepare_payload();
  stream.expires_after(timeout);
  http::write(stream, req);
  constexpr uint64_t body_limit = 1ULL << 32;
  http::response_parser<http::string_body> parser;
  parser.body_limit(body_limit);
  http::read_header(stream, buf, parser);
  auto length = parser.content_length();
  if (!parser.is_done() && length && *length <= body_limit && !parser.chunked()) {
    // A body of known length goes straight into its string in reads of
    // what the socket has (Beast's parser would read it 64 KiB at a time
    // and copy it once more).
    out.body.assign(static_cast<size_t>(*length), '\0');
    auto have = net::buffer_copy(net::buffer(out.body), buf.data());
    buf.consume(have);
    if (have < out.body.size())
      net::read(stream, net::buffer(out.body.data() + have, out.body.size() - have));
  } else {
    http::read(stream, buf, parser);
    out.body = std::move(parser.get().body());
  }
  auto& res = parser.get();
  out.status = static_cast<int>(res.result_int());
  out.headers.clear();
  for (const auto& f : res) {
    std::string name(f.name_string());
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(f.value());
  }
}

}  // namespace

bool split_host_port(const std::string& address, std::string& host, uint16_t& port) {
  std::string a = address;
  if (a.rfind("http://", 0) == 0)
    a = a.substr(7);
  while (!a.empty() && a.back() == '/')
    a.pop_back();
  auto colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= a.size())
    return false;
  auto p = a.substr(colon + 1);
  if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos || std::stoi(p) > 65535)
    return false;
  host = a.substr(0, colon);
  port = static_cast<uint16_t>(std::stoi(p));
  return true;
}

http_result http_call(const std::string& host, uint16_t port, const std::string& method, const std::string& target,
                      const std::string& body, const header_list& headers, std::chrono::milliseconds timeout) {
  http_result out;
  try {
    net::io_context ioc;
    tcp::resolver resolver{ioc};
    beast::tcp_stream stream{ioc};
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(host, std::to_string(port)));
    beast::flat_buffer buf;
    exchange(stream, buf, host, method, target, body, headers, false, timeout, out);
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  } catch (const std::exception& e) {
    out.status = 0;
    out.error = e.what();
  }
  return out;
}

struct http_connection::impl {
  std::string host;
  uint16_t port;
  net::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buf;
};

http_connection::http_connection(std::string host, uint16_t port) : impl_(std::make_unique<impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
}

http_connection::~http_connection() = default;

http_result http_connection::call(const std::string& method, const std::string& target, const std::string& body,
                                  std::chrono::milliseconds timeout, const header_list& headers) {
  http_result out;
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool fresh = !impl_->stream;
    try {
      if (fresh) {
        tcp::resolver resolver{impl_->ioc};
        impl_->stream.emplace(impl_->ioc);
        impl_->buf.clear();
        impl_->stream->expires_after(timeout);
        impl_->stream->connect(resolver.resolve(impl_->host, std::to_string(impl_->port)));
      }
      exchange(*impl_->stream, impl_->buf, impl_->host, method, target, body, headers, true, timeout, out);
      if (out.headers.count("connection") && out.headers["connection"] == "close")
        impl_->stream.reset();
      return out;
    } catch (const std::exception& e) {
      impl_->stream.reset();
      out = http_result{};
      out.error = e.what();
      // A kept-alive connection the server closed meanwhile: retry once on a
      // fresh one. A fresh connection that fails is the answer.
      if (fresh)
        return out;
    }
  }
  return out;
}

}  // namespace moonmq::transport

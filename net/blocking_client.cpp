#include "net/blocking_client.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <poll.h>

#include <deque>
#include <optional>

namespace moonmq::transport {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

/// The status and headers (names lower-cased) of `res` into `out`.
template <class Response>
void copy_headers(const Response& res, http_result& out) {
  out.status = static_cast<int>(res.result_int());
  out.headers.clear();
  for (const auto& f : res) {
    std::string name(f.name_string());
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(f.value());
  }
}

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
  copy_headers(parser.get(), out);
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

// --- http_pipeline ----------------------------------------------------------

namespace {

/// One pipelined request: kept alive by the write under way and by the
/// queue of requests waiting for their answers.
struct piped_request {
  std::string body;
  http::request<http::span_body<const char>> req;
};

/// One connection of a pipeline. Handlers hold it, so those still queued
/// for a connection that failed find it out of date and do nothing.
struct piped_connection {
  explicit piped_connection(net::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buf;
  std::optional<http::response_parser<http::string_body>> parser;
  bool writing = false;
  bool reading = false;
  /// A write failed: nothing more is written, but the answers the server
  /// sent before it closed are still read (a node that stops answers what
  /// it read, then closes).
  std::string write_error;
};

}  // namespace

struct http_pipeline::impl {
  std::string host;
  uint16_t port;
  size_t depth;
  std::chrono::milliseconds timeout;
  net::io_context ioc;
  std::shared_ptr<piped_connection> conn;
  std::deque<std::shared_ptr<piped_request>> to_write;    ///< not written yet
  std::deque<std::shared_ptr<piped_request>> unanswered;  ///< sent (or being sent), in order
  std::deque<http_result> answers;                        ///< read, not taken by next()
  std::vector<std::string> spares;

  /// A connection the server closed while idle is seen here: readable with
  /// nothing asked (end of stream, or bytes no request asked for).
  bool idle_connection_gone() {
    pollfd p{conn->stream.socket().native_handle(), POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) != 0;
  }

  void connect() {
    auto c = std::make_shared<piped_connection>(ioc);
    tcp::resolver resolver{ioc};
    c->stream.expires_after(timeout);
    c->stream.connect(resolver.resolve(host, std::to_string(port)));
    c->stream.expires_never();
    conn = std::move(c);
  }

  /// Ends the connection: every request without an answer gets `why`.
  void fail(const std::string& why) {
    for (size_t i = 0; i < unanswered.size(); ++i) {
      http_result r;
      r.error = why;
      answers.push_back(std::move(r));
    }
    unanswered.clear();
    to_write.clear();
    if (conn) {
      beast::error_code ignored;
      conn->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
      conn->stream.socket().close(ignored);
    }
    conn.reset();
  }

  void pump() {
    auto c = conn;
    if (!c)
      return;
    if (!c->writing && c->write_error.empty() && !to_write.empty()) {
      auto r = to_write.front();
      to_write.pop_front();
      c->writing = true;
      c->stream.expires_after(timeout);
      http::async_write(c->stream, r->req, [this, r, c](beast::error_code ec, size_t) {
        c->writing = false;
        if (c != conn)
          return;  // failed meanwhile
        if (ec) {
          // Answers may be in the receive buffer already: read on until the
          // read fails, then fail the requests left unanswered.
          c->write_error = "writing a request: " + ec.message();
          to_write.clear();
        }
        pump();
      });
    }
    if (!c->reading && !unanswered.empty()) {
      c->reading = true;
      c->parser.emplace();
      c->parser->body_limit(1ULL << 32);
      c->stream.expires_after(timeout);
      http::async_read(c->stream, c->buf, *c->parser, [this, c](beast::error_code ec, size_t) {
        c->reading = false;
        if (c != conn)
          return;
        if (ec) {
          fail(c->write_error.empty() ? "reading an answer: " + ec.message()
                                      : c->write_error + " (then reading: " + ec.message() + ")");
          return;
        }
        auto res = c->parser->release();
        http_result out;
        copy_headers(res, out);
        out.body = std::move(res.body());
        auto done = std::move(unanswered.front());
        unanswered.pop_front();
        if (spares.size() < depth && done.use_count() == 1) {
          done->body.clear();
          spares.push_back(std::move(done->body));
        }
        answers.push_back(std::move(out));
        if (!res.keep_alive()) {
          fail("the server closed the connection after an earlier answer");
          return;
        }
        pump();
      });
    }
  }

  /// Runs one handler (blocking); false when there is nothing left to run.
  bool run_one() {
    if (ioc.stopped())
      ioc.restart();
    return ioc.run_one() != 0;
  }

  /// Runs the handlers that are ready, without blocking.
  void poll() {
    if (ioc.stopped())
      ioc.restart();
    ioc.poll();
  }
};

http_pipeline::http_pipeline(std::string host, uint16_t port, int depth, std::chrono::milliseconds timeout)
  : impl_(std::make_unique<impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
  impl_->depth = static_cast<size_t>(std::max(1, depth));
  impl_->timeout = timeout;
}

http_pipeline::~http_pipeline() {
  impl_->fail("the pipeline was closed");
  impl_->poll();  // the closed connection's handlers, before the io_context goes
}

void http_pipeline::send(const std::string& method, const std::string& target, std::string body,
                         const header_list& headers) {
  auto& p = *impl_;
  auto r = std::make_shared<piped_request>();
  r->body = std::move(body);
  r->req = {http::string_to_verb(method), target, 11};
  r->req.set(http::field::host, p.host);
  for (const auto& [k, v] : headers)
    r->req.set(k, v);
  r->req.body() = {r->body.data(), r->body.size()};
  if (!r->body.empty() && r->req.find(http::field::content_type) == r->req.end())
    r->req.set(http::field::content_type, "application/json");
  r->req.keep_alive(true);
  r->req.prepare_payload();
  if (p.conn && p.unanswered.empty() && (!p.conn->write_error.empty() || p.idle_connection_gone()))
    p.fail("closed while idle");
  if (!p.conn) {
    try {
      p.connect();
    } catch (const std::exception& e) {
      http_result failed;
      failed.error = e.what();
      p.answers.push_back(std::move(failed));
      return;
    }
  }
  p.unanswered.push_back(r);
  p.to_write.push_back(std::move(r));
  p.pump();
  // Let the write (and any answer already in) go ahead, then wait while
  // the pipeline is full.
  p.poll();
  while (p.unanswered.size() >= p.depth && p.run_one()) {
  }
}

std::optional<http_result> http_pipeline::next(bool wait) {
  auto& p = *impl_;
  if (p.answers.empty())
    p.poll();
  while (wait && p.answers.empty() && !p.unanswered.empty() && p.run_one()) {
  }
  if (p.answers.empty())
    return std::nullopt;
  auto out = std::move(p.answers.front());
  p.answers.pop_front();
  return out;
}

size_t http_pipeline::outstanding() const {
  return impl_->unanswered.size() + impl_->answers.size();
}

std::string http_pipeline::spare_body() {
  auto& spares = impl_->spares;
  if (spares.empty())
    return {};
  auto out = std::move(spares.back());
  spares.pop_back();
  return out;
}

}  // namespace moonmq::transport

#include "net/http_client.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <optional>
#include <set>
#include <stdexcept>
#include <type_traits>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "net/http_server.hpp"
#include "net/tls.hpp"
#include "util/logging.hpp"

namespace moonmq::transport {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// --- errors ----------------------------------------------------------------

namespace {

class client_error_category_impl : public std::error_category {
public:
  const char* name() const noexcept override { return "moonmq.http_client"; }
  std::string message(int ev) const override {
    switch (static_cast<client_error>(ev)) {
      case client_error::timeout: return "request timed out";
      case client_error::closed: return "HTTP client closed";
      case client_error::queue_full: return "too many requests waiting for a connection";
      case client_error::resolve_failed: return "peer host name did not resolve";
      case client_error::connect_failed: return "could not connect to the peer";
      case client_error::tls_failed: return "TLS handshake failed";
      case client_error::connection_lost: return "connection lost before the response was complete";
      case client_error::bad_response: return "invalid HTTP response";
      case client_error::bad_request: return "invalid request";
    }
    return "unknown HTTP client error";
  }
};

}  // namespace

const std::error_category& client_error_category() {
  static const client_error_category_impl c;
  return c;
}

std::error_code make_error_code(client_error e) {
  return {static_cast<int>(e), client_error_category()};
}

// --- internals ---------------------------------------------------------------

namespace {

std::shared_ptr<spdlog::logger> logger() {
  static auto l = log::get("transport");
  return l;
}

using strand_type = net::strand<net::io_context::executor_type>;
using tls_stream = beast::ssl_stream<beast::tcp_stream>;
using request_message = http::request<http::string_body>;

/// One request from request() to its callback. Touched only on the
/// client's strand (after construction).
struct call {
  explicit call(const strand_type& s) : timer(s) {}
  std::shared_ptr<request_message> msg;  ///< null when the request could not be formed
  std::string build_error;
  peer_callback done;
  std::chrono::milliseconds timeout{0};
  std::chrono::steady_clock::time_point deadline;
  net::steady_timer timer;
  bool idempotent = false;
  int attempts = 0;
  bool finished = false;
  bool queued = false;
  bool written = false;  ///< a write of the request began (the peer may act on it)
};

peer_result failure(client_error kind, std::string message) {
  peer_result r;
  r.error = make_error_code(kind);
  r.error_message = std::move(message);
  return r;
}

/// One TCP (optionally TLS) connection; runs one call at a time. Never
/// reconnects: a failed connection object is dropped by its owner.
class connection_base : public std::enable_shared_from_this<connection_base> {
public:
  virtual ~connection_base() = default;
  /// Connects if needed, writes the call's request and reads the answer;
  /// reports to the owner (on_done / on_failed) exactly once.
  virtual void run(std::shared_ptr<call> c) = 0;
  /// For an idle connection: still open, the peer has neither closed it nor
  /// sent unsolicited bytes.
  virtual bool usable() = 0;
  /// Closes the socket; a pending operation then fails.
  virtual void close() = 0;
  /// The call being run, if any.
  virtual std::shared_ptr<call> current() const = 0;
};

}  // namespace

struct http_client::impl : std::enable_shared_from_this<http_client::impl> {
  impl(net::io_context& context, http_client_options o)
    : ioc(context), opts(std::move(o)), strand(net::make_strand(context)) {
    opts.max_connections = std::max(1, opts.max_connections);
    if (opts.tls) {
      // A server-role context would make every handshake fail in a confusing
      // way; this is a wiring mistake, not a runtime condition.
      if (opts.tls->side() != tls_context::role::client)
        throw std::invalid_argument("http_client needs a client-role tls_context");
      tls_ctx = static_cast<net::ssl::context*>(opts.tls->native());
    }
    beast::error_code ec;
    net::ip::make_address(opts.host, ec);
    host_is_ip = !ec;
    bool v6 = host_is_ip && opts.host.find(':') != std::string::npos;
    peer = (v6 ? "[" + opts.host + "]" : opts.host) + ":" + std::to_string(opts.port);
  }

  void submit(const std::shared_ptr<call>& c);
  void pump();
  void finish(const std::shared_ptr<call>& c, peer_result r);
  void on_timeout(const std::shared_ptr<call>& c);
  void on_done(const std::shared_ptr<connection_base>& k, const std::shared_ptr<call>& c, peer_result r,
               bool reusable);
  void on_failed(const std::shared_ptr<connection_base>& k, const std::shared_ptr<call>& c, client_error kind,
                 std::string message, bool retriable);
  void shutdown_all();
  std::shared_ptr<connection_base> make_connection();

  net::io_context& ioc;
  http_client_options opts;
  strand_type strand;
  net::ssl::context* tls_ctx = nullptr;
  bool host_is_ip = false;
  std::string peer;  ///< "host:port", also the Host header
  std::atomic<bool> closed{false};
  std::atomic<int> open{0};
  std::atomic<int> opened{0};
  // Strand-only state.
  std::deque<std::shared_ptr<call>> queue;
  std::vector<std::shared_ptr<connection_base>> idle;
  std::set<std::shared_ptr<connection_base>> busy;
};

namespace {

/// Classifies a write/read failure on an established connection.
client_error exchange_error(const beast::error_code& ec) {
  static const auto& http_category = http::make_error_code(http::error::bad_target).category();
  if (ec.category() == http_category && ec != http::error::end_of_stream && ec != http::error::partial_message)
    return client_error::bad_response;
  // An OpenSSL error after the handshake: under TLS 1.3 the server checks a
  // client certificate after the client has finished its handshake, so a
  // refusal arrives as an alert on the first read.
  if (ec.category() == net::error::get_ssl_category())
    return client_error::tls_failed;
  return client_error::connection_lost;
}

template <class Stream>
class connection final : public connection_base {
  static constexpr bool is_tls = std::is_same_v<Stream, tls_stream>;

public:
  template <class... Context>
  explicit connection(std::shared_ptr<http_client::impl> owner, Context&... tls)
    : owner_(std::move(owner)), resolver_(owner_->strand), stream_(owner_->strand, tls...) {}

  void run(std::shared_ptr<call> c) override {
    call_ = std::move(c);
    if (connected_)
      write();
    else
      resolve();
  }

  bool usable() override {
    auto& sock = tcp_layer().socket();
    if (!connected_ || !sock.is_open() || buffer_.size() != 0)
      return false;
    beast::error_code ec;
    sock.non_blocking(true, ec);
    if (ec)
      return false;
    char byte;
    sock.receive(net::buffer(&byte, 1), tcp::socket::message_peek, ec);
    // would_block: nothing to read, the peer still holds the connection open.
    // eof: the peer closed it. Data: unsolicited bytes, unusable for HTTP.
    return ec == net::error::would_block;
  }

  void close() override {
    resolver_.cancel();
    beast::error_code ec;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_both, ec);
    tcp_layer().close();
  }

  std::shared_ptr<call> current() const override { return call_; }

private:
  beast::tcp_stream& tcp_layer() { return beast::get_lowest_layer(stream_); }
  std::shared_ptr<connection> self() { return std::static_pointer_cast<connection>(shared_from_this()); }

  void resolve() {
    resolver_.async_resolve(
      owner_->opts.host, std::to_string(owner_->opts.port),
      [self = self()](beast::error_code ec, tcp::resolver::results_type results) {
        if (ec || self->call_->finished)
          return self->fail(client_error::resolve_failed, "resolve " + self->owner_->opts.host + ": " + ec.message(),
                            false);
        self->tcp_layer().async_connect(results, [self](beast::error_code e, const tcp::endpoint&) {
          if (e || self->call_->finished)
            return self->fail(client_error::connect_failed, "connect " + self->owner_->peer + ": " + e.message(),
                              false);
          self->handshake();
        });
      });
  }

  void handshake() {
    if constexpr (is_tls) {
      const auto& host = owner_->opts.host;
      if (!owner_->host_is_ip) {
        // SNI, and the name check of tls.hpp; IP literals get neither.
        SSL_set_tlsext_host_name(stream_.native_handle(), host.c_str());
        if (owner_->opts.tls->verify() != tls_verify::none)
          stream_.set_verify_callback(net::ssl::host_name_verification(host));
      }
      stream_.async_handshake(net::ssl::stream_base::client, [self = self()](beast::error_code ec) {
        if (ec || self->call_->finished)
          return self->fail(client_error::tls_failed,
                            "TLS handshake with " + self->owner_->peer + ": " + ec.message(), false);
        self->connected_ = true;
        self->write();
      });
    } else {
      connected_ = true;
      write();
    }
  }

  void write() {
    buffer_.clear();
    parser_.emplace();
    parser_->header_limit(64 * 1024);
    parser_->body_limit(owner_->opts.max_response_bytes);
    // The answer to HEAD announces a body it does not carry.
    parser_->skip(call_->msg->method() == http::verb::head);
    call_->written = true;
    http::async_write(stream_, *call_->msg, [self = self()](beast::error_code ec, std::size_t) {
      if (ec || self->call_->finished)
        return self->fail(exchange_error(ec), "write to " + self->owner_->peer + ": " + ec.message(), true);
      self->read();
    });
  }

  /// Reads the header on its own first: the header-only read is where the
  /// parser enforces body_limit against Content-Length (a single eager read
  /// of header and body in one buffer skips that check in Boost 1.74).
  void read() {
    http::async_read_header(stream_, buffer_, *parser_, [self = self()](beast::error_code ec, std::size_t) {
      if (ec || self->call_->finished)
        return self->fail(exchange_error(ec), "read from " + self->owner_->peer + ": " + ec.message(), true);
      self->read_body();
    });
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_, [self = self()](beast::error_code ec, std::size_t) {
      if (ec || self->call_->finished)
        return self->fail(exchange_error(ec), "read from " + self->owner_->peer + ": " + ec.message(), true);
      auto& res = self->parser_->get();
      peer_result r;
      r.status = static_cast<int>(res.result_int());
      for (const auto& f : res) {
        std::string name(f.name_string());
        for (auto& ch : name)
          ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        r.headers[name] = std::string(f.value());
      }
      r.body = std::move(res.body());
      // Bytes after a complete response were not asked for: do not reuse.
      bool reusable = res.keep_alive() && !self->parser_->need_eof() && self->buffer_.size() == 0;
      auto c = std::move(self->call_);
      self->owner_->on_done(self, c, std::move(r), reusable);
    });
  }

  /// Ends this connection; `established` = the failure came after the
  /// connection was ready (write or read), which may allow a retry.
  void fail(client_error kind, std::string message, bool established) {
    bool response_started = parser_ && (parser_->got_some() || buffer_.size() != 0);
    connected_ = false;
    close();
    auto c = std::move(call_);
    owner_->on_failed(self(), c, kind, std::move(message), established && !response_started);
  }

  std::shared_ptr<http_client::impl> owner_;
  tcp::resolver resolver_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
  std::shared_ptr<call> call_;
  bool connected_ = false;
};

}  // namespace

std::shared_ptr<connection_base> http_client::impl::make_connection() {
  if (tls_ctx)
    return std::make_shared<connection<tls_stream>>(shared_from_this(), *tls_ctx);
  return std::make_shared<connection<beast::tcp_stream>>(shared_from_this());
}

void http_client::impl::submit(const std::shared_ptr<call>& c) {
  if (closed)
    return finish(c, failure(client_error::closed, "HTTP client for " + peer + " is closed"));
  if (!c->msg)
    return finish(c, failure(client_error::bad_request, c->build_error));
  if (queue.size() >= opts.max_queued)
    return finish(c, failure(client_error::queue_full,
                             std::to_string(queue.size()) + " requests already wait for a connection to " + peer));
  c->timer.expires_at(c->deadline);
  c->timer.async_wait([self = shared_from_this(), c](beast::error_code ec) {
    if (!ec)
      self->on_timeout(c);
  });
  c->queued = true;
  queue.push_back(c);
  pump();
}

void http_client::impl::pump() {
  while (!queue.empty() && !closed) {
    std::shared_ptr<connection_base> k;
    while (!idle.empty() && !k) {
      auto candidate = std::move(idle.back());
      idle.pop_back();
      if (candidate->usable()) {
        k = std::move(candidate);
      } else {
        candidate->close();
        --open;
      }
    }
    if (!k) {
      if (open.load() >= opts.max_connections)
        return;  // the next finished or failed exchange pumps again
      k = make_connection();
      ++open;
      ++opened;
    }
    auto c = std::move(queue.front());
    queue.pop_front();
    c->queued = false;
    ++c->attempts;
    busy.insert(k);
    k->run(std::move(c));
  }
}

void http_client::impl::finish(const std::shared_ptr<call>& c, peer_result r) {
  if (c->finished)
    return;
  c->finished = true;
  c->timer.cancel();
  r.attempts = c->attempts;
  r.unsent = !r.ok() && !c->written;
  auto done = std::move(c->done);
  try {
    if (done)
      done(std::move(r));
  } catch (const std::exception& e) {
    logger()->error("http_client.callback_failed peer={} error={}", opts.name, e.what());
  }
}

void http_client::impl::on_timeout(const std::shared_ptr<call>& c) {
  if (c->finished)
    return;
  if (c->queued) {
    queue.erase(std::remove(queue.begin(), queue.end(), c), queue.end());
    c->queued = false;
  }
  // A connection running the call is closed: its answer may still come and
  // must not be read as the answer to a later request.
  for (const auto& k : busy)
    if (k->current() == c)
      k->close();
  finish(c, failure(client_error::timeout, "no answer from " + peer + " within "
                                             + std::to_string(c->timeout.count()) + " ms"));
}

void http_client::impl::on_done(const std::shared_ptr<connection_base>& k, const std::shared_ptr<call>& c,
                                peer_result r, bool reusable) {
  busy.erase(k);
  // A call that timed out meanwhile had its connection closed.
  reusable = reusable && !c->finished;
  finish(c, std::move(r));
  if (reusable && !closed) {
    idle.push_back(k);
  } else {
    k->close();
    --open;
  }
  pump();
}

void http_client::impl::on_failed(const std::shared_ptr<connection_base>& k, const std::shared_ptr<call>& c,
                                  client_error kind, std::string message, bool retriable) {
  busy.erase(k);
  --open;
  if (!c->finished) {
    if (retriable && kind == client_error::connection_lost && c->idempotent && c->attempts == 1 && !closed) {
      logger()->debug("http_client.retry peer={} target={} error={}", opts.name, std::string(c->msg->target()), message);
      c->queued = true;
      queue.push_front(c);
    } else {
      finish(c, failure(kind, std::move(message)));
    }
  }
  pump();
}

void http_client::impl::shutdown_all() {
  auto waiting = std::move(queue);
  queue.clear();
  for (auto& c : waiting) {
    c->queued = false;
    finish(c, failure(client_error::closed, "HTTP client for " + peer + " closed"));
  }
  // Busy connections report on_failed later (their calls are finished by
  // then); idle ones have no pending operation and are released here.
  std::vector<std::shared_ptr<connection_base>> running(busy.begin(), busy.end());
  for (auto& k : running) {
    if (auto c = k->current())
      finish(c, failure(client_error::closed, "HTTP client for " + peer + " closed"));
    k->close();
  }
  for (auto& k : idle) {
    k->close();
    --open;
  }
  idle.clear();
}

// --- public ----------------------------------------------------------------

http_client::http_client(io_pool& pool, http_client_options options)
  : impl_(std::make_shared<impl>(*static_cast<net::io_context*>(pool.native()), std::move(options))) {}

http_client::~http_client() {
  close();
}

void http_client::request(peer_request req, peer_callback done) {
  auto c = std::make_shared<call>(impl_->strand);
  c->done = std::move(done);
  c->idempotent = req.idempotent;
  c->timeout = req.timeout.count() > 0 ? req.timeout : impl_->opts.timeout;
  c->deadline = std::chrono::steady_clock::now() + c->timeout;
  auto verb = http::string_to_verb(req.method);
  if (verb == http::verb::unknown) {
    c->build_error = "unknown HTTP method '" + req.method + "'";
  } else {
    auto msg = std::make_shared<request_message>(verb, req.target, 11);
    msg->set(http::field::host, impl_->peer);
    msg->set(http::field::user_agent, "moonmq");
    for (const auto& [k, v] : req.headers)
      msg->set(k, v);
    msg->body() = std::move(req.body);
    if (!msg->body().empty() && msg->find(http::field::content_type) == msg->end())
      msg->set(http::field::content_type, "application/json");
    msg->keep_alive(true);
    msg->prepare_payload();
    c->msg = std::move(msg);
  }
  net::post(impl_->strand, [self = impl_, c] { self->submit(c); });
}

void http_client::request(std::string method, std::string target, std::string body, peer_headers headers,
                          std::chrono::milliseconds timeout, peer_callback done, bool idempotent) {
  peer_request req;
  req.method = std::move(method);
  req.target = std::move(target);
  req.body = std::move(body);
  req.headers = std::move(headers);
  req.timeout = timeout;
  req.idempotent = idempotent;
  request(std::move(req), std::move(done));
}

void http_client::close() {
  if (impl_->closed.exchange(true))
    return;
  if (impl_->strand.running_in_this_thread()) {
    impl_->shutdown_all();
    return;
  }
  auto finished = std::make_shared<std::promise<void>>();
  auto done = finished->get_future();
  net::post(impl_->strand, [self = impl_, finished] {
    self->shutdown_all();
    finished->set_value();
  });
  if (!impl_->ioc.stopped())
    done.wait_for(std::chrono::seconds(2));
}

int http_client::open_connections() const {
  return impl_->open.load();
}

int http_client::connections_opened() const {
  return impl_->opened.load();
}

}  // namespace moonmq::transport

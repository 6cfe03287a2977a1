#include "net/http_server.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <type_traits>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "net/tls.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

namespace moonmq::transport {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// --- io_pool ---------------------------------------------------------------

struct io_pool::impl {
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  std::vector<std::thread> threads;
  std::once_flag stopped;
};

io_pool::io_pool(int threads) : impl_(std::make_unique<impl>()) {
  for (int i = 0; i < std::max(1, threads); ++i)
    impl_->threads.emplace_back([this] { impl_->ioc.run(); });
}

io_pool::~io_pool() {
  stop();
}

void io_pool::stop() {
  std::call_once(impl_->stopped, [this] {
    impl_->work.reset();
    impl_->ioc.stop();
    for (auto& t : impl_->threads)
      if (t.joinable())
        t.join();
  });
}

void* io_pool::native() {
  return &impl_->ioc;
}

// --- server ----------------------------------------------------------------

namespace {

/// What the server needs of a connection regardless of its stream type.
class session_base {
public:
  virtual ~session_base() = default;
  /// Closes the connection from any thread (posted to its strand).
  virtual void close() = 0;
};

}  // namespace

struct http_server::impl : std::enable_shared_from_this<http_server::impl> {
  impl(net::io_context& context, http_server_options o, std::shared_ptr<const router> r)
    : ioc(context), opts(std::move(o)), routes(std::move(r)), acceptor(net::make_strand(context)) {}

  void accept();
  void track(const std::shared_ptr<session_base>& s);
  void request_started() { ++in_flight; }
  void request_finished() {
    std::lock_guard<std::mutex> g{mtx};
    --in_flight;
    cv.notify_all();
  }

  net::io_context& ioc;
  http_server_options opts;
  std::shared_ptr<const router> routes;
  tcp::acceptor acceptor;
  std::atomic<int> connections{0};
  std::atomic<int> in_flight{0};
  std::atomic<bool> stopping{false};
  std::mutex mtx;
  std::condition_variable cv;
  std::set<std::weak_ptr<session_base>, std::owner_less<std::weak_ptr<session_base>>> sessions;
  uint16_t bound_port = 0;
};

namespace {

std::shared_ptr<spdlog::logger> logger() {
  static auto l = log::get("transport");
  return l;
}

using tls_stream = beast::ssl_stream<beast::tcp_stream>;

/// One connection: plaintext (Stream = beast::tcp_stream) or TLS
/// (Stream = tls_stream, which first runs the server handshake).
template <class Stream>
class session : public session_base, public std::enable_shared_from_this<session<Stream>> {
  static constexpr bool is_tls = std::is_same_v<Stream, tls_stream>;

public:
  template <class... Context>
  session(tcp::socket&& socket, std::shared_ptr<http_server::impl> server, Context&... tls)
    : stream_(std::move(socket), tls...), server_(std::move(server)) {
    beast::error_code ec;
    auto ep = tcp_layer().socket().remote_endpoint(ec);
    if (!ec)
      remote_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  ~session() override { --server_->connections; }

  void start() {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      self->handshake([self] { self->maybe_read(); });
    });
  }

  /// Refuses the connection with 503: over the connection cap, or the
  /// server is shutting down.
  void refuse(bool shutting_down) {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this(), shutting_down] {
      self->handshake([self, shutting_down] {
        self->answer_now(shutting_down
                           ? http_response::error(503, "shutting_down", "the node is shutting down")
                           : http_response::error(503, "too_many_connections", "connection limit reached"),
                         11);
      });
    });
  }

  void close() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] { self->shut(); });
  }

private:
  /// One request of the connection from the moment it was read until its
  /// answer is written (or the connection closed), or an answer the server
  /// makes itself (400, 413, 503) after the answers before it.
  struct slot {
    std::optional<http_request> request;  ///< until dispatched
    pipelining mode = pipelining::alone;
    bool running = false;  ///< dispatched, not answered yet
    bool held = false;     ///< nothing later starts before its answer (alone, or hold_pipeline)
    std::optional<http_response> answer;
    unsigned version = 11;
    bool keep_alive = true;  ///< false: the connection closes after this answer
    bool counted = false;    ///< a request: counted in in_flight and the request metrics
    bool released = false;   ///< its in_flight count was given back
    size_t body_bytes = 0;
    std::chrono::steady_clock::time_point started;
  };

  beast::tcp_stream& tcp_layer() { return beast::get_lowest_layer(stream_); }

  /// Runs `next` once the connection is ready for HTTP: at once in
  /// plaintext, after a successful handshake (bounded by header_timeout) in
  /// TLS. A failed handshake closes the connection.
  template <class Next>
  void handshake(Next next) {
    if constexpr (is_tls) {
      tcp_layer().expires_after(server_->opts.header_timeout);
      stream_.async_handshake(net::ssl::stream_base::server,
                              [self = this->shared_from_this(), next = std::move(next)](beast::error_code ec) {
                                if (ec) {
                                  logger()->info("http.tls_handshake_failed listener={} remote={} error={}",
                                                 self->server_->opts.name, self->remote_, ec.message());
                                  self->shut();
                                  return;
                                }
                                next();
                              });
    } else {
      next();
    }
  }

  /// Starts reading the next request unless one is being read, the
  /// connection reads no more (end of stream, a request with Connection:
  /// close, an error answer, the server stopping), or the pipeline is full:
  /// max_pipelined unanswered requests, or unanswered bodies of
  /// max_body_bytes or more.
  void maybe_read() {
    if (reading_ || read_done_ || shut_)
      return;
    if (server_->stopping) {
      read_done_ = true;
      if (slots_.empty())
        shut();
      return;
    }
    if (static_cast<int>(slots_.size()) >= std::max(1, server_->opts.max_pipelined))
      return;
    if (!slots_.empty() && held_bytes_ >= static_cast<size_t>(server_->opts.max_body_bytes))
      return;
    read_header();
  }

  void read_header() {
    reading_ = true;
    // Beast sizes each socket read by the buffer's free capacity (at least
    // 512 bytes): without room, a large body arrives 512 bytes per read.
    if (buffer_.capacity() < read_chunk_bytes)
      buffer_.reserve(read_chunk_bytes);
    parser_.emplace();
    parser_->header_limit(64 * 1024);
    parser_->body_limit(static_cast<uint64_t>(server_->opts.max_body_bytes));
    // The header's deadline is idle_timer_'s: it runs only while no answer
    // is due, since a client waiting for its answers sends nothing.
    tcp_layer().expires_never();
    awaiting_header_ = true;
    if (slots_.empty())
      arm_idle_timer();
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  /// Closes the connection unless a header completes within header_timeout.
  void arm_idle_timer() {
    idle_timer_.expires_after(server_->opts.header_timeout);
    idle_timer_.async_wait([self = this->shared_from_this(), armed = ++idle_armed_](beast::error_code ec) {
      if (!ec && armed == self->idle_armed_ && self->awaiting_header_ && self->slots_.empty())
        self->shut();
    });
  }

  void on_header(beast::error_code ec) {
    awaiting_header_ = false;
    ++idle_armed_;
    idle_timer_.cancel();
    if (shut_) {
      read_after_last_answer(ec);
      return;
    }
    if (read_done_) {
      // The last answer went out with Connection: close while this request
      // was being read: it is neither run nor counted (RFC 9112 §9.6).
      reading_ = false;
      return;
    }
    if (ec == http::error::body_limit) {
      // Beast checks Content-Length against body_limit while parsing the header.
      answer_now(http_response::error(413, "payload_too_large",
                                      "body exceeds the limit of " + std::to_string(server_->opts.max_body_bytes)
                                        + " bytes"),
                 parser_->get().version());
      return;
    }
    if (ec) {
      read_failed(ec);
      return;
    }
    auto& req = parser_->get();
    if (auto len = parser_->content_length(); len && *len > static_cast<uint64_t>(server_->opts.max_body_bytes)) {
      answer_now(http_response::error(413, "payload_too_large",
                                      "body of " + std::to_string(*len) + " bytes exceeds the limit of "
                                        + std::to_string(server_->opts.max_body_bytes)),
                 req.version());
      return;
    }
    tcp_layer().expires_after(server_->opts.body_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code e, size_t) { self->on_body(e); });
  }

  /// Reading a request failed (its header or its body): malformed HTTP is
  /// answered 400 after the answers due before it; at the end of the
  /// stream the requests already read are still answered. A reset or a
  /// body timeout (which closes the socket) ends the connection at once.
  void read_failed(beast::error_code ec) {
    bool gone = ec == net::error::connection_reset || ec == beast::error::timeout;
    if (!gone && ec != http::error::end_of_stream && ec != net::error::operation_aborted && ec != net::error::eof) {
      answer_now(http_response::error(400, "bad_request", "malformed HTTP request: " + ec.message()), 11);
      return;
    }
    // The client sent its last request (or left): answer what was read.
    reading_ = false;
    read_done_ = true;
    if (slots_.empty() || gone)
      shut();
  }

  void on_body(beast::error_code ec) {
    if (shut_) {
      read_after_last_answer(ec);
      return;
    }
    if (read_done_) {
      reading_ = false;  // read after the last answer went out (on_header)
      return;
    }
    if (ec == http::error::body_limit) {
      answer_now(http_response::error(413, "payload_too_large", "body exceeds the limit of "
                                                                  + std::to_string(server_->opts.max_body_bytes)),
                 parser_->get().version());
      return;
    }
    if (ec) {
      read_failed(ec);
      return;
    }
    reading_ = false;
    tcp_layer().expires_never();
    auto msg = parser_->release();
    auto s = std::make_shared<slot>();
    s->version = msg.version();
    s->keep_alive = msg.keep_alive();
    s->counted = true;
    s->started = std::chrono::steady_clock::now();
    http_request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    req.remote = remote_;
    for (const auto& f : msg) {
      std::string name(f.name_string());
      for (auto& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers.emplace_back(std::move(name), std::string(f.value()));
    }
    req.body = std::move(msg.body());
    s->body_bytes = req.body.size();
    auto q = req.target.find('?');
    auto path = url_decode(std::string_view(req.target).substr(0, q));
    bool bad_query = false;
    if (q != std::string::npos) {
      std::string_view rest = std::string_view(req.target).substr(q + 1);
      while (!rest.empty()) {
        auto amp = rest.find('&');
        auto part = rest.substr(0, amp);
        auto eq = part.find('=');
        auto k = url_decode(part.substr(0, eq));
        auto v = url_decode(eq == std::string_view::npos ? std::string_view{} : part.substr(eq + 1));
        if (!k || !v)
          bad_query = true;
        else if (!k->empty())
          req.query[*k] = *v;
        if (amp == std::string_view::npos)
          break;
        rest.remove_prefix(amp + 1);
      }
    }
    server_->request_started();
    held_bytes_ += s->body_bytes;
    if (!s->keep_alive)
      read_done_ = true;  // Connection: close (or HTTP/1.0) ends the pipeline after its answer
    slots_.push_back(s);
    if (!path || bad_query) {
      answered(s, http_response::error(400, "bad_request", "malformed percent-encoding in the request target"));
    } else {
      req.path = std::move(*path);
      s->mode = server_->routes->mode_of(req.method, req.path);
      s->request = std::move(req);
    }
    maybe_read();
    pump();
  }

  /// Starts the requests that may start, in request order: a `together`
  /// one while only `together` ones run and none of them holds the
  /// pipeline, an `alone` one once every earlier answer is written (so a
  /// connection holds at most one unwritten answer of an `alone` route,
  /// such as a fetch of up to max_body_bytes).
  void pump() {
    for (size_t i = 0; i < slots_.size() && !shut_; ++i) {
      auto s = slots_[i];  // dispatching leaves slots_ alone: answers are posted
      if (s->running) {
        if (s->held)
          return;
        continue;
      }
      if (!s->request)
        continue;  // answered
      if (s->mode == pipelining::alone && i != 0)
        return;
      run(s);
      if (s->held)
        return;
    }
  }

  /// Dispatches the request of `s` to its route.
  void run(const std::shared_ptr<slot>& s) {
    auto req = std::move(*s->request);
    s->request.reset();
    s->running = true;
    s->held = s->mode == pipelining::alone;
    auto self = this->shared_from_this();
    auto once = std::make_shared<std::atomic<bool>>(false);
    responder respond = [self, s, once](http_response res) {
      if (once->exchange(true))
        return;  // a handler answered twice: the first answer stands
      net::post(self->stream_.get_executor(),
                [self, s, r = std::move(res)]() mutable { self->answered(s, std::move(r)); });
    };
    try {
      server_->routes->dispatch(req, respond);
    } catch (const std::exception& e) {
      logger()->error("http.handler_failed listener={} path={} error={}", server_->opts.name, req.path, e.what());
      respond(http_response::error(500, "internal_error", "the request could not be handled"));
    }
    s->held = s->held || req.hold_pipeline;
  }

  /// The answer of `s` is in: written once every earlier answer is.
  void answered(const std::shared_ptr<slot>& s, http_response res) {
    s->running = false;
    s->request.reset();
    if (s->counted) {
      auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - s->started).count();
      auto& reg = metrics::registry::global();
      reg.get_counter("moonmq_http_requests_total", "HTTP requests answered, by listener and status code",
                      {{"code", std::to_string(res.status)}, {"listener", server_->opts.name}})
        .inc();
      reg.get_histogram("moonmq_http_request_duration_seconds", "Time from a complete request to its answer",
                        metrics::latency_buckets(), {{"listener", server_->opts.name}})
        .observe(secs);
    }
    if (shut_) {
      release(*s);
      return;
    }
    s->answer = std::move(res);
    write_next();
    pump();
  }

  /// An answer of the server's own (a malformed or too large request, a
  /// refused connection): after every answer due before it, then the
  /// connection closes. Reads no more.
  void answer_now(http_response res, unsigned version) {
    reading_ = false;
    read_done_ = true;
    auto s = std::make_shared<slot>();
    s->version = version;
    s->keep_alive = false;
    s->answer = std::move(res);
    slots_.push_back(std::move(s));
    write_next();
  }

  /// Writes the first answer when it is in and no write is under way.
  void write_next() {
    if (writing_ || shut_ || slots_.empty() || !slots_.front()->answer)
      return;
    auto s = slots_.front();
    auto& res = *s->answer;
    auto msg = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(res.status), s->version);
    msg->set(http::field::server, "moonmq");
    msg->set(http::field::content_type, res.content_type);
    for (auto& [k, v] : res.headers)
      msg->set(k, v);
    msg->body() = std::move(res.body);
    // A stopping server closes after the last answer it owes.
    bool keep = s->keep_alive && !(server_->stopping && slots_.size() == 1);
    if (!keep)
      read_done_ = true;  // a request still being read is not run: its answer could not be written
    msg->keep_alive(keep);
    msg->prepare_payload();
    s->answer.reset();
    writing_ = true;
    tcp_layer().expires_after(server_->opts.body_timeout);
    http::async_write(stream_, *msg, [self = this->shared_from_this(), msg, keep](beast::error_code ec, size_t) {
      self->on_written(ec, keep);
    });
  }

  void on_written(beast::error_code ec, bool keep) {
    writing_ = false;
    if (shut_)
      return;
    auto s = slots_.front();
    slots_.pop_front();
    held_bytes_ -= s->body_bytes;
    release(*s);
    if (ec) {
      shut();
      return;
    }
    if (!keep || (read_done_ && slots_.empty() && !reading_)) {
      linger();
      return;
    }
    maybe_read();
    if (slots_.empty() && awaiting_header_)
      arm_idle_timer();
    write_next();
    pump();  // an `alone` request waits until every earlier answer is written
  }

  /// Gives back the in_flight count of a request that is answered (or will
  /// never be: its connection closed).
  void release(slot& s) {
    if (s.counted && !s.released) {
      s.released = true;
      server_->request_finished();
    }
  }

  /// Closes the connection now. Requests not started are dropped; running
  /// ones keep their in_flight count until their handler answers.
  void shut() {
    drop_requests();
    close_socket();
  }

  /// Closes the connection after its last answer is written. Closing a
  /// socket with unread bytes (requests pipelined after the last one, the
  /// rest of a body answered 413) sends a reset, and a reset can make the
  /// client's system drop answers the client has not read yet. So the
  /// sending side ends first (the client sees the answers end), then what
  /// the client still sends is read and thrown away until it closes too,
  /// for at most linger_time and linger_bytes, and then the socket closes.
  void linger() {
    if (shut_)
      return;
    drop_requests();
    lingering_ = true;
    beast::error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
    linger_timer_.expires_after(linger_time);
    linger_timer_.async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (!ec)
        self->close_socket();
    });
    if (!reading_)
      discard();
  }

  /// A request read was under way when the connection shut: while
  /// lingering, reading goes on (discarding), else nothing more happens.
  void read_after_last_answer(beast::error_code ec) {
    reading_ = false;
    if (!lingering_ || closed_)
      return;
    if (ec)
      close_socket();
    else
      discard();
  }

  void discard() {
    reading_ = true;
    buffer_.clear();
    tcp_layer().socket().async_read_some(
      buffer_.prepare(read_chunk_bytes), [self = this->shared_from_this()](beast::error_code ec, size_t n) {
        self->reading_ = false;
        if (self->closed_)
          return;
        self->discarded_ += n;
        if (ec || self->discarded_ >= linger_bytes)
          self->close_socket();
        else
          self->discard();
      });
  }

  /// Requests not started are dropped; running ones keep their in_flight
  /// count until their handler answers. Nothing more is read or written.
  void drop_requests() {
    if (shut_)
      return;
    shut_ = true;
    idle_timer_.cancel();
    for (auto& s : slots_)
      if (!s->running)
        release(*s);
    slots_.clear();
  }

  void close_socket() {
    if (closed_)
      return;
    closed_ = true;
    linger_timer_.cancel();
    beast::error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp_layer().close();
  }

  Stream stream_;
  static constexpr std::size_t read_chunk_bytes = 64 * 1024;
  static constexpr std::chrono::seconds linger_time{1};
  static constexpr size_t linger_bytes = 1024 * 1024;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<http_server::impl> server_;
  std::string remote_;
  net::steady_timer idle_timer_{stream_.get_executor()};
  uint64_t idle_armed_ = 0;  ///< counts arm_idle_timer calls: an earlier wait's late completion is ignored
  /// Unanswered requests and due answers, in request order.
  std::deque<std::shared_ptr<slot>> slots_;
  size_t held_bytes_ = 0;  ///< bodies of the requests in slots_
  bool reading_ = false;   ///< a request is being read
  bool awaiting_header_ = false;
  bool read_done_ = false;  ///< no more requests are read
  bool writing_ = false;
  bool shut_ = false;       ///< no more requests run and no more answers are written
  bool lingering_ = false;  ///< shut after the last answer: discarding what the client still sends
  bool closed_ = false;     ///< the socket is closed
  size_t discarded_ = 0;    ///< bytes thrown away while lingering
  net::steady_timer linger_timer_{stream_.get_executor()};
};

}  // namespace

void http_server::impl::track(const std::shared_ptr<session_base>& s) {
  std::lock_guard<std::mutex> g{mtx};
  for (auto it = sessions.begin(); it != sessions.end();)
    it = it->expired() ? sessions.erase(it) : std::next(it);
  sessions.insert(s);
}

void http_server::impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [self = shared_from_this()](beast::error_code ec, tcp::socket sock) {
    if (ec) {
      if (ec == net::error::operation_aborted || !self->acceptor.is_open())
        return;
      // Out of descriptors (EMFILE/ENFILE) or another failure that the next
      // accept would hit at once: wait before trying again instead of
      // spinning on the error.
      logger()->warn("http.accept_failed listener={} error={} retry_ms=100", self->opts.name, ec.message());
      auto wait = std::make_shared<net::steady_timer>(self->acceptor.get_executor(), std::chrono::milliseconds(100));
      wait->async_wait([self, wait](beast::error_code) {
        if (!self->stopping && self->acceptor.is_open())
          self->accept();
      });
      return;
    } else {
      int n = ++self->connections;
      auto admit = [&](auto s) {
        self->track(s);
        if (n > self->opts.max_connections || self->stopping)
          s->refuse(self->stopping);
        else
          s->start();
      };
      if (self->opts.tls)
        admit(std::make_shared<session<tls_stream>>(
          std::move(sock), self, *static_cast<net::ssl::context*>(self->opts.tls->native())));
      else
        admit(std::make_shared<session<beast::tcp_stream>>(std::move(sock), self));
    }
    if (!self->stopping)
      self->accept();
  });
}

http_server::http_server(io_pool& pool, http_server_options options, std::shared_ptr<const router> routes)
  : impl_(std::make_shared<impl>(*static_cast<net::io_context*>(pool.native()), std::move(options),
                                 std::move(routes))) {}

http_server::~http_server() {
  stop(std::chrono::milliseconds{0});
}

std::error_code http_server::start() {
  beast::error_code ec;
  tcp::resolver resolver{impl_->ioc};
  auto results = resolver.resolve(impl_->opts.host, std::to_string(impl_->opts.port), ec);
  if (ec)
    return ec;
  tcp::endpoint ep = results.begin()->endpoint();
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec)
    a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec)
    a.bind(ep, ec);
  if (!ec)
    a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    beast::error_code ignored;
    a.close(ignored);
    return ec;
  }
  impl_->bound_port = a.local_endpoint().port();
  logger()->info("http.listening listener={} address={}:{}", impl_->opts.name, impl_->opts.host,
                 impl_->bound_port);
  net::dispatch(a.get_executor(), [self = impl_] { self->accept(); });
  return {};
}

uint16_t http_server::port() const {
  return impl_->bound_port;
}

int http_server::in_flight() const {
  return impl_->in_flight.load();
}

void http_server::stop(std::chrono::milliseconds drain) {
  if (impl_->stopping.exchange(true))
    return;
  std::promise<void> closed;
  auto done = closed.get_future();
  net::post(impl_->acceptor.get_executor(), [self = impl_, &closed] {
    beast::error_code ec;
    self->acceptor.close(ec);
    closed.set_value();
  });
  done.wait_for(std::chrono::seconds(2));
  {
    std::unique_lock<std::mutex> g{impl_->mtx};
    impl_->cv.wait_for(g, drain, [this] { return impl_->in_flight.load() == 0; });
  }
  std::vector<std::shared_ptr<session_base>> open;
  {
    std::lock_guard<std::mutex> g{impl_->mtx};
    for (auto& w : impl_->sessions)
      if (auto s = w.lock())
        open.push_back(std::move(s));
    impl_->sessions.clear();
  }
  for (auto& s : open)
    s->close();
  logger()->info("http.stopped listener={} in_flight={}", impl_->opts.name, impl_->in_flight.load());
}

}  // namespace moonmq::transport

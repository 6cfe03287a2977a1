#include "api/kafka_listener.hpp"

#include <deque>
#include <optional>
#include <variant>
#include <mutex>
#include <set>

#include <boost/asio.hpp>
#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "net/http_server.hpp"
#include "api/kafka_groups.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

namespace moonmq::transport {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using std::chrono::milliseconds;

namespace {

class connection;

/// Request metrics per API (util/metrics.hpp; names in docs/kafka.md).
void observe(int16_t key, double seconds, int errors) {
  auto& reg = metrics::registry::global();
  metrics::labels l{{"api", kafka::api_name(key)}};
  reg.get_counter("moonmq_kafka_requests_total", "Kafka requests answered, by API", l).inc();
  if (errors > 0)
    reg.get_counter("moonmq_kafka_errors_total", "Kafka answers carrying an error code, by API", l).inc();
  reg.get_histogram("moonmq_kafka_request_duration_seconds", "Time from a complete Kafka request to its answer",
                    metrics::latency_buckets(), l)
    .observe(seconds);
}

}  // namespace

struct kafka_listener::impl : std::enable_shared_from_this<kafka_listener::impl> {
  net::io_context& ioc;
  kafka_listener_options opts;
  std::shared_ptr<kafka_context> ctx;
  std::shared_ptr<kafka_listener_stats> stats = std::make_shared<kafka_listener_stats>();
  tcp::acceptor acceptor;
  std::mutex mtx;
  std::set<std::shared_ptr<connection>> live;
  std::atomic<bool> stopped{false};

  impl(net::io_context& io, kafka_listener_options o, std::shared_ptr<kafka_context> c)
    : ioc(io), opts(std::move(o)), ctx(std::move(c)), acceptor(io) {}

  void accept();
  void forget(const std::shared_ptr<connection>& c) {
    std::lock_guard<std::mutex> g{mtx};
    live.erase(c);
  }
};

namespace {

/// One client connection: reads frames and writes answers in request order.
/// Produce requests are pipelined: up to `max_in_flight` of them are handled
/// at once (their appends reach each partition in request order:
/// actors/direct_append.hpp), so their fsyncs share the I/O workers' rounds.
/// Any other request waits until nothing is in flight and runs alone, as
/// Kafka handles every request of a connection (a commit is never
/// overtaken by the fetch of its offsets).
class connection : public std::enable_shared_from_this<connection> {
public:
  connection(tcp::socket s, std::shared_ptr<kafka_listener::impl> owner)
    : socket_(std::move(s)), strand_(net::make_strand(owner->ioc)), owner_(std::move(owner)),
      decoder_(owner_->opts.max_request_bytes) {
    boost::system::error_code ec;
    auto peer = socket_.remote_endpoint(ec);
    if (!ec) {
      auto address = peer.address();
      if (address.is_v6() && address.to_v6().is_v4_mapped())
        address = address.to_v6().to_v4();  // "/1.2.3.4", as Kafka shows an IPv4 client
      client_host_ = "/" + address.to_string();
    }
  }

  void start() {
    net::dispatch(strand_, [self = shared_from_this()] { self->read(); });
  }
  void close() {
    net::dispatch(strand_, [self = shared_from_this()] { self->shutdown("listener_stopped"); });
  }

private:
  void read() {
    if (closed_)
      return;
    // Straight into the decoder's buffer: a frame's bytes are copied once,
    // from the socket, before the request is decoded from them in place.
    auto room = decoder_.prepare(read_bytes);
    socket_.async_read_some(net::buffer(room.first, room.second),
                            net::bind_executor(strand_, [self = shared_from_this()](boost::system::error_code ec,
                                                                                    size_t n) {
                              if (ec) {
                                self->shutdown("");
                                return;
                              }
                              self->decoder_.commit(n);
                              self->reading_ = false;
                              self->pump();
                            }));
    reading_ = true;
  }

  /// An answer slot, in request order.
  struct slot {
    bool done = false;
    std::optional<std::string> frame;  ///< none: no answer (acks=0)
    bool failed = false;               ///< the answer could not be encoded: close
    size_t bytes = 0;                  ///< the request's frame size
  };

  /// Produce requests handled at once on one connection (librdkafka keeps
  /// up to 5 in flight when idempotent, a million otherwise).
  static constexpr size_t max_in_flight = 64;
  /// Room offered to each read at least (more when a frame needs it).
  static constexpr size_t read_bytes = 64 * 1024;

  /// Starts every buffered request it may (see the class comment), else
  /// reads more. Requests in flight hold at most about one request limit of
  /// bytes (Kafka's queued.max.request.bytes plays the same part); one
  /// request always goes.
  void pump() {
    while (!closed_ && !exclusive_ && in_flight_.size() < max_in_flight
           && (in_flight_.empty() || in_flight_bytes_ < owner_->opts.max_request_bytes)) {
      if (!held_) {
        // The view is valid until the next read: decode_request copies what
        // the request keeps.
        auto f = decoder_.next_view();
        if (!f) {
          malformed(f.err());
          return;
        }
        if (!*f) {
          if (!reading_ && writes_.size() < 64)
            read();
          return;
        }
        auto req = kafka::decode_request(**f);
        if (!req) {
          if (auto frame = kafka::error_response_frame(req.err())) {
            observe(static_cast<int16_t>(kafka::api_key::api_versions), 0, 1);
            ++owner_->stats->requests_total;
            ++owner_->stats->errors_total;
            auto s = std::make_shared<slot>();
            s->done = true;
            s->frame = std::move(*frame);
            in_flight_.push_back(std::move(s));
            flush_answers();
            continue;
          }
          malformed(req.err());
          return;
        }
        held_ = std::move(*req);
        held_bytes_ = (**f).size();
      }
      const bool produce = std::holds_alternative<kafka::produce_request>(held_->body);
      if (!produce && !in_flight_.empty())
        return;  // runs alone, once the answers before it are out
      exclusive_ = !produce;
      auto req = std::move(*held_);
      held_.reset();
      start(std::move(req), held_bytes_);
    }
  }

  void start(kafka::request req, size_t bytes) {
    ++owner_->stats->requests_total;
    auto key = req.header.api_key;
    auto version = req.header.api_version;
    auto corr = req.header.correlation_id;
    auto t0 = std::chrono::steady_clock::now();
    auto s = std::make_shared<slot>();
    s->bytes = bytes;
    in_flight_bytes_ += bytes;
    in_flight_.push_back(s);
    std::weak_ptr<connection> weak = shared_from_this();
    if (key == static_cast<int16_t>(kafka::api_key::join_group))
      req.client_host = client_host_;  // only a member's join keeps it
    handle_kafka_request(owner_->ctx, req,
                         [weak, s, key, version, corr, t0](std::optional<kafka::response_body> body, int errors) {
                           auto self = weak.lock();
                           if (!self)
                             return;
                           auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                           observe(key, secs, errors);
                           if (errors > 0)
                             ++self->owner_->stats->errors_total;
                           // Encoded on the connection's strand: `done` may run on an
                           // I/O worker's thread (produce), which has its next
                           // sync round to run.
                           net::post(self->strand_, [self, s, key, version, corr, body = std::move(body)]() mutable {
                             if (body) {
                               auto encoded = kafka::encode_response(corr, version, *body);
                               if (encoded) {
                                 s->frame = std::move(encoded.value());
                               } else {
                                 s->failed = true;
                                 log::get("transport")->error("kafka.encode_failed api={} version={} error=\"{}\"",
                                                              kafka::api_name(key), version, encoded.err().message);
                               }
                             }
                             s->done = true;
                             self->flush_answers();
                             self->pump();
                           });
                         });
  }

  /// Sends the answers that are ready, in request order.
  void flush_answers() {
    while (!in_flight_.empty() && in_flight_.front()->done) {
      auto s = std::move(in_flight_.front());
      in_flight_.pop_front();
      in_flight_bytes_ -= s->bytes;
      if (s->failed) {
        shutdown("encode_failed");
        return;
      }
      if (s->frame)
        send(std::move(*s->frame));
    }
    if (in_flight_.empty())
      exclusive_ = false;
  }

  void malformed(const kafka::error& e) {
    ++owner_->stats->closed_malformed;
    log::get("transport")->info("kafka.connection_closed reason=malformed api_key={} api_version={} error=\"{}\"",
                                e.api_key, e.api_version, e.message);
    shutdown("malformed");
  }

  void send(std::string frame) {
    writes_.push_back(std::move(frame));
    if (writes_.size() == 1)
      write();
  }

  void write() {
    if (closed_ || writes_.empty())
      return;
    net::async_write(socket_, net::buffer(writes_.front()),
                     net::bind_executor(strand_, [self = shared_from_this()](boost::system::error_code ec, size_t) {
                       if (ec) {
                         self->shutdown("");
                         return;
                       }
                       self->writes_.pop_front();
                       self->write();
                       if (!self->reading_)
                         self->pump();
                     }));
  }

  void shutdown(const char*) {
    if (closed_)
      return;
    closed_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    --owner_->stats->connections;
    owner_->forget(shared_from_this());
  }

  tcp::socket socket_;
  std::string client_host_;  ///< "/<address>" of the client (DescribeGroups)
  net::strand<net::io_context::executor_type> strand_;
  std::shared_ptr<kafka_listener::impl> owner_;
  kafka::frame_decoder decoder_;  ///< a read in progress writes into its buffer (prepare)
  std::deque<std::string> writes_;
  bool reading_ = false;
  bool closed_ = false;
  std::deque<std::shared_ptr<slot>> in_flight_;  ///< started requests, oldest first
  std::optional<kafka::request> held_;           ///< decoded, waiting for the ones in flight
  bool exclusive_ = false;                       ///< a request that runs alone is in flight
  size_t held_bytes_ = 0;                        ///< frame size of held_
  size_t in_flight_bytes_ = 0;                   ///< frame sizes of the requests in flight
};

}  // namespace

void kafka_listener::impl::accept() {
  acceptor.async_accept([self = shared_from_this()](boost::system::error_code ec, tcp::socket socket) {
    if (self->stopped)
      return;
    if (!ec) {
      std::shared_ptr<connection> c;
      {
        std::lock_guard<std::mutex> g{self->mtx};
        if (static_cast<int>(self->live.size()) < self->opts.max_connections) {
          boost::system::error_code ignored;
          socket.set_option(tcp::no_delay(true), ignored);
          c = std::make_shared<connection>(std::move(socket), self);
          self->live.insert(c);
        }
      }
      if (c) {
        ++self->stats->connections;
        ++self->stats->connections_total;
        c->start();
      }
    }
    self->accept();
  });
}

kafka_listener::kafka_listener(io_pool& pool, kafka_listener_options options, std::shared_ptr<kafka_context> ctx)
  : impl_(std::make_shared<impl>(*static_cast<net::io_context*>(pool.native()), std::move(options), std::move(ctx))) {
  auto* ioc = &impl_->ioc;
  impl_->ctx->schedule = [ioc](milliseconds delay, std::function<void()> fn) {
    auto timer = std::make_shared<net::steady_timer>(*ioc, delay);
    timer->async_wait([timer, fn = std::move(fn)](boost::system::error_code ec) {
      if (!ec)
        fn();
    });
  };
  if (!impl_->ctx->producers)
    impl_->ctx->producers =
      std::make_shared<kafka_producer_ids>(kafka_node_id(*impl_->ctx, impl_->ctx->broker_id));
}

kafka_listener::~kafka_listener() {
  stop();
}

std::error_code kafka_listener::start() {
  boost::system::error_code ec;
  auto addr = net::ip::make_address(impl_->opts.host, ec);
  if (ec) {
    tcp::resolver resolver{impl_->ioc};
    auto results = resolver.resolve(impl_->opts.host, std::to_string(impl_->opts.port), ec);
    if (ec || results.empty())
      return ec ? std::error_code(ec.value(), std::system_category()) : std::make_error_code(std::errc::invalid_argument);
    addr = results.begin()->endpoint().address();
  }
  tcp::endpoint ep{addr, impl_->opts.port};
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec)
    a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec)
    a.bind(ep, ec);
  if (!ec)
    a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    boost::system::error_code ignored;
    a.close(ignored);
    return std::error_code(ec.value(), std::system_category());
  }
  impl_->ctx->port = a.local_endpoint().port();
  impl_->accept();
  return {};
}

uint16_t kafka_listener::port() const {
  return impl_->ctx->port.load();
}

void kafka_listener::stop() {
  if (impl_->stopped.exchange(true))
    return;
  net::post(impl_->acceptor.get_executor(), [self = impl_] {
    boost::system::error_code ignored;
    self->acceptor.close(ignored);
  });
  std::set<std::shared_ptr<connection>> live;
  {
    std::lock_guard<std::mutex> g{impl_->mtx};
    live = impl_->live;
  }
  for (const auto& c : live)
    c->close();
}

void kafka_listener::release_actors() {
  auto& c = *impl_->ctx;
  c.broker = broker_actor{};
  c.groups = group_actor{};
  c.catalog.reset();
  c.txns.reset();
}

std::shared_ptr<kafka_listener_stats> kafka_listener::stats() const {
  return impl_->stats;
}

std::shared_ptr<kafka_context> kafka_listener::context() const {
  return impl_->ctx;
}

// --- stats actor (/admin/actors) ------------------------------------------------------

namespace {

caf::behavior kafka_probe(caf::event_based_actor* self, std::string address,
                          std::shared_ptr<kafka_listener_stats> stats, std::shared_ptr<kafka_context> ctx) {
  (void)self;
  return {[address, stats, ctx](status_atom) -> std::string {
    nlohmann::json j{{"listener", "kafka"},
                     {"address", address},
                     {"connections", stats->connections.load()},
                     {"connections_total", stats->connections_total.load()},
                     {"requests_total", stats->requests_total.load()},
                     {"errors_total", stats->errors_total.load()},
                     {"closed_malformed", stats->closed_malformed.load()}};
    return j.dump();
  }};
}

}  // namespace

caf::actor spawn_kafka_listener_probe(caf::actor_system& sys, std::string address, const kafka_listener& listener,
                                      registry_actor reg) {
  auto a = sys.spawn(kafka_probe, std::move(address), listener.stats(), listener.context());
  enroll(reg, a, "kafka-listener", "kafka_listener");
  return a;
}

}  // namespace moonmq::transport

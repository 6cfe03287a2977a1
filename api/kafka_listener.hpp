#pragma once
// The Kafka wire-protocol listener (issue 9, DESIGN §8, docs/kafka.md): a TCP
// acceptor on the shared io_pool whose connections speak the subset of
// ../shared/docs/KAFKA.md through the pure codec (kafka/), and map each
// request onto the same broker, partition and group actors as the HTTP
// client API (api/kafka_handlers.hpp).
//
// Per connection: one frame_decoder (size limit), requests handled one at a
// time in arrival order (Kafka mutes a channel until its answer is sent, so
// pipelined requests are answered strictly in request order and a producer's
// batches reach a partition in order); a malformed frame, an unknown API key
// or an unsupported version closes the connection (an unsupported ApiVersions
// version gets error 35 first). No Asio or CAF templates here.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include <caf/fwd.hpp>

#include "actors/registry.hpp"
#include "api/kafka_handlers.hpp"

namespace moonmq::transport {

class io_pool;

struct kafka_listener_options {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  ///< 0 = ephemeral (see kafka_listener::port)
  /// Largest request after the size prefix (Kafka socket.request.max.bytes).
  size_t max_request_bytes = 100 * 1024 * 1024;
  int max_connections = 1024;
};

/// Counters shown by the listener's stats actor in /admin/actors.
struct kafka_listener_stats {
  std::atomic<int64_t> connections{0};        ///< open now
  std::atomic<int64_t> connections_total{0};  ///< accepted since start
  std::atomic<int64_t> requests_total{0};
  std::atomic<int64_t> errors_total{0};  ///< answers carrying an error code
  std::atomic<int64_t> closed_malformed{0};  ///< connections closed on a bad frame/request
};

class kafka_listener {
public:
  /// `ctx.port` is set to the bound port by start().
  kafka_listener(io_pool& pool, kafka_listener_options options, std::shared_ptr<kafka_context> ctx);
  ~kafka_listener();
  kafka_listener(const kafka_listener&) = delete;
  kafka_listener& operator=(const kafka_listener&) = delete;

  /// Binds and starts accepting. Errors: the bind/listen failure.
  std::error_code start();
  /// The bound port (after start).
  uint16_t port() const;
  /// Stops accepting and closes every connection (parked long polls are
  /// answered into closed sockets and dropped). Idempotent.
  void stop();
  /// Drops the context's actor handles (broker, group coordinator, the
  /// catalogue with its partitions). Call after the I/O threads are joined
  /// and every actor is done: a long poll or group wait abandoned at
  /// shutdown keeps the context alive, and a detached actor still
  /// referenced from it would make ~actor_system wait forever.
  void release_actors();
  std::shared_ptr<kafka_listener_stats> stats() const;
  std::shared_ptr<kafka_context> context() const;

  struct impl;

private:
  std::shared_ptr<impl> impl_;
};

/// Spawns a small actor that answers status with the listener's address,
/// counters and Kafka groups, enrolled in the registry as
/// ("kafka-listener", "kafka_listener"). The caller exits it at shutdown.
caf::actor spawn_kafka_listener_probe(caf::actor_system& sys, std::string address, const kafka_listener& listener,
                                      registry_actor reg);

}  // namespace moonmq::transport

#pragma once
// Maps (method, path) to handlers. Patterns are literal segments plus
// `{name}` placeholders that match one non-empty segment:
//   "/admin/actors/{id}" matches "/admin/actors/42" with params["id"] = "42".
// Unknown path → 404 {"error":"not_found"}; known path, other method → 405
// {"error":"method_not_allowed"} with an Allow header.

#include <optional>
#include <string>
#include <vector>

#include "net/http_types.hpp"

namespace moonmq::transport {

/// How a route's requests share their connection with the requests
/// pipelined behind them (HTTP/1.1 pipelining, net/http_server.hpp).
enum class pipelining {
  /// Starts once every earlier request of its connection is answered, and
  /// the next request waits for its answer (the default: a commit is never
  /// overtaken by a read of its offsets).
  alone,
  /// Starts while earlier `together` requests of its connection are still
  /// unanswered, and lets the next one start as soon as its handler returns,
  /// unless the handler set http_request::hold_pipeline. For handlers that
  /// issue all their order-sensitive work before returning, as produce does:
  /// its appends reach each partition in the order of the requests
  /// (actors/direct_append.hpp).
  together,
};

class router {
public:
  /// Runs before routing; a returned response is sent instead of routing
  /// (authentication). Must be thread-safe.
  using guard = std::function<std::optional<http_response>(const http_request&)>;

  void add(std::string method, const std::string& pattern, handler h, pipelining mode = pipelining::alone);
  void set_guard(guard g) { guard_ = std::move(g); }

  /// Routes `req` and calls exactly one handler, or answers 404/405 itself.
  void dispatch(http_request& req, const responder& respond) const;

  /// The pipelining mode of the route `method` `path` (a decoded path)
  /// would be dispatched to; `alone` when no route matches.
  pipelining mode_of(const std::string& method, const std::string& path) const;

private:
  struct route {
    std::string method;
    std::vector<std::string> segments;
    handler fn;
    pipelining mode = pipelining::alone;
  };
  static bool match(const route& r, const std::vector<std::string>& segs,
                    std::map<std::string, std::string>& params);

  std::vector<route> routes_;
  guard guard_;
};

/// Splits a path into its non-empty segments.
std::vector<std::string> split_path(const std::string& path);

}  // namespace moonmq::transport

#pragma once
// Raw bytes over a loopback socket, for tests of malformed or partial HTTP.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace moonmq::test {

/// Writes `bytes` as they are to 127.0.0.1:`port` and reads until the peer
/// closes or `timeout` passes; returns what was read. Sets `closed` when the
/// peer closed.
std::string raw_exchange(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                         bool* closed = nullptr);

/// As raw_exchange, but also returns as soon as `enough(read so far)` is
/// true (one whole answer read, say).
std::string raw_exchange_until(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                               const std::function<bool(const std::string&)>& enough, bool* closed = nullptr);

/// The status code of the first HTTP response in `raw` (0 if none).
int status_of(const std::string& raw);

/// One HTTP answer cut out of a byte stream.
struct raw_answer {
  int status = 0;
  std::string body;
  bool close = false;  ///< it said Connection: close
};

/// The complete answers at the start of `raw`, in order; each needs a
/// Content-Length (as every moonmq answer has). Stops at the first that is
/// incomplete.
std::vector<raw_answer> answers_of(const std::string& raw);

/// Writes `bytes` at once to 127.0.0.1:`port` and reads until `n` answers
/// are in, the peer closes or `timeout` passes; returns the answers read.
std::vector<raw_answer> pipelined_exchange(uint16_t port, const std::string& bytes, size_t n,
                                           std::chrono::milliseconds timeout, bool* closed = nullptr);

}  // namespace moonmq::test

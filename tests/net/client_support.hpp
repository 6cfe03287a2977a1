#pragma once
// Helpers for tests of net/http_client: collecting callbacks on the
// test thread, and a raw TCP peer that misbehaves on purpose.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.hpp"

namespace moonmq::test {

/// Gathers http_client results (callbacks run on Asio threads; Catch2
/// assertions stay on the test thread).
class result_collector {
public:
  transport::peer_callback callback() {
    return [this](transport::peer_result r) {
      std::lock_guard<std::mutex> g{mtx_};
      results_.push_back(std::move(r));
      cv_.notify_all();
    };
  }
  /// Waits until `n` results arrived; false on timeout.
  bool wait_for(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> g{mtx_};
    return cv_.wait_for(g, timeout, [&] { return results_.size() >= n; });
  }
  std::vector<transport::peer_result> results() {
    std::lock_guard<std::mutex> g{mtx_};
    return results_;
  }
  std::size_t count() {
    std::lock_guard<std::mutex> g{mtx_};
    return results_.size();
  }

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  std::vector<transport::peer_result> results_;
};

/// One request, waited for on the calling thread (up to 10 s).
inline transport::peer_result call(transport::http_client& client, transport::peer_request req) {
  result_collector c;
  client.request(std::move(req), c.callback());
  if (!c.wait_for(1, std::chrono::seconds(10)))
    return {};
  return c.results().front();
}

/// A TCP listener on 127.0.0.1 that reads each request header and then does
/// what `behave(connection_index)` returns: send the returned bytes (may be
/// empty) and close the connection. Plain sockets, one thread.
class scripted_peer {
public:
  explicit scripted_peer(std::function<std::string(int)> behave);
  ~scripted_peer();
  uint16_t port() const { return port_; }
  /// Connections accepted so far.
  int connections() const { return connections_.load(); }

private:
  void serve();
  std::function<std::string(int)> behave_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

}  // namespace moonmq::test

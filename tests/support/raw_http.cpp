#include "tests/support/raw_http.hpp"

#include <functional>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>

namespace moonmq::test {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

std::string raw_exchange(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                         bool* closed) {
  return raw_exchange_until(port, bytes, timeout, nullptr, closed);
}

std::string raw_exchange_until(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                               const std::function<bool(const std::string&)>& enough, bool* closed) {
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
      if (enough && enough(got))
        return;
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

std::vector<raw_answer> answers_of(const std::string& raw) {
  std::vector<raw_answer> out;
  size_t pos = 0;
  while (pos < raw.size()) {
    auto end = raw.find("\r\n\r\n", pos);
    if (end == std::string::npos || raw.compare(pos, 7, "HTTP/1.") != 0)
      break;
    auto head = raw.substr(pos, end - pos);
    for (auto& c : head)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto at = head.find("content-length: ");
    if (at == std::string::npos)
      break;
    auto length = static_cast<size_t>(std::stoul(head.substr(at + 16)));
    if (end + 4 + length > raw.size())
      break;
    out.push_back({std::atoi(head.substr(9, 3).c_str()), raw.substr(end + 4, length),
                   head.find("connection: close") != std::string::npos});
    pos = end + 4 + length;
  }
  return out;
}

std::vector<raw_answer> pipelined_exchange(uint16_t port, const std::string& bytes, size_t n,
                                           std::chrono::milliseconds timeout, bool* closed) {
  return answers_of(raw_exchange_until(
    port, bytes, timeout, [n](const std::string& got) { return answers_of(got).size() >= n; }, closed));
}

}  // namespace moonmq::test

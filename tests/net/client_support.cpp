#include "tests/net/client_support.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <stdexcept>

namespace moonmq::test {

scripted_peer::scripted_peer(std::function<std::string(int)> behave) : behave_(std::move(behave)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || ::listen(listen_fd_, 16) != 0)
    throw std::runtime_error("scripted_peer: cannot listen on 127.0.0.1");
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { serve(); });
}

scripted_peer::~scripted_peer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

void scripted_peer::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0)
      continue;
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0)
      continue;
    int index = connections_++;
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    // Read the whole request (header and Content-Length body) so that closing
    // sends FIN, not RST, and what was written reaches the client.
    std::string in;
    char buf[4096];
    size_t want = std::string::npos;
    while (true) {
      auto end = in.find("\r\n\r\n");
      if (end != std::string::npos && want == std::string::npos) {
        size_t body = 0;
        std::string lower = in.substr(0, end);
        for (auto& c : lower)
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        auto cl = lower.find("content-length:");
        if (cl != std::string::npos)
          body = std::stoul(lower.substr(cl + 15));
        want = end + 4 + body;
      }
      if (want != std::string::npos && in.size() >= want)
        break;
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        break;
      in.append(buf, static_cast<size_t>(n));
    }
    std::string out = behave_(index);
    if (!out.empty())
      ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
  }
}

}  // namespace moonmq::test

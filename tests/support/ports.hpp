#pragma once
// Loopback ports for processes that must know each other's ports before any
// of them starts (cluster peers). Header-only so benchmarks can use it too.
//
// Two hazards make "bind port 0, read it, close" unsafe under a parallel test
// run: the kernel hands the same ephemeral ports to outgoing connections
// (net.ipv4.ip_local_port_range, 32768-60999 on Debian), so a broker's own
// peer connection can take the port it is about to listen on; and two test
// processes can pick the same port between the check and the bind. Ports here
// come from below the ephemeral range, and each is claimed with flock(2) on
// /tmp/moonmq-ports/<port> for the life of the claiming process (the kernel
// drops the lock when it exits, so a crashed run leaves nothing claimed).
// scripts/demo.sh claims its ports in the same directory.

#include <cstdint>
#include <fcntl.h>
#include <random>
#include <stdexcept>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace moonmq::test {

/// A loopback TCP port in [20000, 32767] that no other process using this
/// function (or demo.sh) holds and that accepted a bind just now. The claim
/// lasts until this process exits. Throws std::runtime_error after 2,000
/// unlucky tries.
inline uint16_t reserve_port() {
  static std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick{20000, 32767};
  ::mkdir("/tmp/moonmq-ports", 01777);
  for (int tries = 0; tries < 2000; ++tries) {
    auto port = static_cast<uint16_t>(pick(rng));
    auto file = "/tmp/moonmq-ports/" + std::to_string(port);
    int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
      continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      continue;
    }
    boost::system::error_code ec;
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor a{ioc};
    a.open(boost::asio::ip::tcp::v4(), ec);
    if (!ec)
      a.set_option(boost::asio::socket_base::reuse_address(true), ec);
    if (!ec)
      a.bind({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
    if (!ec)
      return port;  // fd stays open: the claim lasts until exit
    ::close(fd);
  }
  throw std::runtime_error("no free loopback port in 20000-32767");
}

}  // namespace moonmq::test

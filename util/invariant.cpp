#include "util/invariant.hpp"

#include <cstdlib>
#include <mutex>

#include "util/logging.hpp"

namespace moonmq::util {
namespace {

std::mutex handler_mtx;
invariant_handler handler;

}  // namespace

invariant_handler set_invariant_handler(invariant_handler h) {
  std::lock_guard<std::mutex> g{handler_mtx};
  auto old = std::move(handler);
  handler = std::move(h);
  return old;
}

void invariant_broken(const char* what, const char* file, int line, const std::string& detail) {
  const std::string at = std::string(file) + ":" + std::to_string(line);
  auto logger = log::get("invariant");
  logger->critical("invariant.broken what=\"{}\" at={} detail=\"{}\"", what, at, detail);
  logger->flush();
  invariant_handler h;
  {
    std::lock_guard<std::mutex> g{handler_mtx};
    h = handler;
  }
  if (h)
    h(what, at, detail);
  std::abort();  // a handler that returns still stops the process
}

}  // namespace moonmq::util

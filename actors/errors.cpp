#include "actors/errors.hpp"

#include <caf/atom.hpp>
#include <caf/make_message.hpp>
#include <caf/sec.hpp>

namespace moonmq {

std::string to_string(errc x) {
  switch (x) {
    case errc::unknown_actor:
      return "unknown_actor";
    case errc::not_ready:
      return "not_ready";
  }
  return "unknown";
}

caf::error make_error(errc x, std::string message) {
  return caf::error{static_cast<uint8_t>(x), caf::atom("moonmq"), caf::make_message(std::move(message))};
}

int http_status_of(const caf::error& e) {
  if (e.category() == caf::atom("system")) {
    auto code = static_cast<caf::sec>(e.code());
    if (code == caf::sec::request_timeout)
      return 504;
    if (code == caf::sec::request_receiver_down)
      return 503;
    return 500;
  }
  if (e.category() == caf::atom("moonmq")) {
    switch (static_cast<errc>(e.code())) {
      case errc::unknown_actor:
        return 404;
      case errc::not_ready:
        return 503;
    }
  }
  return 500;
}

std::string error_code_of(const caf::error& e) {
  if (e.category() == caf::atom("moonmq"))
    return to_string(static_cast<errc>(e.code()));
  if (e.category() == caf::atom("system"))
    return caf::to_string(static_cast<caf::sec>(e.code()));
  return "internal_error";
}

}  // namespace moonmq

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
    case errc::invalid_request:
      return "invalid_request";
    case errc::unknown_topic:
      return "unknown_topic";
    case errc::unknown_partition:
      return "unknown_partition";
    case errc::offset_out_of_range:
      return "offset_out_of_range";
    case errc::storage_error:
      return "storage_error";
    case errc::partition_offline:
      return "partition_offline";
    case errc::partition_moved:
      return "partition_moved";
    case errc::coded:
    case errc::relayed:
      return "error";
    case errc::invalid_producer_epoch:
      return "invalid_producer_epoch";
    case errc::offset_mismatch:
      return "offset_mismatch";
  }
  return "unknown";
}

caf::error make_error(errc x, std::string message) {
  return caf::error{static_cast<uint8_t>(x), caf::atom("moonmq"), caf::make_message(std::move(message))};
}

caf::error make_out_of_range(int64_t offset, int64_t log_start, int64_t log_end) {
  return caf::error{static_cast<uint8_t>(errc::offset_out_of_range), caf::atom("moonmq"),
                    caf::make_message("offset " + std::to_string(offset) + " is outside the log ["
                                        + std::to_string(log_start) + ", " + std::to_string(log_end) + "]",
                                      log_start, log_end)};
}

bool out_of_range_bounds(const caf::error& e, int64_t& log_start, int64_t& log_end) {
  if (e.category() != caf::atom("moonmq") || static_cast<errc>(e.code()) != errc::offset_out_of_range)
    return false;
  const auto& ctx = e.context();
  if (!ctx.match_elements<std::string, int64_t, int64_t>())
    return false;
  log_start = ctx.get_as<int64_t>(1);
  log_end = ctx.get_as<int64_t>(2);
  return true;
}

caf::error make_offset_mismatch(int64_t log_end, std::string message) {
  return caf::error{static_cast<uint8_t>(errc::offset_mismatch), caf::atom("moonmq"),
                    caf::make_message(std::move(message), log_end)};
}

bool mismatch_log_end(const caf::error& e, int64_t& log_end) {
  if (e.category() != caf::atom("moonmq") || static_cast<errc>(e.code()) != errc::offset_mismatch
      || !e.context().match_elements<std::string, int64_t>())
    return false;
  log_end = e.context().get_as<int64_t>(1);
  return true;
}

std::string message_of(const caf::error& e) {
  const auto& ctx = e.context();
  if (ctx.size() >= 1 && ctx.match_element<std::string>(0))
    return ctx.get_as<std::string>(0);
  return {};
}

fault fault_of(const caf::error& e) {
  if (e.category() == caf::atom("system")) {
    auto code = static_cast<caf::sec>(e.code());
    if (code == caf::sec::request_timeout)
      return fault::timeout;
    if (code == caf::sec::request_receiver_down)
      return fault::unavailable;
    return fault::internal;
  }
  if (e.category() == caf::atom("moonmq")) {
    switch (static_cast<errc>(e.code())) {
      case errc::unknown_actor:
      case errc::unknown_topic:
      case errc::unknown_partition:
        return fault::not_found;
      case errc::not_ready:
      case errc::partition_offline:
      case errc::partition_moved:
        return fault::unavailable;
      case errc::invalid_request:
      case errc::offset_out_of_range:
        return fault::invalid;
      case errc::storage_error:
        return fault::internal;
      case errc::invalid_producer_epoch:
      case errc::offset_mismatch:
        return fault::conflict;
      case errc::relayed:
        return e.context().match_elements<std::string, int32_t, std::string>()
                 ? fault_of_status(e.context().get_as<int32_t>(1))
                 : fault::internal;
      case errc::coded: {
        if (!e.context().match_elements<std::string, int32_t, std::string>())
          return fault::internal;
        const auto kind = e.context().get_as<int32_t>(1);
        return kind >= static_cast<int32_t>(fault::invalid) && kind <= static_cast<int32_t>(fault::internal)
                 ? static_cast<fault>(kind)
                 : fault::internal;
      }
    }
  }
  return fault::internal;
}

fault fault_of_status(int status) {
  switch (status) {
    case 0:
    case 503:
      return fault::unavailable;
    case 400:
      return fault::invalid;
    case 404:
      return fault::not_found;
    case 409:
      return fault::conflict;
    case 421:
      return fault::misdirected;
    case 504:
      return fault::timeout;
    default:
      return fault::internal;
  }
}

int http_status_of(const caf::error& e) {
  if (e.category() == caf::atom("moonmq") && static_cast<errc>(e.code()) == errc::relayed
      && e.context().match_elements<std::string, int32_t, std::string>()) {
    const auto status = e.context().get_as<int32_t>(1);
    if (status >= 400 && status <= 599)
      return status;
  }
  switch (fault_of(e)) {
    case fault::invalid:
      return 400;
    case fault::not_found:
      return 404;
    case fault::conflict:
      return 409;
    case fault::misdirected:
      return 421;
    case fault::unavailable:
      return 503;
    case fault::timeout:
      return 504;
    case fault::internal:
      return 500;
  }
  return 500;
}

caf::error make_relayed_error(int status, std::string code, std::string message) {
  return caf::error{static_cast<uint8_t>(errc::relayed), caf::atom("moonmq"),
                    caf::make_message(std::move(message), static_cast<int32_t>(status), std::move(code))};
}

caf::error make_coded_error(fault kind, std::string code, std::string message) {
  return caf::error{static_cast<uint8_t>(errc::coded), caf::atom("moonmq"),
                    caf::make_message(std::move(message), static_cast<int32_t>(kind), std::move(code))};
}

std::string error_code_of(const caf::error& e) {
  if (e.category() == caf::atom("moonmq")
      && (static_cast<errc>(e.code()) == errc::coded || static_cast<errc>(e.code()) == errc::relayed)
      && e.context().match_elements<std::string, int32_t, std::string>())
    return e.context().get_as<std::string>(2);
  if (e.category() == caf::atom("moonmq"))
    return to_string(static_cast<errc>(e.code()));
  if (e.category() == caf::atom("system"))
    return caf::to_string(static_cast<caf::sec>(e.code()));
  return "internal_error";
}

}  // namespace moonmq

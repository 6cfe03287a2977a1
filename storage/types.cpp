#include "storage/types.hpp"

namespace moonmq::storage {

const char* to_string(errc code) {
  switch (code) {
    case errc::short_buffer: return "short_buffer";
    case errc::bad_length: return "bad_length";
    case errc::bad_magic: return "bad_magic";
    case errc::bad_crc: return "bad_crc";
    case errc::bad_count: return "bad_count";
    case errc::bad_record: return "bad_record";
    case errc::compressed: return "compressed";
    case errc::offset_out_of_range: return "offset_out_of_range";
    case errc::base_offset_mismatch: return "base_offset_mismatch";
    case errc::batch_too_large: return "batch_too_large";
    case errc::corrupt_segment: return "corrupt_segment";
    case errc::io_error: return "io_error";
    case errc::invalid_argument: return "invalid_argument";
    case errc::duplicate_sequence: return "duplicate_sequence";
    case errc::out_of_order_sequence: return "out_of_order_sequence";
    case errc::invalid_producer_epoch: return "invalid_producer_epoch";
    case errc::corrupt_log: return "corrupt_log";
    case errc::epoch_over: return "epoch_over";
  }
  return "unknown";
}

}  // namespace moonmq::storage

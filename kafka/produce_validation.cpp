#include "kafka/produce_validation.hpp"

#include "storage/record_batch.hpp"

namespace moonmq::kafka {
namespace {

error batch_error(int16_t kafka_code, size_t position, std::string what,
                  std::optional<storage::errc> cause = std::nullopt) {
  auto e = make_error(errc::invalid_batch,
                      "batch at byte " + std::to_string(position) + ": " + std::move(what),
                      kafka_code);
  e.batch_cause = cause;
  return e;
}

}  // namespace

result<std::vector<produce_batch_info>> validate_produce_records(
    std::optional<std::string_view> records, const produce_validation_options& options) {
  if (!records || records->empty())
    return batch_error(error_code::invalid_record, 0, "no record batch");
  std::vector<produce_batch_info> out;
  size_t pos = 0;
  while (pos < records->size()) {
    const auto rest = records->substr(pos);
    if (!out.empty() && options.single_batch)
      return batch_error(error_code::invalid_record, pos,
                         "more than one batch for one partition");
    auto size = storage::peek_batch_size(rest);
    if (!size)
      return batch_error(error_code::invalid_record, pos, size.err().message, size.err().code);
    if (*size > options.max_batch_bytes)
      return batch_error(error_code::message_too_large, pos,
                         "batch of " + std::to_string(*size) + " bytes exceeds " +
                             std::to_string(options.max_batch_bytes));
    auto view = storage::batch_view::parse(rest, true);
    if (!view)
      return batch_error(error_code::invalid_record, pos, view.err().message, view.err().code);
    const int codec = view->compression_codec();
    if (codec > static_cast<int>(compression::zstd))
      return batch_error(error_code::unsupported_compression_type, pos,
                         "unknown compression codec " + std::to_string(codec));
    if (codec == static_cast<int>(compression::zstd) && options.produce_version < 7)
      return batch_error(error_code::unsupported_compression_type, pos,
                         "zstd needs Produce v7, got v" + std::to_string(options.produce_version));
    if (view->is_control())
      return batch_error(error_code::invalid_record, pos, "clients may not write control batches");
    produce_batch_info info;
    info.bytes = view->bytes();
    info.position = pos;
    info.base_offset = view->base_offset().value;
    info.record_count = view->count();
    info.producer_id = view->producer_id();
    info.producer_epoch = view->producer_epoch();
    info.base_sequence = view->base_sequence();
    info.codec = static_cast<compression>(codec);
    info.transactional = (view->attributes() & storage::attr_transactional) != 0;
    info.max_timestamp = view->max_timestamp();
    out.push_back(info);
    pos += view->size();
  }
  return out;
}

}  // namespace moonmq::kafka

#pragma once
// Test helpers for tests/kafka: hex conversion and one sample of every
// request and response body with non-default values in every field.

#include <string>
#include <string_view>
#include <vector>

#include "kafka/codec.hpp"

namespace moonmq::kafka::test {

/// Bytes from hex pairs; spaces and newlines are ignored ("00 12 ff").
std::string unhex(std::string_view hex);

/// Lower-case hex of `bytes`, a space between bytes (for failure messages).
std::string hex(std::string_view bytes);

/// One sample of each request_body alternative (every field set).
std::vector<request_body> sample_requests();

/// One sample of each response_body alternative (every field set).
std::vector<response_body> sample_responses();

/// A small valid uncompressed RecordBatch v2 (3 records, one with a header).
std::string sample_batch(int64_t producer_id = -1, int32_t base_sequence = -1);

}  // namespace moonmq::kafka::test

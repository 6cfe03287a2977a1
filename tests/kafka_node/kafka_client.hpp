#pragma once
// What the Kafka listener tests share: shell commands (kcat), raw Kafka
// request frames built with the codec, and reading a Produce answer.

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kafka/codec.hpp"

namespace moonmq::test {

/// Runs `cmd` with /bin/sh; returns (exit code, stdout).
std::pair<int, std::string> sh(const std::string& cmd);

/// Writes `code` to `dir`/`name` and runs it with /usr/bin/python3 (the
/// Debian python3-confluent-kafka, librdkafka 2.0.2), at most 60 s: (exit
/// code, stdout and stderr).
std::pair<int, std::string> python_script(const std::string& dir, const std::string& name, const std::string& code);

/// The non-empty lines of `text`.
std::vector<std::string> lines(const std::string& text);

/// A request frame (size prefix, header v1 with client id "test", body).
std::string request_frame(const kafka::request_body& body, int16_t version, int32_t correlation_id = 7);

/// Sends `frame` to the Kafka listener at 127.0.0.1:`port` and returns the
/// first whole response frame (size prefix included) as soon as it is read,
/// or what arrived within `timeout`.
std::string kafka_exchange(uint16_t port, const std::string& frame, std::chrono::milliseconds timeout);

/// A Produce v7 frame (acks=1) for `topic`/0 carrying `records` verbatim.
std::string produce_frame(const std::string& topic, std::string records);

/// One valid RecordBatch v2 with a single record of `value`; an idempotent
/// one when `producer_id` >= 0 (epoch 0, base sequence `sequence`).
std::string one_record_batch(const std::string& value = "hello", int64_t producer_id = -1, int32_t sequence = -1);

/// The error code of the first partition of the Produce v7 answer in `raw`
/// (one response frame), or -100 when `raw` holds none.
int produce_error(const std::string& raw);

/// The (error code, base offset) of the first partition of the Produce v7
/// answer in `raw`, or (-100, -1) when `raw` holds none.
std::pair<int, int64_t> produce_result(const std::string& raw);

}  // namespace moonmq::test

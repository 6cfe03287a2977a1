// Produce records validation: a table of malformed batches and the Kafka
// error each gets, plus the idempotence fields of a good batch.
#include <catch2/catch.hpp>

#include "kafka/produce_validation.hpp"
#include "samples.hpp"
#include "storage/record_batch.hpp"

using namespace moonmq::kafka;
using moonmq::kafka::test::sample_batch;
namespace storage = moonmq::storage;

namespace {
void store_be(std::string& b, size_t pos, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    b[pos + n - 1 - i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void fix_crc(std::string& b) {
  store_be(b, storage::batch_crc_offset,
           storage::crc32c(std::string_view(b).substr(storage::batch_attributes_offset)), 4);
}
std::string with_attributes(uint16_t attrs) {
  auto b = sample_batch();
  store_be(b, storage::batch_attributes_offset, attrs, 2);
  fix_crc(b);
  return b;
}
void check_refused(const std::optional<std::string>& records, int16_t kafka_code,
                   std::optional<storage::errc> cause, produce_validation_options opts = {}) {
  auto r = validate_produce_records(records ? std::optional<std::string_view>(*records)
                                            : std::nullopt,
                                    opts);
  REQUIRE_FALSE(r.ok());
  INFO(r.err().message);
  CHECK(r.err().code == errc::invalid_batch);
  CHECK(r.err().kafka_code == kafka_code);
  CHECK(r.err().batch_cause == cause);
}
}  // namespace

TEST_CASE("kafka produce validation: a good batch reports its header fields",
          "[kafka][produce_validation]") {
  const auto batch = sample_batch(4242, 17);
  auto r = validate_produce_records(std::string_view(batch));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 1);
  const auto& info = r->front();
  CHECK(info.bytes == batch);
  CHECK(info.position == 0);
  CHECK(info.base_offset == 0);
  CHECK(info.record_count == 3);
  CHECK(info.producer_id == 4242);
  CHECK(info.producer_epoch == 0);
  CHECK(info.base_sequence == 17);
  CHECK(info.codec == compression::none);
  CHECK_FALSE(info.transactional);
  CHECK(info.max_timestamp == 1700000000002);
}

TEST_CASE("kafka produce validation: several batches only when allowed",
          "[kafka][produce_validation]") {
  const auto two = sample_batch() + sample_batch(1, 3);
  check_refused(two, error_code::invalid_record, std::nullopt);
  produce_validation_options opts;
  opts.single_batch = false;
  auto r = validate_produce_records(std::string_view(two), opts);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK(r->at(1).position == sample_batch().size());
  CHECK(r->at(1).base_sequence == 3);
}

TEST_CASE("kafka produce validation: malformed batches get INVALID_RECORD with the cause",
          "[kafka][produce_validation]") {
  const auto good = sample_batch();
  SECTION("null or empty records") {
    check_refused(std::nullopt, error_code::invalid_record, std::nullopt);
    check_refused(std::string(), error_code::invalid_record, std::nullopt);
  }
  SECTION("shorter than the length fields") {
    check_refused(good.substr(0, 11), error_code::invalid_record, storage::errc::short_buffer);
  }
  SECTION("cut inside the batch") {
    check_refused(good.substr(0, good.size() - 1), error_code::invalid_record,
                  storage::errc::short_buffer);
    check_refused(good.substr(0, 40), error_code::invalid_record, storage::errc::short_buffer);
  }
  SECTION("negative or too small batchLength") {
    auto b = good;
    store_be(b, storage::batch_length_offset, 0xfffffff0u, 4);
    check_refused(b, error_code::invalid_record, storage::errc::bad_length);
    store_be(b, storage::batch_length_offset, 10, 4);
    check_refused(b, error_code::invalid_record, storage::errc::bad_length);
  }
  SECTION("batchLength shorter than the records: trailing bytes form a bad second batch") {
    auto b = good;
    store_be(b, storage::batch_length_offset, good.size() - 12 - 5, 4);
    produce_validation_options opts;
    opts.single_batch = false;
    auto r = validate_produce_records(std::string_view(b), opts);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().kafka_code == error_code::invalid_record);
  }
  SECTION("wrong magic") {
    for (char magic : {'\0', '\1', '\3'}) {
      auto b = good;
      b[16] = magic;
      check_refused(b, error_code::invalid_record, storage::errc::bad_magic);
    }
  }
  SECTION("bad CRC") {
    auto b = good;
    b[b.size() - 1] ^= 0x01;
    check_refused(b, error_code::invalid_record, storage::errc::bad_crc);
    auto c = good;
    c[storage::batch_crc_offset] ^= 0x40;
    check_refused(c, error_code::invalid_record, storage::errc::bad_crc);
  }
  SECTION("lastOffsetDelta + 1 != recordsCount") {
    auto b = good;
    store_be(b, 23, 5, 4);
    fix_crc(b);
    check_refused(b, error_code::invalid_record, storage::errc::bad_count);
  }
  SECTION("malformed record inside a correct CRC") {
    auto b = good;
    b[storage::batch_header_size] = 0x7f;  // first record's length varint
    fix_crc(b);
    check_refused(b, error_code::invalid_record, storage::errc::bad_record);
  }
  SECTION("control batch from a client") {
    check_refused(with_attributes(storage::attr_control), error_code::invalid_record, std::nullopt);
  }
}

TEST_CASE("kafka produce validation: size and compression limits",
          "[kafka][produce_validation]") {
  const auto good = sample_batch();
  SECTION("batch above max.message.bytes") {
    produce_validation_options opts;
    opts.max_batch_bytes = good.size() - 1;
    check_refused(good, error_code::message_too_large, std::nullopt, opts);
    opts.max_batch_bytes = good.size();
    CHECK(validate_produce_records(std::string_view(good), opts).ok());
  }
  SECTION("compressed batches pass verbatim (no record parse)") {
    for (uint16_t codec : {1, 2, 3, 4}) {
      const auto b = with_attributes(codec);
      auto r = validate_produce_records(std::string_view(b));
      REQUIRE(r.ok());
      CHECK(static_cast<int>(r->front().codec) == codec);
    }
  }
  SECTION("unknown codec") {
    check_refused(with_attributes(5), error_code::unsupported_compression_type, std::nullopt);
  }
  SECTION("zstd needs Produce v7") {
    produce_validation_options opts;
    opts.produce_version = 6;
    check_refused(with_attributes(4), error_code::unsupported_compression_type, std::nullopt, opts);
  }
  SECTION("transactional bit is reported") {
    const auto b = with_attributes(storage::attr_transactional);
    auto r = validate_produce_records(std::string_view(b));
    REQUIRE(r.ok());
    CHECK(r->front().transactional);
  }
}

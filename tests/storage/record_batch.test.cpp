#include "storage/record_batch.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <random>

#include "storage_test_helpers.hpp"

using namespace moonmq::storage;
using moonmq::storage::test::pseudo_bytes;

namespace {

void store_be(std::string& b, size_t pos, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    b[pos + n - 1 - i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Recomputes the CRC after a test mutated covered bytes, so the validator
// reaches the check behind the CRC.
void fix_crc(std::string& b) {
  store_be(b, batch_crc_offset, crc32c(std::string_view(b).substr(batch_attributes_offset)), 4);
}

}  // namespace

TEST_CASE("crc32c matches the Castagnoli check value", "[storage][batch]") {
  // Standard check value of CRC-32C for "123456789" (RFC 3720 B.4 family).
  REQUIRE(crc32c("123456789") == 0xE3069283u);
  REQUIRE(crc32c_portable("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  // The hardware path and boost agree on every length/alignment mix.
  auto data = pseudo_bytes(4099, 11);
  for (size_t start = 0; start < 9; ++start)
    for (size_t len : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{63}, size_t{4090}})
      CHECK(crc32c(std::string_view(data).substr(start, len)) ==
            crc32c_portable(std::string_view(data).substr(start, len)));
  // Lengths around the three-stream blocks (3 x 256 and 3 x 8192 bytes).
  auto big = pseudo_bytes(3 * 3 * 8192 + 3 * 256 + 100, 12);
  for (size_t len : {size_t{767}, size_t{768}, size_t{769}, size_t{1543}, size_t{24575}, size_t{24576},
                     size_t{24577}, size_t{24576 + 768 + 7}, size_t{100000}, big.size()})
    for (size_t start : {size_t{0}, size_t{3}}) {
      CAPTURE(len, start);
      const auto part = std::string_view(big).substr(start, std::min(len, big.size() - start));
      CHECK(crc32c(part) == crc32c_portable(part));
    }
}

TEST_CASE("batch round trip keeps keys, values, headers and timestamps", "[storage][batch]") {
  std::vector<record> in(5);
  in[0].key = std::nullopt;
  in[0].value = "plain";
  in[0].timestamp_ms = 1'700'000'000'000;
  in[1].key = std::string();  // present but empty
  in[1].value = "";
  in[1].timestamp_ms = 1'700'000'000'500;
  in[1].headers = {{"trace", std::string("abc")}, {"empty", std::string()}, {"null", std::nullopt}};
  in[2].key = pseudo_bytes(300, 7);  // binary, multi-byte varint length
  in[2].value = pseudo_bytes(70'000, 8);
  in[2].timestamp_ms = 1'699'999'999'000;  // negative delta
  in[3].key = std::string("\0\xff\x80", 3);
  in[3].value = std::string(1, '\0');
  in[3].timestamp_ms = 1'700'000'001'000;
  in[4].value = "last";
  in[4].timestamp_ms = 1'700'000'000'000;

  batch_options opts;
  opts.base_offset = offset{42};
  opts.producer_id = 77;
  opts.producer_epoch = 3;
  opts.base_sequence = 9;
  opts.partition_leader_epoch = 5;
  auto enc = encode_batch(in, opts);
  REQUIRE(enc.ok());
  auto view = batch_view::parse(*enc);
  REQUIRE(view.ok());
  CHECK(view->size() == enc->size());
  CHECK(view->base_offset() == offset{42});
  CHECK(view->last_offset() == offset{46});
  CHECK(view->count() == 5);
  CHECK(view->base_timestamp() == 1'700'000'000'000);
  CHECK(view->max_timestamp() == 1'700'000'001'000);
  CHECK(view->producer_id() == 77);
  CHECK(view->producer_epoch() == 3);
  CHECK(view->base_sequence() == 9);
  CHECK(view->partition_leader_epoch() == 5);
  CHECK(view->attributes() == 0);
  CHECK(view->compression_codec() == 0);

  auto out = decode_records(*view);
  REQUIRE(out.ok());
  REQUIRE(out->size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& r = (*out)[i];
    CHECK(r.off == offset{42 + static_cast<int64_t>(i)});
    CHECK(r.timestamp_ms == in[i].timestamp_ms);
    CHECK(r.key.has_value() == in[i].key.has_value());
    if (in[i].key)
      CHECK(std::string(*r.key) == *in[i].key);
    REQUIRE(r.value.has_value());
    CHECK(std::string(*r.value) == in[i].value);
    REQUIRE(r.headers.size() == in[i].headers.size());
    for (size_t h = 0; h < r.headers.size(); ++h) {
      CHECK(std::string(r.headers[h].first) == in[i].headers[h].key);
      CHECK(r.headers[h].second.has_value() == in[i].headers[h].value.has_value());
      if (in[i].headers[h].value)
        CHECK(std::string(*r.headers[h].second) == *in[i].headers[h].value);
    }
  }
}

TEST_CASE("batch round trip with many records", "[storage][batch]") {
  auto recs = moonmq::storage::test::make_records(20'000, 3, 5);
  auto enc = encode_batch(recs).value();
  auto view = batch_view::parse(enc);
  REQUIRE(view.ok());
  CHECK(view->count() == 20'000);
  CHECK(view->last_offset() == offset{19'999});
  auto out = decode_records(*view);
  REQUIRE(out.ok());
  REQUIRE(out->size() == recs.size());
  CHECK(std::string(*(*out)[19'999].value) == recs[19'999].value);
  CHECK(std::string(*(*out)[12'345].key) == *recs[12'345].key);
  CHECK(!(*out)[12'344].key.has_value());
}

TEST_CASE("encoder refuses an empty batch and codec bits", "[storage][batch]") {
  CHECK(encode_batch({}).err().code == errc::invalid_argument);
  batch_options opts;
  opts.attributes = 2;
  CHECK(encode_batch(moonmq::storage::test::make_records(1, 1), opts).err().code ==
        errc::invalid_argument);
}

TEST_CASE("set_base_offset rewrites the offset without breaking the CRC", "[storage][batch]") {
  auto b = moonmq::storage::test::make_batch(3, 1);
  REQUIRE(set_base_offset(b, offset{1'000'000'007}).ok());
  auto view = batch_view::parse(b);
  REQUIRE(view.ok());
  CHECK(view->base_offset() == offset{1'000'000'007});
  CHECK(view->last_offset() == offset{1'000'000'009});
  CHECK((*decode_records(*view))[2].off == offset{1'000'000'009});
  std::string tiny = "abc";
  CHECK(set_base_offset(tiny, offset{1}).err().code == errc::short_buffer);
}

TEST_CASE("parse reads one batch from a longer buffer", "[storage][batch]") {
  auto a = moonmq::storage::test::make_batch(2, 1);
  auto b = moonmq::storage::test::make_batch(4, 2);
  auto both = a + b;
  auto first = batch_view::parse(both);
  REQUIRE(first.ok());
  CHECK(first->size() == a.size());
  auto second = batch_view::parse(std::string_view(both).substr(first->size()));
  REQUIRE(second.ok());
  CHECK(second->count() == 4);
}

TEST_CASE("validator rejects malformed batches with the right error", "[storage][batch]") {
  const auto good = moonmq::storage::test::make_batch(3, 9, 20);
  struct mutation {
    const char* name;
    std::function<void(std::string&)> apply;
    errc expected;
  };
  std::vector<mutation> table = {
      {"empty buffer", [](std::string& b) { b.clear(); }, errc::short_buffer},
      {"11 bytes", [](std::string& b) { b.resize(11); }, errc::short_buffer},
      {"60 bytes", [](std::string& b) { b.resize(60); }, errc::short_buffer},
      {"one byte short", [](std::string& b) { b.pop_back(); }, errc::short_buffer},
      {"negative length", [](std::string& b) { store_be(b, 8, 0xffffffffu, 4); }, errc::bad_length},
      {"most negative length", [](std::string& b) { store_be(b, 8, 0x80000000u, 4); }, errc::bad_length},
      {"length below header", [](std::string& b) { store_be(b, 8, 48, 4); }, errc::bad_length},
      {"length past buffer", [](std::string& b) { store_be(b, 8, 0x7fffffffu, 4); }, errc::short_buffer},
      {"magic 1", [](std::string& b) { b[16] = 1; }, errc::bad_magic},
      {"magic -1", [](std::string& b) { b[16] = static_cast<char>(0xff); }, errc::bad_magic},
      {"crc field flipped", [](std::string& b) { b[18] ^= 0x01; }, errc::bad_crc},
      {"record byte flipped", [](std::string& b) { b[b.size() - 5] ^= 0x40; }, errc::bad_crc},
      {"attributes flipped", [](std::string& b) { b[22] ^= 0x08; }, errc::bad_crc},
      {"count zero",
       [](std::string& b) { store_be(b, 57, 0, 4); store_be(b, 23, 0xffffffffu, 4); fix_crc(b); },
       errc::bad_count},
      {"count negative", [](std::string& b) { store_be(b, 57, 0xfffffffeu, 4); fix_crc(b); }, errc::bad_count},
      {"lastOffsetDelta != count-1", [](std::string& b) { store_be(b, 23, 5, 4); fix_crc(b); }, errc::bad_count},
      {"count and delta larger than records",
       [](std::string& b) { store_be(b, 57, 4, 4); store_be(b, 23, 3, 4); fix_crc(b); },
       errc::bad_record},
      {"count and delta smaller than records",
       [](std::string& b) { store_be(b, 57, 2, 4); store_be(b, 23, 1, 4); fix_crc(b); },
       errc::bad_count},
      {"huge count", [](std::string& b) { store_be(b, 57, 0x7fffffff, 4); store_be(b, 23, 0x7ffffffe, 4); fix_crc(b); },
       errc::bad_count},
      {"record length varint overlong",
       [](std::string& b) {
         // 6 continuation bytes where an int32 varint allows 5.
         for (size_t i = 0; i < 6; ++i)
           b[61 + i] = static_cast<char>(0xff);
         fix_crc(b);
       },
       errc::bad_record},
      {"record length negative",
       [](std::string& b) { b[61] = 0x01; fix_crc(b); },  // zigzag 1 = -1
       errc::bad_record},
  };
  for (const auto& m : table) {
    INFO(m.name);
    auto b = good;
    m.apply(b);
    auto r = batch_view::parse(b);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == m.expected);
    CHECK_FALSE(r.err().message.empty());
  }
  REQUIRE(batch_view::parse(good).ok());
}

TEST_CASE("compressed batches validate but are not iterated", "[storage][batch]") {
  auto b = moonmq::storage::test::make_batch(2, 4);
  b[22] = static_cast<char>((b[22] & ~0x07) | 0x03);  // lz4 codec bits
  // The bytes after the header are not a valid lz4 frame; only the header
  // and CRC are checked for compressed batches.
  b[61] = static_cast<char>(0xff);
  fix_crc(b);
  auto view = batch_view::parse(b);
  REQUIRE(view.ok());
  CHECK(view->compression_codec() == 3);
  auto recs = decode_records(*view);
  REQUIRE_FALSE(recs.ok());
  CHECK(recs.err().code == errc::compressed);
}

TEST_CASE("peek_batch_header reads framing without the CRC", "[storage][batch]") {
  auto b = moonmq::storage::test::make_batch(7, 2, 0, 5000);
  REQUIRE(set_base_offset(b, offset{100}).ok());
  b[b.size() - 1] ^= 0x1;  // break the CRC: peek must not care
  auto info = peek_batch_header(b);
  REQUIRE(info.ok());
  CHECK(info->base == offset{100});
  CHECK(info->last == offset{106});
  CHECK(info->size == b.size());
  CHECK(info->max_timestamp == 5006);
  CHECK(peek_batch_header(std::string_view(b).substr(0, 30)).err().code == errc::short_buffer);
}

TEST_CASE("hostile bytes never crash the validator", "[storage][batch]") {
  std::mt19937_64 rng(12345);
  const auto good = moonmq::storage::test::make_batch(6, 5, 10);
  size_t accepted = 0;
  for (int round = 0; round < 20'000; ++round) {
    auto b = good;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 3) {
        case 0: b[rng() % b.size()] = static_cast<char>(rng()); break;
        case 1: b.resize(rng() % (b.size() + 1)); break;
        default: b.insert(rng() % (b.size() + 1), 1, static_cast<char>(rng())); break;
      }
      if (b.empty())
        break;
    }
    if (b.size() > batch_attributes_offset && rng() % 2 == 0)
      fix_crc(b);  // reach the record parser with corrupted records
    auto r = batch_view::parse(b);
    if (r.ok()) {
      ++accepted;
      CHECK(r->size() <= b.size());
      if (r->compression_codec() == 0)
        CHECK(decode_records(*r).ok());
    }
  }
  // Some mutations leave the batch valid (e.g. bytes after the batch); most not.
  CHECK(accepted < 20'000);
}

#include "storage/record_batch.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <boost/crc.hpp>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace moonmq::storage {
namespace {

// Field positions inside the 61-byte v2 header (see record_batch.hpp).
constexpr size_t pos_epoch = 12;
constexpr size_t pos_magic = 16;
constexpr size_t pos_last_delta = 23;
constexpr size_t pos_base_ts = 27;
constexpr size_t pos_max_ts = 35;
constexpr size_t pos_producer_id = 43;
constexpr size_t pos_producer_epoch = 51;
constexpr size_t pos_base_seq = 53;
constexpr size_t pos_count = 57;

uint64_t load_be(std::string_view b, size_t pos, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v = (v << 8) | static_cast<uint8_t>(b[pos + i]);
  return v;
}

void store_be(std::string& b, size_t pos, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    b[pos + n - 1 - i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void put_be(std::string& b, uint64_t v, size_t n) {
  b.append(n, '\0');
  store_be(b, b.size() - n, v, n);
}

void put_uvarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_varlong(std::string& out, int64_t v) {
  put_uvarint(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

void put_bytes(std::string& out, const std::optional<std::string>& s) {
  if (!s) {
    put_varlong(out, -1);
    return;
  }
  put_varlong(out, static_cast<int64_t>(s->size()));
  out.append(*s);
}

// Bounds-checked cursor over untrusted bytes; every read reports failure
// instead of reading past the end.
class reader {
 public:
  explicit reader(std::string_view b) : b_(b) {}
  size_t remaining() const { return b_.size() - pos_; }

  bool take(size_t n, std::string_view& out) {
    if (n > remaining())
      return false;
    out = b_.substr(pos_, n);
    pos_ += n;
    return true;
  }

  bool i8(int8_t& out) {
    if (remaining() < 1)
      return false;
    out = static_cast<int8_t>(b_[pos_++]);
    return true;
  }

  // Zigzag LEB128 of at most `max_bytes` bytes (5 for int32, 10 for int64).
  bool varlong(int64_t& out, int max_bytes = 10) {
    uint64_t raw = 0;
    for (int i = 0; i < max_bytes; ++i) {
      if (remaining() < 1)
        return false;
      auto byte = static_cast<uint8_t>(b_[pos_++]);
      if (i == 9 && byte > 1)
        return false;  // would overflow 64 bits
      raw |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if ((byte & 0x80) == 0) {
        out = static_cast<int64_t>(raw >> 1) ^ -static_cast<int64_t>(raw & 1);
        return true;
      }
    }
    return false;  // too many continuation bytes
  }

  bool varint(int32_t& out) {
    int64_t v = 0;
    if (!varlong(v, 5) || v < std::numeric_limits<int32_t>::min() ||
        v > std::numeric_limits<int32_t>::max())
      return false;
    out = static_cast<int32_t>(v);
    return true;
  }

  // Length-prefixed bytes; length -1 means null, below -1 is malformed.
  bool nullable_bytes(std::optional<std::string_view>& out) {
    int32_t len = 0;
    if (!varint(len) || len < -1)
      return false;
    if (len == -1) {
      out.reset();
      return true;
    }
    std::string_view s;
    if (!take(static_cast<size_t>(len), s))
      return false;
    out = s;
    return true;
  }

 private:
  std::string_view b_;
  size_t pos_ = 0;
};

/// The key of the first record in `records` (the bytes after a batch
/// header), nullopt when they do not reach its end or it is null.
std::optional<std::string_view> first_key(std::string_view records) {
  reader r(records);
  int32_t len = 0, off_delta = 0;
  int8_t attrs = 0;
  int64_t ts_delta = 0;
  std::optional<std::string_view> key;
  if (!r.varint(len) || !r.i8(attrs) || !r.varlong(ts_delta) || !r.varint(off_delta) || !r.nullable_bytes(key))
    return std::nullopt;
  return key;
}

error record_error(int32_t index, const char* what) {
  return make_error(errc::bad_record,
                    "record " + std::to_string(index) + ": " + what);
}

// Parses the records of an uncompressed batch; `out` may be null (validate only).
status parse_records(const batch_view& batch, std::vector<record_view>* out) {
  reader r(batch.bytes().substr(batch_header_size));
  const int32_t count = batch.count();
  const int64_t base_ts = batch.base_timestamp();
  if (out)
    // Each record takes at least 7 bytes: bound the reservation by the batch
    // size so a hostile recordsCount cannot force a large allocation.
    out->reserve(std::min(static_cast<size_t>(std::max(count, 0)),
                          (batch.size() - batch_header_size) / 7 + 1));
  for (int32_t i = 0; i < count; ++i) {
    int32_t len = 0;
    if (!r.varint(len) || len < 0)
      return record_error(i, "bad length varint");
    std::string_view body;
    if (!r.take(static_cast<size_t>(len), body))
      return record_error(i, "length past end of batch");
    reader rec(body);
    int8_t attrs = 0;
    int64_t ts_delta = 0;
    int32_t off_delta = 0;
    if (!rec.i8(attrs) || !rec.varlong(ts_delta) || !rec.varint(off_delta))
      return record_error(i, "bad attributes/timestamp/offset delta");
    if (off_delta != i)
      return record_error(i, "offsetDelta does not match record position");
    record_view v;
    v.off = offset{batch.base_offset().value + off_delta};
    v.timestamp_ms = static_cast<int64_t>(static_cast<uint64_t>(base_ts) +
                                          static_cast<uint64_t>(ts_delta));
    if (!rec.nullable_bytes(v.key) || !rec.nullable_bytes(v.value))
      return record_error(i, "bad key or value length");
    int32_t header_count = 0;
    if (!rec.varint(header_count) || header_count < 0 ||
        static_cast<size_t>(header_count) > rec.remaining() / 2)
      return record_error(i, "bad header count");
    for (int32_t h = 0; h < header_count; ++h) {
      std::optional<std::string_view> key;
      std::optional<std::string_view> value;
      if (!rec.nullable_bytes(key) || !key || !rec.nullable_bytes(value))
        return record_error(i, "bad header");
      if (out)
        v.headers.emplace_back(*key, value);
    }
    if (rec.remaining() != 0)
      return record_error(i, "trailing bytes inside record");
    if (out)
      out->push_back(std::move(v));
  }
  if (r.remaining() != 0)
    return make_error(errc::bad_count, "bytes after the last of " +
                                           std::to_string(count) + " records");
  return {};
}

}  // namespace

uint32_t crc32c_portable(std::string_view data) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
namespace {

// SSE4.2 crc32 instructions compute CRC32C (reflected 0x1EDC6F41) directly.
// One instruction takes 3 cycles and the next one waits for its result, so
// long inputs run three independent streams over three adjacent blocks and
// join them: the register after A then B is the register after A advanced
// over len(B) zero bytes, xor the register of B started at 0 (CRCs are
// linear). The advance is a 32x32 matrix over GF(2), applied a byte of the
// register at a time through tables (zlib's crc32_combine matrices).
// Source: Mark Adler's crc32c.c (2013), after Intel's "Fast CRC
// Computation for iSCSI Polynomial Using CRC32 Instruction" (2011).

constexpr uint32_t crc32c_reflected_poly = 0x82F63B78u;
constexpr size_t crc_long_block = 8192;  // bytes per stream, large inputs
constexpr size_t crc_short_block = 256;  // bytes per stream, the rest

/// Matrix (column n: the image of bit n) times vector over GF(2).
uint32_t gf2_times(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  for (; vec != 0; vec >>= 1, ++mat)
    if ((vec & 1) != 0)
      sum ^= *mat;
  return sum;
}

void gf2_square(uint32_t* square, const uint32_t* mat) {
  for (int n = 0; n < 32; ++n)
    square[n] = gf2_times(mat, mat[n]);
}

/// Advances a CRC32C register over `len` zero bytes (len a power of two),
/// one table per byte of the register.
struct crc_zeros {
  uint32_t t[4][256];

  explicit crc_zeros(size_t len) {
    uint32_t odd[32];
    uint32_t even[32];
    odd[0] = crc32c_reflected_poly;  // one zero bit
    for (int n = 1; n < 32; ++n)
      odd[n] = uint32_t{1} << (n - 1);
    gf2_square(even, odd);  // two zero bits
    gf2_square(odd, even);  // four
    const uint32_t* op = odd;
    for (;;) {
      gf2_square(even, odd);  // 8, 32, 128, ... zero bits
      len >>= 1;
      if (len == 0) {
        op = even;
        break;
      }
      gf2_square(odd, even);  // 16, 64, ...
      len >>= 1;
      if (len == 0)
        break;
    }
    for (uint32_t n = 0; n < 256; ++n)
      for (int k = 0; k < 4; ++k)
        t[k][n] = gf2_times(op, n << (8 * k));
  }

  uint32_t shift(uint64_t reg) const {
    return t[0][reg & 0xff] ^ t[1][(reg >> 8) & 0xff] ^ t[2][(reg >> 16) & 0xff] ^ t[3][(reg >> 24) & 0xff];
  }
};

uint64_t load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/// Three streams of `block` bytes each, while 3 * block bytes are left.
__attribute__((target("sse4.2"))) void crc_three_streams(uint64_t& c0, const char*& p, size_t& n, size_t block,
                                                         const crc_zeros& zeros) {
  while (n >= 3 * block) {
    uint64_t c1 = 0;
    uint64_t c2 = 0;
    for (const char* end = p + block; p < end; p += 8) {
      c0 = _mm_crc32_u64(c0, load64(p));
      c1 = _mm_crc32_u64(c1, load64(p + block));
      c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
    }
    c0 = zeros.shift(c0) ^ c1;
    c0 = zeros.shift(c0) ^ c2;
    p += 2 * block;
    n -= 3 * block;
  }
}

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(std::string_view data) {
  static const crc_zeros long_zeros(crc_long_block);
  static const crc_zeros short_zeros(crc_short_block);
  const char* p = data.data();
  size_t n = data.size();
  uint64_t c = 0xFFFFFFFFu;
  crc_three_streams(c, p, n, crc_long_block, long_zeros);
  crc_three_streams(c, p, n, crc_short_block, short_zeros);
  for (; n >= 8; p += 8, n -= 8)
    c = _mm_crc32_u64(c, load64(p));
  auto c32 = static_cast<uint32_t>(c);
  while (n-- > 0)
    c32 = _mm_crc32_u8(c32, static_cast<uint8_t>(*p++));
  return ~c32;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const bool hw = __builtin_cpu_supports("sse4.2");
  return hw ? crc32c_sse42(data) : crc32c_portable(data);
}
#else
uint32_t crc32c(std::string_view data) { return crc32c_portable(data); }
#endif

result<std::string> encode_batch(const std::vector<record>& records,
                                 const batch_options& options) {
  if (records.empty())
    return make_error(errc::invalid_argument, "a batch needs at least one record");
  if ((options.attributes & attr_compression_mask) != 0)
    return make_error(errc::invalid_argument, "encoder does not compress");
  if (records.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return make_error(errc::invalid_argument, "too many records for one batch");
  const int64_t base_ts = records.front().timestamp_ms;
  int64_t max_ts = base_ts;
  for (const auto& r : records)
    max_ts = std::max(max_ts, r.timestamp_ms);

  // Reserve the whole batch up front: per record at most 5 (length) + 1 +
  // 10 + 5 + 3 * 5 varint bytes besides the payloads.
  size_t estimate = batch_header_size;
  for (const auto& r : records) {
    estimate += 36 + r.value.size() + (r.key ? r.key->size() : 0);
    for (const auto& h : r.headers)
      estimate += 10 + h.key.size() + (h.value ? h.value->size() : 0);
  }
  std::string out;
  out.reserve(estimate);
  put_be(out, static_cast<uint64_t>(options.base_offset.value), 8);
  put_be(out, 0, 4);  // batchLength, filled below
  put_be(out, static_cast<uint32_t>(options.partition_leader_epoch), 4);
  out.push_back(static_cast<char>(batch_magic_v2));
  put_be(out, 0, 4);  // crc, filled below
  put_be(out, static_cast<uint16_t>(options.attributes), 2);
  put_be(out, static_cast<uint32_t>(records.size() - 1), 4);
  put_be(out, static_cast<uint64_t>(base_ts), 8);
  put_be(out, static_cast<uint64_t>(max_ts), 8);
  put_be(out, static_cast<uint64_t>(options.producer_id), 8);
  put_be(out, static_cast<uint16_t>(options.producer_epoch), 2);
  put_be(out, static_cast<uint32_t>(options.base_sequence), 4);
  put_be(out, static_cast<uint32_t>(records.size()), 4);

  std::string body;
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    body.clear();
    body.push_back('\0');  // record attributes (unused in v2)
    put_varlong(body, static_cast<int64_t>(static_cast<uint64_t>(r.timestamp_ms) -
                                           static_cast<uint64_t>(base_ts)));
    put_varlong(body, static_cast<int64_t>(i));
    put_bytes(body, r.key);
    put_varlong(body, static_cast<int64_t>(r.value.size()));
    body.append(r.value);
    put_varlong(body, static_cast<int64_t>(r.headers.size()));
    for (const auto& h : r.headers) {
      put_varlong(body, static_cast<int64_t>(h.key.size()));
      body.append(h.key);
      put_bytes(body, h.value);
    }
    put_varlong(out, static_cast<int64_t>(body.size()));
    out.append(body);
  }
  if (out.size() - batch_log_overhead >
      static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return make_error(errc::batch_too_large, "batch exceeds 2 GiB");
  store_be(out, batch_length_offset, out.size() - batch_log_overhead, 4);
  store_be(out, batch_crc_offset,
           crc32c(std::string_view(out).substr(batch_attributes_offset)), 4);
  return out;
}

result<size_t> peek_batch_size(std::string_view bytes) {
  if (bytes.size() < batch_log_overhead)
    return make_error(errc::short_buffer, "fewer than 12 bytes for offset and length");
  auto len = static_cast<int32_t>(load_be(bytes, batch_length_offset, 4));
  if (len < static_cast<int32_t>(batch_header_size - batch_log_overhead))
    return make_error(errc::bad_length,
                      "batchLength " + std::to_string(len) + " below the 49-byte minimum");
  return static_cast<size_t>(len) + batch_log_overhead;
}

result<batch_header_info> peek_batch_header(std::string_view bytes) {
  auto size = peek_batch_size(bytes);
  if (!size)
    return size.err();
  if (bytes.size() < batch_header_size)
    return make_error(errc::short_buffer, "fewer than 61 header bytes");
  if (static_cast<int8_t>(bytes[pos_magic]) != batch_magic_v2)
    return make_error(errc::bad_magic, "magic " + std::to_string(static_cast<int8_t>(bytes[pos_magic])) + ", want 2");
  auto last_delta = static_cast<int32_t>(load_be(bytes, pos_last_delta, 4));
  auto base = static_cast<int64_t>(load_be(bytes, 0, 8));
  if (last_delta < 0 || base < 0 || base > std::numeric_limits<int64_t>::max() - last_delta)
    return make_error(errc::bad_count, "bad baseOffset or lastOffsetDelta");
  batch_header_info info;
  info.base = offset{base};
  info.last = offset{base + last_delta};
  info.size = *size;
  info.max_timestamp = static_cast<int64_t>(load_be(bytes, pos_max_ts, 8));
  info.attributes = static_cast<int16_t>(load_be(bytes, batch_attributes_offset, 2));
  info.producer_id = static_cast<int64_t>(load_be(bytes, pos_producer_id, 8));
  info.producer_epoch = static_cast<int16_t>(load_be(bytes, pos_producer_epoch, 2));
  info.base_sequence = static_cast<int32_t>(load_be(bytes, pos_base_seq, 4));
  if ((info.attributes & attr_control) != 0) {
    const auto within = std::min(bytes.size(), info.size);
    if (auto key = first_key(bytes.substr(batch_header_size, within - batch_header_size)); key && key->size() == 4
        && load_be(*key, 0, 2) == 0)
      info.control_type = static_cast<int16_t>(load_be(*key, 2, 2));
  }
  return info;
}

result<std::string> make_control_batch(int64_t producer_id, int16_t producer_epoch, int16_t type,
                                       int32_t coordinator_epoch, int64_t timestamp_ms) {
  if (type != control_abort && type != control_commit)
    return make_error(errc::invalid_argument, "control type " + std::to_string(type) + " is not a transaction marker");
  if (producer_id < 0)
    return make_error(errc::invalid_argument, "a transaction marker needs a producer id");
  std::string key, value;
  put_be(key, 0, 2);  // ControlRecordType key version
  put_be(key, static_cast<uint16_t>(type), 2);
  put_be(value, 0, 2);  // EndTransactionMarker value version
  put_be(value, static_cast<uint32_t>(coordinator_epoch), 4);
  batch_options o;
  o.producer_id = producer_id;
  o.producer_epoch = producer_epoch;
  o.base_sequence = -1;
  o.attributes = static_cast<int16_t>(attr_transactional | attr_control);
  return encode_batch({record{std::move(key), std::move(value), {}, timestamp_ms}}, o);
}

namespace {

/// The first record of a control batch, decoded.
result<record_view> first_control_record(const batch_view& batch) {
  if (!batch.is_control())
    return make_error(errc::invalid_argument, "not a control batch");
  auto records = decode_records(batch);
  if (!records)
    return records.err();
  if (records->empty())
    return make_error(errc::bad_record, "control batch without a record");
  return records->front();
}

}  // namespace

result<int16_t> control_type_of(const batch_view& batch) {
  auto r = first_control_record(batch);
  if (!r)
    return r.err();
  if (!r->key || r->key->size() != 4 || load_be(*r->key, 0, 2) != 0)
    return make_error(errc::bad_record, "control record key is not [version 0][type]");
  return static_cast<int16_t>(load_be(*r->key, 2, 2));
}

result<int32_t> marker_coordinator_epoch(const batch_view& batch) {
  auto r = first_control_record(batch);
  if (!r)
    return r.err();
  if (!r->value || r->value->size() < 6 || load_be(*r->value, 0, 2) != 0)
    return make_error(errc::bad_record, "transaction marker value is not [version 0][coordinator epoch]");
  return static_cast<int32_t>(load_be(*r->value, 2, 4));
}

result<batch_view> batch_view::parse(std::string_view bytes, bool deep) {
  auto size = peek_batch_size(bytes);
  if (!size)
    return size.err();
  if (bytes.size() < batch_header_size)
    return make_error(errc::short_buffer, "fewer than 61 header bytes");
  auto magic = static_cast<int8_t>(bytes[pos_magic]);
  if (magic != batch_magic_v2)
    return make_error(errc::bad_magic, "magic " + std::to_string(magic) + ", want 2");
  if (bytes.size() < *size)
    return make_error(errc::short_buffer, "batchLength needs " + std::to_string(*size) +
                                              " bytes, have " + std::to_string(bytes.size()));
  batch_view v(bytes.substr(0, *size));
  auto computed = crc32c(v.bytes_.substr(batch_attributes_offset));
  if (computed != v.crc())
    return make_error(errc::bad_crc, "crc mismatch stored=" + std::to_string(v.crc()) +
                                         " computed=" + std::to_string(computed));
  auto last_delta = static_cast<int32_t>(load_be(v.bytes_, pos_last_delta, 4));
  if (v.count() <= 0 || last_delta < 0 ||
      static_cast<int64_t>(last_delta) + 1 != v.count())
    return make_error(errc::bad_count, "lastOffsetDelta=" + std::to_string(last_delta) +
                                           " recordsCount=" + std::to_string(v.count()));
  if (v.base_offset().value < 0 ||
      v.base_offset().value > std::numeric_limits<int64_t>::max() - last_delta)
    return make_error(errc::bad_count, "baseOffset out of range");
  if (deep && v.compression_codec() == 0) {
    // Each record takes at least 7 bytes; cheap bound before the full parse.
    if (static_cast<size_t>(v.count()) > (v.size() - batch_header_size) / 7 + 1)
      return make_error(errc::bad_count, "recordsCount larger than the batch can hold");
    auto st = parse_records(v, nullptr);
    if (!st)
      return st.err();
  }
  return v;
}

offset batch_view::base_offset() const {
  return offset{static_cast<int64_t>(load_be(bytes_, 0, 8))};
}
offset batch_view::last_offset() const {
  return offset{base_offset().value + static_cast<int32_t>(load_be(bytes_, pos_last_delta, 4))};
}
int32_t batch_view::count() const { return static_cast<int32_t>(load_be(bytes_, pos_count, 4)); }
int32_t batch_view::partition_leader_epoch() const {
  return static_cast<int32_t>(load_be(bytes_, pos_epoch, 4));
}
int16_t batch_view::attributes() const {
  return static_cast<int16_t>(load_be(bytes_, batch_attributes_offset, 2));
}
int64_t batch_view::base_timestamp() const {
  return static_cast<int64_t>(load_be(bytes_, pos_base_ts, 8));
}
int64_t batch_view::max_timestamp() const {
  return static_cast<int64_t>(load_be(bytes_, pos_max_ts, 8));
}
int64_t batch_view::producer_id() const {
  return static_cast<int64_t>(load_be(bytes_, pos_producer_id, 8));
}
int16_t batch_view::producer_epoch() const {
  return static_cast<int16_t>(load_be(bytes_, pos_producer_epoch, 2));
}
int32_t batch_view::base_sequence() const {
  return static_cast<int32_t>(load_be(bytes_, pos_base_seq, 4));
}
uint32_t batch_view::crc() const {
  return static_cast<uint32_t>(load_be(bytes_, batch_crc_offset, 4));
}

status set_base_offset(std::string& bytes, offset base) {
  if (bytes.size() < 8)
    return make_error(errc::short_buffer, "fewer than 8 bytes for baseOffset");
  store_be(bytes, 0, static_cast<uint64_t>(base.value), 8);
  return {};
}

result<std::vector<record_view>> decode_records(const batch_view& batch) {
  if (batch.compression_codec() != 0)
    return make_error(errc::compressed, "codec " + std::to_string(batch.compression_codec()) +
                                            " batches are stored verbatim, not decoded");
  std::vector<record_view> out;
  auto st = parse_records(batch, &out);
  if (!st)
    return st.err();
  return out;
}

result<std::optional<timestamp_offset>> find_timestamp_in_batch(const batch_view& batch,
                                                                int64_t target, offset min_offset) {
  const int64_t max_ts = batch.max_timestamp();
  if (max_ts < target || batch.last_offset() < min_offset)
    return std::optional<timestamp_offset>{};
  // Every record carries maxTimestamp (LogAppendTime), or the records are
  // not decoded (compressed): the first offset at or after min_offset.
  if ((batch.attributes() & attr_log_append_time) != 0 || batch.compression_codec() != 0)
    return std::optional<timestamp_offset>{
      timestamp_offset{std::max(batch.base_offset(), min_offset), max_ts}};
  auto records = decode_records(batch);
  if (!records)
    return records.err();
  for (const auto& r : *records)
    if (r.off >= min_offset && r.timestamp_ms >= target)
      return std::optional<timestamp_offset>{timestamp_offset{r.off, r.timestamp_ms}};
  return std::optional<timestamp_offset>{};
}

}  // namespace moonmq::storage

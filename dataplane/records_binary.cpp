#include "dataplane/records_binary.hpp"

#include <cctype>

namespace moonmq::dataplane {

namespace {

void put_i32(std::string& out, int32_t v) {
  auto u = static_cast<uint32_t>(v);
  char b[4] = {static_cast<char>(u >> 24), static_cast<char>(u >> 16), static_cast<char>(u >> 8),
               static_cast<char>(u)};
  out.append(b, 4);
}

void put_i64(std::string& out, int64_t v) {
  put_i32(out, static_cast<int32_t>(static_cast<uint64_t>(v) >> 32));
  put_i32(out, static_cast<int32_t>(static_cast<uint64_t>(v) & 0xFFFFFFFFu));
}

void patch_i32(std::string& out, size_t at, int32_t v) {
  auto u = static_cast<uint32_t>(v);
  out[at] = static_cast<char>(u >> 24);
  out[at + 1] = static_cast<char>(u >> 16);
  out[at + 2] = static_cast<char>(u >> 8);
  out[at + 3] = static_cast<char>(u);
}

void patch_i64(std::string& out, size_t at, int64_t v) {
  patch_i32(out, at, static_cast<int32_t>(static_cast<uint64_t>(v) >> 32));
  patch_i32(out, at + 4, static_cast<int32_t>(static_cast<uint64_t>(v) & 0xFFFFFFFFu));
}

void put_bytes(std::string& out, std::optional<std::string_view> b) {
  if (!b) {
    put_i32(out, -1);
    return;
  }
  put_i32(out, static_cast<int32_t>(b->size()));
  out.append(b->data(), b->size());
}

template <class Headers>
void put_headers(std::string& out, const Headers& headers) {
  put_i32(out, static_cast<int32_t>(headers.size()));
  for (const auto& [name, value] : headers) {
    put_bytes(out, std::string_view(name));
    put_bytes(out, value);
  }
}

/// Reads fields from a body, keeping the position for error messages. The
/// first failure sticks: later reads fail at once and keep its message.
/// Field names are put together only on failure: `record` and `header`
/// (-1 = none) say which record and header the next fields belong to.
class reader {
public:
  explicit reader(std::string_view body) : body_(body) {}

  int32_t record = -1;
  int32_t header = -1;

  size_t position() const { return pos_; }
  size_t left() const { return body_.size() - pos_; }
  const binary_error& error() const { return error_; }
  bool failed() const { return static_cast<bool>(error_); }

  /// "records[i].headers[h].<field>" for the current record and header.
  std::string name(const char* field) const {
    std::string out;
    if (record >= 0)
      out = "records[" + std::to_string(record) + "]";
    if (header >= 0)
      out += ".headers[" + std::to_string(header) + "]";
    if (!out.empty())
      out += '.';
    return out + field;
  }

  /// Fails at `at` (the start of the field at fault) with "<field>: <why>".
  bool fail(size_t at, const char* field, const std::string& why) {
    if (!error_)
      error_ = binary_error{at, name(field) + ": " + why};
    return false;
  }

  bool i32(int32_t& v, const char* field) {
    uint64_t u = 0;
    if (!fixed(4, u, field))
      return false;
    v = static_cast<int32_t>(static_cast<uint32_t>(u));
    return true;
  }

  bool i64(int64_t& v, const char* field) {
    uint64_t u = 0;
    if (!fixed(8, u, field))
      return false;
    v = static_cast<int64_t>(u);
    return true;
  }

  /// A length-prefixed byte string; -1 = null when `nullable`.
  bool bytes(std::optional<std::string_view>& v, const char* field, bool nullable = true) {
    size_t at = pos_;
    int32_t n = 0;
    if (!i32(n, field))
      return false;
    if (n == -1 && nullable) {
      v.reset();
      return true;
    }
    if (n < 0)
      return fail(at, field, "length " + std::to_string(n) + " is negative"
                               + (nullable ? " (only -1, null, is allowed)" : ""));
    if (static_cast<size_t>(n) > left())
      return fail(at, field, "length " + std::to_string(n) + " runs past the end of the body ("
                               + std::to_string(body_.size()) + " bytes, " + std::to_string(left()) + " left)");
    v = body_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return true;
  }

  /// A count field: at least `min`, and that many items of at least
  /// `min_bytes` each must fit in what is left.
  bool count(int32_t& n, const char* field, int32_t min, size_t min_bytes) {
    size_t at = pos_;
    if (!i32(n, field))
      return false;
    if (n < min)
      return fail(at, field, std::to_string(n) + " is below " + std::to_string(min));
    if (static_cast<size_t>(n) > left() / min_bytes)
      return fail(at, field, std::to_string(n) + " need at least " + std::to_string(static_cast<size_t>(n) * min_bytes)
                               + " bytes, the body has " + std::to_string(left()) + " left");
    return true;
  }

  /// The current record's headers: count, then name (never null; UTF-8
  /// when `utf8_names`: a produce's, while a fetch answer carries names as
  /// stored, any bytes a Kafka client wrote) and value pairs.
  bool headers(std::vector<std::pair<std::string_view, std::optional<std::string_view>>>& out,
               bool utf8_names = true) {
    int32_t n = 0;
    if (!count(n, "header_count", 0, 8))
      return false;
    out.reserve(static_cast<size_t>(n));
    for (header = 0; header < n; ++header) {
      size_t at = pos_;
      std::optional<std::string_view> key, value;
      if (!bytes(key, "name", false))
        return false;
      if (utf8_names && !is_utf8(*key))
        return fail(at, "name", "not UTF-8");
      if (!bytes(value, "value"))
        return false;
      out.emplace_back(*key, value);
    }
    header = -1;
    return true;
  }

  /// Fails when bytes are left after `records` records.
  bool end(int32_t records) {
    record = -1;
    if (left() == 0)
      return true;
    if (!error_)
      error_ = binary_error{pos_, std::to_string(left()) + " bytes after the last of " + std::to_string(records)
                                    + " records"};
    return false;
  }

private:
  bool fixed(size_t n, uint64_t& u, const char* field) {
    if (failed())
      return false;
    if (left() < n)
      return fail(pos_, field, "the body ends here (" + std::to_string(n) + " bytes needed, "
                                 + std::to_string(left()) + " left)");
    u = 0;
    for (size_t i = 0; i < n; ++i)
      u = (u << 8) | static_cast<unsigned char>(body_[pos_ + i]);
    pos_ += n;
    return true;
  }

  std::string_view body_;
  size_t pos_ = 0;
  binary_error error_;
};

/// Smallest encoded produce record (partition, key, value, header count)
/// and fetched record (offset, timestamp, key, value, header count).
constexpr size_t min_produce_record = 16;
constexpr size_t min_fetched_record = 28;
constexpr size_t fetch_envelope = 28;  ///< next, log start, log end, count

}  // namespace

std::string binary_error::to_string() const {
  return "byte " + std::to_string(position) + ": " + message;
}

bool names_records_binary(std::string_view header, bool list) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
      s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
      s.remove_suffix(1);
    return s;
  };
  while (true) {
    auto comma = list ? header.find(',') : std::string_view::npos;
    auto entry = header.substr(0, comma);
    auto type = trim(entry.substr(0, entry.find(';')));
    if (type.size() == records_binary_type.size()) {
      bool same = true;
      for (size_t i = 0; i < type.size() && same; ++i)
        same = std::tolower(static_cast<unsigned char>(type[i])) == records_binary_type[i];
      if (same)
        return true;
    }
    if (comma == std::string_view::npos)
      return false;
    header.remove_prefix(comma + 1);
  }
}

produce_body_writer::produce_body_writer(std::string& out) : out_(out) {
  out_.clear();
  put_i32(out_, 0);
}

void produce_body_writer::add(int32_t partition, std::optional<std::string_view> key,
                              std::optional<std::string_view> value, const header_list& headers) {
  put_i32(out_, partition);
  put_bytes(out_, key);
  put_bytes(out_, value);
  put_headers(out_, headers);
  ++count_;
}

void produce_body_writer::finish() {
  patch_i32(out_, 0, count_);
}

binary_error parse_produce_binary(std::string_view body, int32_t partitions, int32_t sticky_partition,
                                  int64_t now_ms, produce_plan& out) {
  reader in{body};
  int32_t n = 0;
  if (!in.count(n, "count", 1, min_produce_record))
    return in.error();
  std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;
  for (in.record = 0; in.record < n; ++in.record) {
    size_t partition_at = in.position();
    int32_t partition = 0;
    std::optional<std::string_view> key, value;
    if (!in.i32(partition, "partition"))
      return in.error();
    if (partition < -1 || partition >= partitions) {
      in.fail(partition_at, "partition", std::to_string(partition) + " is not a partition of this topic (0.."
                                           + std::to_string(partitions - 1) + ", or -1)");
      return in.error();
    }
    if (!in.bytes(key, "key"))
      return in.error();
    size_t value_at = in.position();
    if (!in.bytes(value, "value"))
      return in.error();
    if (!value) {
      in.fail(value_at, "value", "null values are not accepted");
      return in.error();
    }
    headers.clear();
    if (!in.headers(headers))
      return in.error();
    storage::record rec;
    rec.timestamp_ms = now_ms;
    if (key)
      rec.key.emplace(*key);
    rec.value.assign(value->data(), value->size());
    rec.headers.reserve(headers.size());
    for (const auto& [name, v] : headers)
      rec.headers.push_back({std::string(name), v ? std::optional<std::string>(*v) : std::nullopt});
    auto p = partition >= 0 ? partition : default_partition(rec.key, partitions, sticky_partition);
    out.add(p, std::move(rec));
  }
  in.end(n);
  return in.error();
}

void append_fetched_record(std::string& out, const storage::record_view& r) {
  put_i64(out, r.off.value);
  put_i64(out, r.timestamp_ms);
  put_bytes(out, r.key);
  put_bytes(out, r.value);
  put_headers(out, r.headers);
}

int64_t records_to_binary(std::string_view batches, int64_t from, size_t max_records, int64_t log_start_offset,
                          int64_t log_end_offset, std::string& out, storage::committed_filter* committed) {
  out.clear();
  // The records take about what their batches take; the envelope is filled in last.
  out.reserve(fetch_envelope + batches.size());
  put_i64(out, 0);
  put_i64(out, log_start_offset);
  put_i64(out, log_end_offset);
  put_i32(out, 0);
  int32_t count = 0;
  auto next = for_each_fetched(batches, from, max_records, [&](const storage::record_view& r) {
    append_fetched_record(out, r);
    ++count;
  }, committed);
  patch_i64(out, 0, next);
  patch_i32(out, 24, count);
  return next;
}

binary_error decode_fetch_binary(std::string_view body, fetched_page& out) {
  reader in{body};
  out.records.clear();
  int32_t n = 0;
  if (!in.i64(out.next_offset, "next_offset") || !in.i64(out.log_start_offset, "log_start_offset")
      || !in.i64(out.log_end_offset, "log_end_offset") || !in.count(n, "count", 0, min_fetched_record))
    return in.error();
  out.records.resize(static_cast<size_t>(n));
  for (in.record = 0; in.record < n; ++in.record) {
    auto& r = out.records[static_cast<size_t>(in.record)];
    if (!in.i64(r.off.value, "offset") || !in.i64(r.timestamp_ms, "timestamp") || !in.bytes(r.key, "key")
        || !in.bytes(r.value, "value") || !in.headers(r.headers, false))
      return in.error();
  }
  in.end(n);
  return in.error();
}

}  // namespace moonmq::dataplane

#include "dataplane/records_json.hpp"

#include <openssl/evp.h>

#include <charconv>
#include <cstring>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "dataplane/partitioner.hpp"

namespace moonmq::dataplane {

using json = nlohmann::json;

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool base64_decode(std::string_view text, std::string& out) {
  if (text.size() % 4 != 0)
    return false;
  out.assign(3 * text.size() / 4, '\0');
  if (text.empty())
    return true;
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0)
    return false;
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t pad = 0;
  if (text.back() == '=')
    ++pad;
  if (text.size() >= 2 && text[text.size() - 2] == '=')
    ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return true;
}

bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII runs (most text) eight bytes at a time: no byte has its top bit set.
    while (i + 8 <= s.size()) {
      uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      if ((word & 0x8080808080808080ull) != 0)
        break;
      i += 8;
    }
    if (i >= s.size())
      break;
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size())
      return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2)
        return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))
        || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

namespace {

namespace sj = simdjson;

/// The fields of one produce record, each the last of its name (as a JSON
/// object keeps the last of duplicate keys).
struct record_fields {
  std::optional<sj::dom::element> key, key_base64, value, value_base64, partition, headers;
};

/// The JSON type name of `e` for error messages.
const char* type_name(const sj::dom::element& e) {
  switch (e.type()) {
    case sj::dom::element_type::ARRAY: return "an array";
    case sj::dom::element_type::OBJECT: return "an object";
    case sj::dom::element_type::STRING: return "a string";
    case sj::dom::element_type::BOOL: return "a boolean";
    case sj::dom::element_type::NULL_VALUE: return "null";
    default: return "a number";
  }
}

bool present(const std::optional<sj::dom::element>& e) {
  return e && !e->is_null();
}

/// Reads `name` (text) or `name_base64` into `out`; "" or an error naming
/// where() + "." + name (`where` is called only for an error). Absent or
/// null is no value (an error when `required`); the text form wins when
/// both are given.
template <class Where>
std::string read_bytes(const std::optional<sj::dom::element>& plain, const std::optional<sj::dom::element>& b64,
                       const char* name, const Where& where, bool required, std::optional<std::string>& out) {
  if (present(plain)) {
    std::string_view text;
    if (plain->get(text) != sj::SUCCESS)
      return where() + "." + name + ": expected a string";
    out.emplace(text);
  } else if (present(b64)) {
    std::string_view text;
    std::string decoded;
    if (b64->get(text) != sj::SUCCESS || !base64_decode(text, decoded))
      return where() + "." + name + "_base64: expected base64 text";
    out = std::move(decoded);
  } else if (required) {
    return where() + ": needs \"" + name + "\" or \"" + name + "_base64\"";
  }
  return {};
}

std::string read_headers(const sj::dom::element& headers, const std::string& where,
                         std::vector<storage::record_header>& out) {
  sj::dom::object obj;
  if (headers.get(obj) == sj::SUCCESS) {
    for (auto [name, value] : obj) {
      std::string_view text;
      if (value.get(text) != sj::SUCCESS)
        return where + ".headers." + std::string(name) + ": expected a string";
      out.push_back({std::string(name), std::string(text)});
    }
    return {};
  }
  sj::dom::array list;
  if (headers.get(list) != sj::SUCCESS)
    return where + ".headers: expected an object or an array";
  size_t i = 0;
  for (sj::dom::element h : list) {
    auto hw = where + ".headers[" + std::to_string(i++) + "]";
    sj::dom::object fields;
    std::optional<sj::dom::element> key, value, value_base64;
    if (h.get(fields) == sj::SUCCESS) {
      for (auto [name, v] : fields) {
        if (name == "key")
          key = v;
        else if (name == "value")
          value = v;
        else if (name == "value_base64")
          value_base64 = v;
      }
    }
    std::string_view key_text;
    if (!key || key->get(key_text) != sj::SUCCESS)
      return hw + ": expected {\"key\":...,\"value\":...}";
    std::optional<std::string> bytes;
    if (auto e = read_bytes(value, value_base64, "value", [&hw] { return hw; }, false, bytes); !e.empty())
      return e;
    out.push_back({std::string(key_text), std::move(bytes)});
  }
  return {};
}

/// One parser per thread, kept between requests (its buffers grow to the
/// largest body seen, up to parser_keep_bytes; a larger body gets them
/// released after it, so one huge request does not hold its memory).
constexpr size_t parser_keep_bytes = 8 << 20;

}  // namespace

std::string parse_produce(std::string_view text, int32_t partitions, int32_t sticky_partition, int64_t now_ms,
                          produce_plan& out, bool& malformed) {
  malformed = false;
  // simdjson reads up to SIMDJSON_PADDING bytes past the text: it goes into
  // a buffer of this thread with room for them, kept like the parser.
  thread_local sj::dom::parser parser;
  thread_local std::string padded;
  struct release_large {
    ~release_large() {
      if (parser.capacity() > parser_keep_bytes) {
        parser = sj::dom::parser{};
        padded = std::string{};
      }
    }
  } release;
  if (padded.size() < text.size() + sj::SIMDJSON_PADDING)
    padded.resize(text.size() + sj::SIMDJSON_PADDING);
  std::memcpy(padded.data(), text.data(), text.size());
  sj::dom::element root;
  auto err = parser.parse(padded.data(), text.size(), false).get(root);
  if (err != sj::SUCCESS) {
    malformed = true;
    return std::string("the request body is not valid JSON: ") + sj::error_message(err);
  }
  std::optional<sj::dom::element> records_field;
  sj::dom::object body;
  if (root.get(body) == sj::SUCCESS)
    for (auto [name, v] : body)
      if (name == "records")
        records_field = v;
  sj::dom::array records;
  if (!records_field || records_field->get(records) != sj::SUCCESS)
    return "body must be {\"records\":[...]}";
  if (records.size() == 0)
    return "records must not be empty";
  size_t i = 0;
  for (sj::dom::element r : records) {
    auto where = [i] { return "records[" + std::to_string(i) + "]"; };
    ++i;
    sj::dom::object obj;
    if (r.get(obj) != sj::SUCCESS)
      return where() + ": expected an object";
    record_fields f;
    for (auto [name, v] : obj) {
      if (name == "key")
        f.key = v;
      else if (name == "key_base64")
        f.key_base64 = v;
      else if (name == "value")
        f.value = v;
      else if (name == "value_base64")
        f.value_base64 = v;
      else if (name == "partition")
        f.partition = v;
      else if (name == "headers")
        f.headers = v;
    }
    storage::record rec;
    rec.timestamp_ms = now_ms;
    std::optional<std::string> value;
    if (auto e = read_bytes(f.key, f.key_base64, "key", where, false, rec.key); !e.empty())
      return e;
    if (auto e = read_bytes(f.value, f.value_base64, "value", where, true, value); !e.empty())
      return e;
    rec.value = std::move(*value);
    if (present(f.headers))
      if (auto e = read_headers(*f.headers, where(), rec.headers); !e.empty())
        return e;
    int32_t p = -1;
    if (present(f.partition)) {
      int64_t v = 0;
      uint64_t big = 0;
      if (f.partition->get(v) != sj::SUCCESS) {
        if (f.partition->get(big) == sj::SUCCESS)
          return where() + ".partition: " + std::to_string(big) + " is not a partition of this topic (0.."
                 + std::to_string(partitions - 1) + ")";
        return where() + ".partition: expected an integer, got " + type_name(*f.partition);
      }
      if (v < 0 || v >= partitions)
        return where() + ".partition: " + std::to_string(v) + " is not a partition of this topic (0.."
               + std::to_string(partitions - 1) + ")";
      p = static_cast<int32_t>(v);
    } else {
      p = default_partition(rec.key, partitions, sticky_partition);
    }
    out.add(p, std::move(rec));
  }
  return {};
}

void produce_plan::add(int32_t p, storage::record rec) {
  auto& batch = by_partition[p];
  placement.emplace_back(p, static_cast<int32_t>(batch.size()));
  batch.push_back(std::move(rec));
}

int32_t default_partition(const std::optional<std::string>& key, int32_t partitions, int32_t sticky_partition) {
  return key ? partition_for_key(*key, partitions) : sticky_partition;
}

namespace {
void put_bytes(json& j, const char* name, std::optional<std::string_view> v) {
  if (!v) {
    j[name] = nullptr;
  } else if (is_utf8(*v)) {
    j[name] = std::string(*v);
  } else {
    j[std::string(name) + "_base64"] = base64_encode(*v);
  }
}
}  // namespace

std::string offsets_json(const std::vector<std::pair<int32_t, int32_t>>& placement,
                         const std::map<int32_t, int64_t>& base_of) {
  std::string out = "{\"offsets\":[";
  out.reserve(out.size() + placement.size() * 36 + 2);
  char num[24];
  auto put = [&](int64_t v) {
    auto end = std::to_chars(num, num + sizeof num, v).ptr;
    out.append(num, static_cast<size_t>(end - num));
  };
  for (size_t i = 0; i < placement.size(); ++i) {
    const auto& [p, idx] = placement[i];
    out += i == 0 ? "{\"offset\":" : ",{\"offset\":";
    put(base_of.at(p) + idx);
    out += ",\"partition\":";
    put(p);
    out += '}';
  }
  out += "]}";
  return out;
}

int64_t for_each_fetched(std::string_view batches, int64_t from, size_t max_records,
                         const std::function<void(const storage::record_view&)>& fn,
                         storage::committed_filter* committed) {
  int64_t next = from;
  size_t passed = 0;
  while (!batches.empty() && passed < max_records) {
    auto view = storage::batch_view::parse(batches, false);
    if (!view)
      break;
    auto size = view->size();
    // Every batch goes through the filter, in offset order, so that it
    // sees each aborted transaction's marker.
    bool skip = view->is_control();
    if (committed) {
      auto head = storage::peek_batch_header(view->bytes());
      skip = !head || committed->skip(*head) || skip;
    }
    if (view->last_offset().value >= next && skip) {
      next = view->last_offset().value + 1;  // markers, aborted records: never client records
    } else if (view->last_offset().value >= next) {
      auto records = storage::decode_records(*view);
      if (!records) {
        next = view->last_offset().value + 1;  // compressed: not representable as records here
      } else {
        for (const auto& r : *records) {
          if (r.off.value < next)
            continue;
          if (passed >= max_records)
            break;
          fn(r);
          ++passed;
          next = r.off.value + 1;
        }
      }
    }
    batches.remove_prefix(size);
  }
  return next;
}

json record_json(const storage::record_view& r) {
  json j{{"offset", r.off.value}, {"timestamp", r.timestamp_ms}};
  put_bytes(j, "key", r.key);
  put_bytes(j, "value", r.value);
  if (!r.headers.empty()) {
    json hs = json::array();
    for (const auto& [k, v] : r.headers) {
      json h = json::object();
      put_bytes(h, "key", k);  // a name written by a Kafka client may not be UTF-8
      put_bytes(h, "value", v);
      hs.push_back(std::move(h));
    }
    j["headers"] = std::move(hs);
  }
  return j;
}

int64_t records_to_json(std::string_view batches, int64_t from, size_t max_records, json& out) {
  return for_each_fetched(batches, from, max_records,
                          [&out](const storage::record_view& r) { out.push_back(record_json(r)); });
}

namespace {

void put_int(std::string& out, int64_t v) {
  char num[24];
  auto end = std::to_chars(num, num + sizeof num, v).ptr;
  out.append(num, static_cast<size_t>(end - num));
}

/// `s` as a JSON string (valid UTF-8, written as is) the way nlohmann's
/// dump() escapes it.
void put_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  size_t run = 0;  // start of the bytes not yet copied
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
        out.append(u, 6);
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

/// `"name":` plus the bytes (text, or `"name_base64":` and base64, or null),
/// as put_bytes puts them into a JSON object.
void put_bytes_text(std::string& out, std::string_view name, std::optional<std::string_view> v) {
  out += '"';
  out += name;
  if (!v) {
    out += "\":null";
  } else if (is_utf8(*v)) {
    out += "\":";
    put_string(out, *v);
  } else {
    out += "_base64\":\"";
    out += base64_encode(*v);
    out += '"';
  }
}

}  // namespace

int64_t fetch_answer_json(std::string_view batches, int64_t from, size_t max_records, int64_t log_start_offset,
                          int64_t log_end_offset, std::string& out, storage::committed_filter* committed,
                          int64_t last_stable_offset) {
  // The records go first into their own buffer: next_offset, known only
  // after them, comes before "records" in key order.
  std::string records;
  records.reserve(batches.size() + batches.size() / 8);
  bool first = true;
  auto next = for_each_fetched(batches, from, max_records, [&](const storage::record_view& r) {
    records += first ? "{" : ",{";
    first = false;
    if (!r.headers.empty()) {
      records += "\"headers\":[";
      for (size_t i = 0; i < r.headers.size(); ++i) {
        records += i == 0 ? "{" : ",{";
        put_bytes_text(records, "key", r.headers[i].first);
        records += ',';
        put_bytes_text(records, "value", r.headers[i].second);
        records += '}';
      }
      records += "],";
    }
    put_bytes_text(records, "key", r.key);
    records += ",\"offset\":";
    put_int(records, r.off.value);
    records += ",\"timestamp\":";
    put_int(records, r.timestamp_ms);
    records += ',';
    put_bytes_text(records, "value", r.value);
    records += '}';
  }, committed);
  out.clear();
  out.reserve(records.size() + 130);
  out += '{';
  if (last_stable_offset >= 0) {
    out += "\"last_stable_offset\":";
    put_int(out, last_stable_offset);
    out += ',';
  }
  out += "\"log_end_offset\":";
  put_int(out, log_end_offset);
  out += ",\"log_start_offset\":";
  put_int(out, log_start_offset);
  out += ",\"next_offset\":";
  put_int(out, next);
  out += ",\"records\":[";
  out += records;
  out += "]}";
  return next;
}

}  // namespace moonmq::dataplane

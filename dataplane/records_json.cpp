#include "dataplane/records_json.hpp"

#include <openssl/evp.h>

#include <charconv>
#include <cstring>

#include <nlohmann/json.hpp>

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

/// Reads `name` or `name_base64` from `obj`; "" or an error.
std::string read_bytes(const json& obj, const std::string& name, const std::string& where, bool required,
                       std::optional<std::string>& out) {
  auto plain = obj.find(name);
  auto b64 = obj.find(name + "_base64");
  if (plain != obj.end() && !plain->is_null()) {
    if (!plain->is_string())
      return where + "." + name + ": expected a string";
    out = plain->get<std::string>();
  } else if (b64 != obj.end() && !b64->is_null()) {
    std::string decoded;
    if (!b64->is_string() || !base64_decode(b64->get_ref<const std::string&>(), decoded))
      return where + "." + name + "_base64: expected base64 text";
    out = std::move(decoded);
  } else if (required) {
    return where + ": needs \"" + name + "\" or \"" + name + "_base64\"";
  }
  return {};
}

std::string read_headers(const json& rec, const std::string& where, std::vector<storage::record_header>& out) {
  auto it = rec.find("headers");
  if (it == rec.end() || it->is_null())
    return {};
  if (it->is_object()) {
    for (auto h = it->begin(); h != it->end(); ++h) {
      if (!h->is_string())
        return where + ".headers." + h.key() + ": expected a string";
      out.push_back({h.key(), h->get<std::string>()});
    }
    return {};
  }
  if (!it->is_array())
    return where + ".headers: expected an object or an array";
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& h = (*it)[i];
    auto hw = where + ".headers[" + std::to_string(i) + "]";
    if (!h.is_object() || !h.contains("key") || !h["key"].is_string())
      return hw + ": expected {\"key\":...,\"value\":...}";
    std::optional<std::string> value;
    if (auto e = read_bytes(h, "value", hw, false, value); !e.empty())
      return e;
    out.push_back({h["key"].get<std::string>(), value});
  }
  return {};
}

}  // namespace

std::string parse_produce(const json& body, int32_t partitions, int32_t sticky_partition, int64_t now_ms,
                          produce_plan& out) {
  if (!body.is_object() || !body.contains("records") || !body["records"].is_array())
    return "body must be {\"records\":[...]}";
  const auto& recs = body["records"];
  if (recs.empty())
    return "records must not be empty";
  for (size_t i = 0; i < recs.size(); ++i) {
    const auto& r = recs[i];
    auto where = "records[" + std::to_string(i) + "]";
    if (!r.is_object())
      return where + ": expected an object";
    storage::record rec;
    rec.timestamp_ms = now_ms;
    std::optional<std::string> value;
    if (auto e = read_bytes(r, "key", where, false, rec.key); !e.empty())
      return e;
    if (auto e = read_bytes(r, "value", where, true, value); !e.empty())
      return e;
    rec.value = std::move(*value);
    if (auto e = read_headers(r, where, rec.headers); !e.empty())
      return e;
    int32_t p = -1;
    auto pit = r.find("partition");
    if (pit != r.end() && !pit->is_null()) {
      if (!pit->is_number_integer())
        return where + ".partition: expected an integer";
      auto v = pit->get<int64_t>();
      if (v < 0 || v >= partitions)
        return where + ".partition: " + std::to_string(v) + " is not a partition of this topic (0.."
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
                         const std::function<void(const storage::record_view&)>& fn) {
  int64_t next = from;
  size_t passed = 0;
  while (!batches.empty() && passed < max_records) {
    auto view = storage::batch_view::parse(batches, false);
    if (!view)
      break;
    auto size = view->size();
    if (view->last_offset().value >= next) {
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
                          int64_t log_end_offset, std::string& out) {
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
  });
  out.clear();
  out.reserve(records.size() + 100);
  out += "{\"log_end_offset\":";
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

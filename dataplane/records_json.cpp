#include "dataplane/records_json.hpp"

#include <openssl/evp.h>

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
    int32_t p = sticky_partition;
    auto pit = r.find("partition");
    if (pit != r.end() && !pit->is_null()) {
      if (!pit->is_number_integer())
        return where + ".partition: expected an integer";
      auto v = pit->get<int64_t>();
      if (v < 0 || v >= partitions)
        return where + ".partition: " + std::to_string(v) + " is not a partition of this topic (0.."
               + std::to_string(partitions - 1) + ")";
      p = static_cast<int32_t>(v);
    } else if (rec.key) {
      p = partition_for_key(*rec.key, partitions);
    }
    auto& batch = out.by_partition[p];
    out.placement.emplace_back(p, static_cast<int32_t>(batch.size()));
    batch.push_back(std::move(rec));
  }
  return {};
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

int64_t records_to_json(std::string_view batches, int64_t from, size_t max_records, json& out) {
  int64_t next = from;
  while (!batches.empty() && out.size() < max_records) {
    auto view = storage::batch_view::parse(batches, false);
    if (!view)
      break;
    auto size = view->size();
    if (view->last_offset().value >= next) {
      auto records = storage::decode_records(*view);
      if (!records) {
        next = view->last_offset().value + 1;  // compressed: not representable as JSON records
      } else {
        for (const auto& r : *records) {
          if (r.off.value < next)
            continue;
          if (out.size() >= max_records)
            break;
          json j{{"offset", r.off.value}, {"timestamp", r.timestamp_ms}};
          put_bytes(j, "key", r.key);
          put_bytes(j, "value", r.value);
          if (!r.headers.empty()) {
            json hs = json::array();
            for (const auto& [k, v] : r.headers) {
              json h{{"key", std::string(k)}};
              put_bytes(h, "value", v);
              hs.push_back(std::move(h));
            }
            j["headers"] = std::move(hs);
          }
          out.push_back(std::move(j));
          next = r.off.value + 1;
        }
      }
    }
    batches.remove_prefix(size);
  }
  return next;
}

}  // namespace moonmq::dataplane

// model_from_text: the partitions array (nearly all of a large model) is read
// with simdjson's On-Demand API, straight from the text into replica_specs;
// every other top-level field is handed to nlohmann and read by the same
// code as model_from_json (model_json_fields.hpp). The On-Demand reader
// takes only text it can read exactly as nlohmann would. It gives up, and
// the whole text is read again by the nlohmann reader, on any error (syntax,
// a wrong type, a missing field), a -0 load amount, a duplicate or
// escaped known key inside a partition (topic, partition, owner, load; in
// "load": nw_in, nw_out, disk) or a second "partitions"; so accepted models
// and error messages are exactly model_from_json's. Unknown keys and other
// top-level keys may repeat or be escaped: nlohmann keeps the last value,
// and so does this reader.

#include <simdjson.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "goals/model_json.hpp"
#include "goals/model_json_fields.hpp"

namespace moonmq::goals {
namespace {

namespace od = simdjson::ondemand;
using json = nlohmann::json;

/// The JSON text of `v` (all of it for an object or an array, the token for
/// a scalar), consumed; false on a simdjson error. A scalar is read by its
/// type's getter: a value left unread is skipped loosely, and what follows
/// it would go unchecked (`"goals":"x":{}` would pass).
bool raw_text(od::value v, std::string_view& out) {
  od::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return false;
  switch (type) {
    case od::json_type::object: {
      od::object o;
      return v.get_object().get(o) == simdjson::SUCCESS && o.raw_json().get(out) == simdjson::SUCCESS;
    }
    case od::json_type::array: {
      od::array a;
      return v.get_array().get(a) == simdjson::SUCCESS && a.raw_json().get(out) == simdjson::SUCCESS;
    }
    case od::json_type::string: {
      out = v.raw_json_token();
      std::string_view s;
      return v.get_string().get(s) == simdjson::SUCCESS;
    }
    case od::json_type::number: {
      out = v.raw_json_token();
      double d = 0.0;
      return v.get_double().get(d) == simdjson::SUCCESS;
    }
    case od::json_type::boolean: {
      out = v.raw_json_token();
      bool b = false;
      return v.get_bool().get(b) == simdjson::SUCCESS;
    }
    case od::json_type::null: {
      out = v.raw_json_token();
      bool null = false;
      return v.is_null().get(null) == simdjson::SUCCESS && null;
    }
  }
  return false;
}

/// A field the reader ignores: true when its key, unescaped, is none of
/// `known` (a duplicate under another spelling would change which value
/// counts) and its value is valid JSON (On-Demand skips values unchecked).
template <std::size_t N>
bool ignorable(od::field& f, const std::array<std::string_view, N>& known) {
  std::string_view key, raw;
  if (f.unescaped_key().get(key) != simdjson::SUCCESS) return false;
  for (auto k : known)
    if (key == k) return false;
  return raw_text(f.value(), raw) && json::accept(raw);
}

/// A load amount as model_from_json takes it: a finite number >= 0. A zero
/// with its sign bit set is left to the DOM reader, which reads "-0" as the
/// integer 0 but "-0.0" as the double -0.0.
bool amount(od::value v, double& out) {
  if (v.get_double().get(out) != simdjson::SUCCESS) return false;
  return std::isfinite(out) && out >= 0.0 && !(out == 0.0 && std::signbit(out));
}

/// The string `v` into `out`, once: false when `seen` already. A string
/// without escapes is copied from the text itself (simdjson has checked
/// its UTF-8 and control characters), not unescaped through the parser's
/// string buffer: one less write of every topic and owner name.
bool string_once(od::value v, bool& seen, std::string& out) {
  if (seen) return false;
  seen = true;
  const std::string_view token = v.raw_json_token();  // "...", then any whitespace
  if (token.size() >= 2 && token.front() == '"') {
    const std::string_view body = token.substr(1, token.find_last_of('"') - 1);
    od::raw_json_string raw;
    if (body.find('\\') == std::string_view::npos && v.get_raw_json_string().get(raw) == simdjson::SUCCESS) {
      out.assign(body);
      return true;
    }
  }
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) return false;
  out.assign(s);
  return true;
}

/// The "load" object (or null) of one partition.
bool read_load(od::value v, std::array<double, kMeasuredResources>& load) {
  static constexpr std::array<std::string_view, kMeasuredResources> keys{"nw_in", "nw_out", "disk"};
  bool null = false;
  if (v.is_null().get(null) != simdjson::SUCCESS) return false;
  if (null) return true;
  od::object o;
  if (v.get_object().get(o) != simdjson::SUCCESS) return false;
  std::array<bool, kMeasuredResources> seen{};
  for (auto f : o) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return false;
    const od::raw_json_string key = field.key();
    std::size_t r = 0;
    while (r < keys.size() && !(key == keys[r])) ++r;
    if (r == keys.size()) {
      if (!ignorable(field, keys)) return false;
    } else if (seen[r] || !amount(field.value(), load[r])) {
      return false;
    } else {
      seen[r] = true;
    }
  }
  return true;
}

/// One element of "partitions".
bool read_replica(od::value v, replica_spec& spec) {
  static constexpr std::array<std::string_view, 4> keys{"topic", "partition", "owner", "load"};
  od::object o;
  if (v.get_object().get(o) != simdjson::SUCCESS) return false;
  bool topic = false, partition = false, owner = false, load = false;
  for (auto f : o) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return false;
    const od::raw_json_string key = field.key();
    if (key == "topic") {
      if (!string_once(field.value(), topic, spec.topic)) return false;
    } else if (key == "owner") {
      if (!string_once(field.value(), owner, spec.owner)) return false;
    } else if (key == "partition") {
      std::int64_t p = 0;
      if (partition || field.value().get_int64().get(p) != simdjson::SUCCESS || p < 0 ||
          p > std::numeric_limits<std::int32_t>::max())
        return false;
      partition = true;
      spec.partition = static_cast<std::int32_t>(p);
    } else if (key == "load") {
      if (load || !read_load(field.value(), spec.load)) return false;
      load = true;
    } else if (!ignorable(field, keys)) {
      return false;
    }
  }
  return topic && partition && owner;
}

/// Reads the partitions into m.replicas and every other top-level field
/// into `rest`, parsed by nlohmann. False when the text is not one the
/// On-Demand reader takes (see the file comment); m and rest are then
/// partly filled and to be dropped.
bool read_on_demand(std::string_view text, std::size_t readable_after, cluster_model& m, json& rest) {
  static_assert(kModelTextPadding >= simdjson::SIMDJSON_PADDING);
  std::optional<simdjson::padded_string> copy;
  simdjson::padded_string_view input;
  if (readable_after >= kModelTextPadding) {
    input = simdjson::padded_string_view(text.data(), text.size(), text.size() + readable_after);
  } else {
    copy.emplace(text.data(), text.size());
    input = *copy;
  }
  od::parser parser;
  od::document doc;
  od::object root;
  if (parser.iterate(input).get(doc) != simdjson::SUCCESS || doc.get_object().get(root) != simdjson::SUCCESS)
    return false;
  bool partitions = false;
  for (auto f : root) {
    od::field field;
    std::string_view key;
    if (std::move(f).get(field) != simdjson::SUCCESS || field.unescaped_key().get(key) != simdjson::SUCCESS)
      return false;
    if (key == "partitions") {
      od::array list;
      std::size_t count = 0;
      if (partitions || field.value().get_array().get(list) != simdjson::SUCCESS ||
          list.count_elements().get(count) != simdjson::SUCCESS)
        return false;
      partitions = true;
      m.replicas.reserve(count);
      for (auto e : list) {
        od::value v;
        if (e.get(v) != simdjson::SUCCESS || !read_replica(v, m.replicas.emplace_back())) return false;
      }
    } else {
      std::string name(key);
      std::string_view raw;
      if (!raw_text(field.value(), raw)) return false;
      json value = json::parse(raw, nullptr, false);
      if (value.is_discarded()) return false;
      rest[name] = std::move(value);  // a repeated key keeps its last value, as nlohmann's parse does
    }
  }
  // Nothing but whitespace may follow the model object.
  const char* after = nullptr;
  return partitions && doc.current_location().get(after) == simdjson::OUT_OF_BOUNDS;
}

}  // namespace

outcome<cluster_model> model_from_text(std::string_view text, std::size_t readable_after) {
  cluster_model m;
  json rest = json::object();
  if (!read_on_demand(text, readable_after, m, rest)) return detail::model_from_dom_text(text);
  // The partitions were read without an error, so the first error (if any)
  // is in the same place model_from_json finds it.
  return detail::read_model_fields(rest, std::move(m), detail::partitions_source::already_read);
}

}  // namespace moonmq::goals

#include "cluster/forwarded_produce.hpp"

#include <nlohmann/json.hpp>

namespace moonmq::cluster {
namespace {

void put_i32(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

int32_t get_i32(std::string_view in, size_t at) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(in[at + i])); };
  return static_cast<int32_t>(b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3));
}

constexpr size_t frame_header = forwarded_part_header_bytes;

}  // namespace

void append_forwarded_part(std::string& body, int32_t partition, std::string_view batch) {
  put_i32(body, static_cast<uint32_t>(partition));
  put_i32(body, static_cast<uint32_t>(batch.size()));
  body += batch;
}

std::string encode_forwarded_parts(const std::vector<forwarded_part>& parts) {
  size_t size = 0;
  for (const auto& p : parts)
    size += forwarded_part_bytes(p.batch.size());
  std::string out;
  out.reserve(size);
  for (const auto& p : parts)
    append_forwarded_part(out, p.partition, p.batch);
  return out;
}

std::string decode_forwarded_parts(std::string_view body, std::vector<forwarded_part>& out) {
  out.clear();
  if (body.empty())
    return "the body holds no part";
  size_t at = 0;
  while (at < body.size()) {
    auto fail = [&](const std::string& why) {
      auto index = out.size();
      out.clear();
      return "part " + std::to_string(index) + " at byte " + std::to_string(at) + ": " + why;
    };
    if (body.size() - at < frame_header)
      return fail("cut short in its 8-byte header");
    auto partition = get_i32(body, at);
    auto length = get_i32(body, at + 4);
    if (partition < 0)
      return fail("negative partition " + std::to_string(partition));
    if (length < 0)
      return fail("negative length " + std::to_string(length));
    if (body.size() - at - frame_header < static_cast<size_t>(length))
      return fail("its batch of " + std::to_string(length) + " bytes runs past the body's end");
    out.push_back({partition, std::string{body.substr(at + frame_header, static_cast<size_t>(length))}});
    at += frame_header + static_cast<size_t>(length);
  }
  return {};
}

std::string encode_forwarded_answers(const std::vector<forwarded_answer>& answers) {
  auto parts = nlohmann::json::array();
  for (const auto& a : answers) {
    if (a.status == 200) {
      parts.push_back({{"partition", a.partition}, {"base_offset", a.base_offset}});
      continue;
    }
    nlohmann::json entry{{"partition", a.partition}, {"status", a.status}, {"error", a.error}, {"message", a.message}};
    if (!a.owner.empty())
      entry["owner"] = a.owner;
    parts.push_back(std::move(entry));
  }
  return nlohmann::json{{"parts", std::move(parts)}}.dump();
}

std::string decode_forwarded_answers(std::string_view body, const std::vector<int32_t>& partitions,
                                     std::vector<forwarded_answer>& out) {
  out.clear();
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("parts") || !j["parts"].is_array())
    return "the answer is not {\"parts\":[...]}";
  const auto& list = j["parts"];
  if (list.size() != partitions.size())
    return "the answer has " + std::to_string(list.size()) + " parts for " + std::to_string(partitions.size()) + " sent";
  auto text = [](const nlohmann::json& e, const char* key) {
    return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string{};
  };
  for (size_t i = 0; i < partitions.size(); ++i) {
    const auto& e = list[i];
    auto fail = [&](const std::string& why) {
      out.clear();
      return "answer part " + std::to_string(i) + ": " + why;
    };
    if (!e.is_object() || !e.contains("partition") || !e["partition"].is_number_integer()
        || e["partition"].get<int64_t>() != partitions[i])
      return fail("not an entry for partition " + std::to_string(partitions[i]));
    forwarded_answer a;
    a.partition = partitions[i];
    if (e.contains("status")) {
      if (!e["status"].is_number_integer() || e["status"].get<int64_t>() < 100 || e["status"].get<int64_t>() > 599)
        return fail("status is not an HTTP status");
      a.status = e["status"].get<int>();
    }
    if (a.status == 200) {
      if (!e.contains("base_offset") || !e["base_offset"].is_number_integer() || e["base_offset"].get<int64_t>() < 0)
        return fail("appended without a base offset");
      a.base_offset = e["base_offset"].get<int64_t>();
    } else {
      a.error = text(e, "error");
      a.message = text(e, "message");
      a.owner = text(e, "owner");
    }
    out.push_back(std::move(a));
  }
  return {};
}

}  // namespace moonmq::cluster

#include <poll.h>
#include <unistd.h>

#include <iostream>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dataplane/records_binary.hpp"
#include "dataplane/records_json.hpp"
#include "tools/moonmqctl/commands.hpp"
#include "transport/blocking_client.hpp"

namespace moonmq::ctl {
namespace {

using json = nlohmann::json;

/// A line split into key and value at the first separator (no key without
/// a separator, or when the line has none).
struct split_line {
  std::optional<std::string_view> key;
  std::string_view value;
};

split_line split(std::string_view line, const produce_options& o) {
  if (!o.key_separator.empty())
    if (auto at = line.find(o.key_separator); at != std::string_view::npos)
      return {line.substr(0, at), line.substr(at + o.key_separator.size())};
  return {std::nullopt, line};
}

json record_of(const std::string& line, const produce_options& o) {
  json r = json::object();
  auto parts = split(line, o);
  auto put = [&](const char* name, std::string_view bytes) {
    if (dataplane::is_utf8(bytes))
      r[name] = std::string(bytes);
    else
      r[std::string(name) + "_base64"] = dataplane::base64_encode(bytes);
  };
  if (parts.key)
    put("key", *parts.key);
  put("value", parts.value);
  if (o.partition >= 0)
    r["partition"] = o.partition;
  return r;
}

/// The request body for `lines` in the form of `o`, and its Content-Type.
std::string body_of(const std::vector<std::string>& lines, const produce_options& o, transport::header_list& headers) {
  if (o.form == "json") {
    json records = json::array();
    for (const auto& l : lines)
      records.push_back(record_of(l, o));
    headers = {{"Content-Type", "application/json"}};
    return json{{"records", records}}.dump();
  }
  std::string body;
  dataplane::produce_body_writer w{body};
  for (const auto& l : lines) {
    auto parts = split(l, o);
    w.add(o.partition, parts.key, parts.value);
  }
  w.finish();
  headers = {{"Content-Type", std::string(dataplane::records_binary_type)}};
  return body;
}

/// Sends `lines`; prints offsets when asked. false on failure (printed).
bool send(transport::http_connection& conn, const produce_options& o, std::vector<std::string>& lines) {
  if (lines.empty())
    return true;
  transport::header_list headers;
  auto body = body_of(lines, o, headers);
  auto res = conn.call("POST", "/v1/topics/" + o.topic + "/records?acks=" + o.acks, body, std::chrono::seconds(30),
                       headers);
  if (res.status != 200) {
    std::cerr << "moonmqctl: produce failed: " << (res.status ? std::to_string(res.status) + " " + res.body : res.error)
              << "\n";
    return false;
  }
  if (o.print_offsets) {
    auto offsets = json::parse(res.body, nullptr, false);
    if (offsets.is_discarded() || !offsets.contains("offsets")) {
      std::cerr << "moonmqctl: malformed produce answer: " << res.body << "\n";
      return false;
    }
    const auto& list = offsets["offsets"];
    for (size_t i = 0; i < list.size() && i < lines.size(); ++i)
      std::cout << list[i]["partition"].get<int>() << '\t' << list[i]["offset"].get<int64_t>() << '\t' << lines[i]
                << '\n';
    std::cout.flush();
  }
  lines.clear();
  return true;
}

}  // namespace

int produce(const endpoint& ep, const produce_options& o) {
  transport::http_connection conn{ep.host, ep.port};
  std::vector<std::string> lines;
  std::string buffer;
  char chunk[65536];
  bool eof = false;
  while (!eof) {
    // Read what is there; send a batch when it is full or stdin has nothing
    // more right now (so a slow producer's lines are not held back).
    pollfd pfd{0, POLLIN, 0};
    int ready = ::poll(&pfd, 1, lines.empty() ? -1 : 0);
    if (ready == 0) {
      if (!send(conn, o, lines))
        return 1;
      continue;
    }
    auto n = ::read(0, chunk, sizeof chunk);
    if (n <= 0) {
      eof = true;
    } else {
      buffer.append(chunk, static_cast<size_t>(n));
    }
    size_t start = 0;
    for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n', start)) {
      lines.push_back(buffer.substr(start, nl - start));
      start = nl + 1;
      if (static_cast<int>(lines.size()) >= o.batch && !send(conn, o, lines))
        return 1;
    }
    buffer.erase(0, start);
    if (eof && !buffer.empty()) {
      lines.push_back(buffer);
      buffer.clear();
    }
  }
  return send(conn, o, lines) ? 0 : 1;
}

}  // namespace moonmq::ctl

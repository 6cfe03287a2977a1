#include <poll.h>
#include <unistd.h>

#include <cstring>
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

json record_of(std::string_view line, const produce_options& o) {
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

/// The request body for `lines` in the form of `o` into `body`, and its
/// Content-Type.
void body_of(const std::vector<std::string_view>& lines, const produce_options& o, std::string& body,
             transport::header_list& headers) {
  if (o.form == "json") {
    json records = json::array();
    for (const auto& l : lines)
      records.push_back(record_of(l, o));
    headers = {{"Content-Type", "application/json"}};
    body = json{{"records", records}}.dump();
    return;
  }
  dataplane::produce_body_writer w{body};
  for (const auto& l : lines) {
    auto parts = split(l, o);
    w.add(o.partition, parts.key, parts.value);
  }
  w.finish();
  headers = {{"Content-Type", std::string(dataplane::records_binary_type)}};
}

/// Sends `lines` in `body` (reused from request to request); prints
/// offsets when asked. false on failure (printed). A broker without the
/// binary form reads its body as JSON and refuses it (400 malformed_json,
/// nothing written): `o.form` turns to json and the lines are sent again.
bool send(transport::http_connection& conn, produce_options& o, const std::vector<std::string_view>& lines,
          std::string& body) {
  if (lines.empty())
    return true;
  transport::header_list headers;
  body_of(lines, o, body, headers);
  auto target = "/v1/topics/" + o.topic + "/records?acks=" + o.acks;
  auto res = conn.call("POST", target, body, std::chrono::seconds(30), headers);
  auto refused = res.status == 400 ? json::parse(res.body, nullptr, false) : json{};
  if (o.form == "binary" && refused.is_object() && refused.value("error", std::string{}) == "malformed_json") {
    std::cerr << "moonmqctl: the broker does not take the binary form; producing in JSON\n";
    o.form = "json";
    body_of(lines, o, body, headers);
    res = conn.call("POST", target, body, std::chrono::seconds(30), headers);
  }
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
  return true;
}

/// Bytes asked of each read(2) of stdin.
constexpr size_t read_bytes = 1 << 20;

}  // namespace

int produce(const endpoint& ep, const produce_options& options) {
  auto o = options;  // the form may fall back to json (send)
  transport::http_connection conn{ep.host, ep.port};
  // stdin bytes in `buffer`: [0, consumed) sent, [consumed, line_start)
  // split into the lines of `spans` (offset, length) not sent yet,
  // [line_start, used) the start of the next line.
  std::vector<char> buffer(2 * read_bytes);
  size_t used = 0, consumed = 0, line_start = 0;
  std::vector<std::pair<size_t, size_t>> spans;
  std::vector<std::string_view> lines;
  std::string body;
  auto flush = [&] {
    lines.clear();
    for (const auto& [at, n] : spans)
      lines.emplace_back(buffer.data() + at, n);
    if (!send(conn, o, lines, body))
      return false;
    spans.clear();
    consumed = line_start;
    return true;
  };
  bool eof = false;
  while (!eof) {
    // Read what is there; send a batch when it is full or stdin has nothing
    // more right now (so a slow producer's lines are not held back).
    pollfd pfd{0, POLLIN, 0};
    int ready = ::poll(&pfd, 1, spans.empty() ? -1 : 0);
    if (ready == 0) {
      if (!flush())
        return 1;
      continue;
    }
    if (buffer.size() - used < read_bytes) {
      // Make room: drop what was sent, then grow if a batch still needs more.
      if (consumed > 0) {
        std::memmove(buffer.data(), buffer.data() + consumed, used - consumed);
        for (auto& span : spans)
          span.first -= consumed;
        used -= consumed;
        line_start -= consumed;
        consumed = 0;
      }
      if (buffer.size() - used < read_bytes)
        buffer.resize(used + read_bytes);
    }
    auto n = ::read(0, buffer.data() + used, read_bytes);
    if (n <= 0)
      eof = true;
    else
      used += static_cast<size_t>(n);
    for (;;) {
      auto* nl = static_cast<const char*>(std::memchr(buffer.data() + line_start, '\n', used - line_start));
      if (!nl)
        break;
      auto end = static_cast<size_t>(nl - buffer.data());
      spans.emplace_back(line_start, end - line_start);
      line_start = end + 1;
      if (static_cast<int>(spans.size()) >= o.batch && !flush())
        return 1;
    }
    if (eof && line_start < used) {
      spans.emplace_back(line_start, used - line_start);
      line_start = used;
    }
  }
  return flush() ? 0 : 1;
}

}  // namespace moonmq::ctl

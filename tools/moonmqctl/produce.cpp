#include <poll.h>
#include <unistd.h>

#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "dataplane/records_json.hpp"
#include "tools/moonmqctl/commands.hpp"
#include "transport/blocking_client.hpp"

namespace moonmq::ctl {
namespace {

using json = nlohmann::json;

json record_of(const std::string& line, const produce_options& o) {
  json r = json::object();
  std::string key, value = line;
  bool keyed = false;
  if (!o.key_separator.empty()) {
    auto at = line.find(o.key_separator);
    if (at != std::string::npos) {
      key = line.substr(0, at);
      value = line.substr(at + o.key_separator.size());
      keyed = true;
    }
  }
  auto put = [&](const char* name, const std::string& bytes) {
    if (dataplane::is_utf8(bytes))
      r[name] = bytes;
    else
      r[std::string(name) + "_base64"] = dataplane::base64_encode(bytes);
  };
  if (keyed)
    put("key", key);
  put("value", value);
  if (o.partition >= 0)
    r["partition"] = o.partition;
  return r;
}

/// Sends `lines`; prints offsets when asked. false on failure (printed).
bool send(transport::http_connection& conn, const produce_options& o, std::vector<std::string>& lines) {
  if (lines.empty())
    return true;
  json records = json::array();
  for (const auto& l : lines)
    records.push_back(record_of(l, o));
  auto res = conn.call("POST", "/v1/topics/" + o.topic + "/records?acks=" + o.acks,
                       json{{"records", records}}.dump(), std::chrono::seconds(30));
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

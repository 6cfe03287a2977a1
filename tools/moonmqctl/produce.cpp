#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <iostream>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dataplane/records_binary.hpp"
#include "dataplane/records_json.hpp"
#include "tools/moonmqctl/commands.hpp"
#include "net/blocking_client.hpp"

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

/// One produce request of `lines` (a copy of them when offsets are
/// printed: the stdin buffer moves on before the answer comes).
struct sent_batch {
  std::vector<std::string> lines;
};

/// Prints the answer of `batch`, or why it failed; false on failure.
bool settle(const transport::http_result& res, const sent_batch& batch, const produce_options& o) {
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
    for (size_t i = 0; i < list.size() && i < batch.lines.size(); ++i)
      std::cout << list[i]["partition"].get<int>() << '\t' << list[i]["offset"].get<int64_t>() << '\t'
                << batch.lines[i] << '\n';
    std::cout.flush();
  }
  return true;
}

/// Produce requests pipelined on one connection (o.in_flight at most
/// unanswered; 1 by default): the broker appends a connection's produce
/// requests in the order sent, and their fsyncs share the I/O workers' sync
/// rounds. With more than one in flight, a partition move's cutover may
/// reorder two of them to the same partition (docs/client-api.md
/// "Pipelining"); with one, each partition keeps the order of the lines.
class producer {
public:
  explicit producer(const endpoint& ep, produce_options& o)
    : o_(o), pipe_(ep.host, ep.port, o.in_flight, std::chrono::seconds(30)) {}

  /// Sends `lines`; false on failure (printed). The first request is
  /// answered before any other is sent: a broker without the binary form
  /// reads its body as JSON and refuses it (400 malformed_json, nothing
  /// written), and then `o.form` turns to json and the lines are sent again.
  bool send(const std::vector<std::string_view>& lines) {
    if (lines.empty())
      return true;
    sent_batch batch;
    if (o_.print_offsets)
      batch.lines.assign(lines.begin(), lines.end());
    pipe_.send("POST", target(), body(lines), headers_);
    batches_.push_back(std::move(batch));
    if (!form_known_) {
      auto res = answer();
      auto refused = res.status == 400 ? json::parse(res.body, nullptr, false) : json{};
      if (o_.form == "binary" && refused.is_object() && refused.value("error", std::string{}) == "malformed_json") {
        std::cerr << "moonmqctl: the broker does not take the binary form; producing in JSON\n";
        o_.form = "json";
        pipe_.send("POST", target(), body(lines), headers_);
        res = answer();
      }
      form_known_ = true;
      return settle_one(res);
    }
    while (auto res = pipe_.next(false))
      if (!settle_one(*res))
        return false;
    return true;
  }

  /// Waits for every answer; false on a failure (printed).
  bool finish() {
    while (!batches_.empty())
      if (!settle_one(answer()))
        return false;
    return true;
  }

private:
  /// The oldest outstanding answer, waited for.
  transport::http_result answer() {
    if (auto res = pipe_.next(true))
      return std::move(*res);
    transport::http_result none;
    none.error = "no answer";
    return none;
  }

  std::string target() const { return "/v1/topics/" + o_.topic + "/records?acks=" + o_.acks; }

  /// The request body for `lines` in the form of `o_`; sets headers_.
  std::string body(const std::vector<std::string_view>& lines) {
    auto out = pipe_.spare_body();
    body_of(lines, o_, out, headers_);
    return out;
  }

  bool settle_one(const transport::http_result& res) {
    auto batch = std::move(batches_.front());
    batches_.pop_front();
    return settle(res, batch, o_);
  }

  produce_options& o_;
  transport::http_pipeline pipe_;
  transport::header_list headers_;
  std::deque<sent_batch> batches_;  ///< sent, not answered, in order
  bool form_known_ = false;
};

/// Bytes asked of each read(2) of stdin.
constexpr size_t read_bytes = 1 << 20;

}  // namespace

int produce(const endpoint& ep, const produce_options& options) {
  auto o = options;  // the form may fall back to json (producer::send)
  producer out{ep, o};
  // stdin bytes in `buffer`: [0, consumed) sent, [consumed, line_start)
  // split into the lines of `spans` (offset, length) not sent yet,
  // [line_start, used) the start of the next line.
  std::vector<char> buffer(2 * read_bytes);
  size_t used = 0, consumed = 0, line_start = 0;
  std::vector<std::pair<size_t, size_t>> spans;
  std::vector<std::string_view> lines;
  auto flush = [&] {
    lines.clear();
    for (const auto& [at, n] : spans)
      lines.emplace_back(buffer.data() + at, n);
    if (!out.send(lines))
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
    if (::poll(&pfd, 1, 0) == 0) {
      if (!spans.empty()) {
        if (!flush())
          return 1;
        continue;
      }
      // Nothing to send and stdin quiet: take every answer (and print its
      // offsets) before waiting for more lines.
      if (!out.finish())
        return 1;
      ::poll(&pfd, 1, -1);
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
  return flush() && out.finish() ? 0 : 1;
}

}  // namespace moonmq::ctl

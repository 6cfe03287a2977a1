#include "tests/kafka_node/kafka_client.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "storage/record_batch.hpp"
#include "tests/support/raw_http.hpp"

namespace moonmq::test {

std::pair<int, std::string> sh(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p)
    return {-1, ""};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int rc = pclose(p);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

std::pair<int, std::string> python_script(const std::string& dir, const std::string& name, const std::string& code) {
  {
    std::ofstream f(dir + "/" + name);
    f << code;
  }
  return sh("timeout 60 /usr/bin/python3 " + dir + "/" + name + " 2>&1");
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty())
      out.push_back(l);
  return out;
}

std::string kafka_exchange(uint16_t port, const std::string& frame, std::chrono::milliseconds timeout) {
  return raw_exchange_until(port, frame, timeout, [](const std::string& got) {
    if (got.size() < 4)
      return false;
    auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(got[i])); };
    return got.size() >= 4 + ((b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3));
  });
}

std::string request_frame(const kafka::request_body& body, int16_t version, int32_t correlation_id) {
  kafka::request_header h;
  h.api_version = version;
  h.correlation_id = correlation_id;
  h.client_id = "test";
  auto f = kafka::encode_request(h, body);
  if (!f)
    throw std::runtime_error("cannot encode the request: " + f.err().message);
  return f.value();
}

std::string produce_frame(const std::string& topic, std::string records) {
  kafka::produce_request p;
  p.acks = 1;
  p.timeout_ms = 5000;
  p.topics.push_back({topic, {{0, std::move(records)}}});
  return request_frame(p, 7);
}

std::string one_record_batch(const std::string& value, int64_t producer_id, int32_t sequence) {
  std::vector<storage::record> records(1);
  records[0].value = value;
  storage::batch_options o;
  if (producer_id >= 0) {
    o.producer_id = producer_id;
    o.producer_epoch = 0;
    o.base_sequence = sequence;
  }
  auto b = storage::encode_batch(records, o);
  if (!b)
    throw std::runtime_error("cannot encode the batch");
  return b.value();
}

int produce_error(const std::string& raw) { return produce_result(raw).first; }

std::pair<int, int64_t> produce_result(const std::string& raw) {
  if (raw.size() < 8)
    return {-100, -1};
  auto resp = kafka::decode_response(kafka::api_key::produce, 7, std::string_view(raw).substr(8));
  if (!resp)
    return {-100, -1};
  const auto& p = std::get<kafka::produce_response>(*resp).topics.at(0).partitions.at(0);
  return {p.error_code, p.base_offset};
}

}  // namespace moonmq::test

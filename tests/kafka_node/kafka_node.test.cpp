// The Kafka listener (issue 9) through a real moonmq-node: the kcat checks
// of ../shared/docs/KAFKA.md, HTTP <-> Kafka interop with keys and headers,
// consumer groups with committed offsets shared with the HTTP API, and
// malformed frames on a raw socket. Every node binds Kafka.Port=0 (never the
// fixed 9092) and the test reads the bound port from its node.ready line.

#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "storage/record_batch.hpp"
#include "tests/kafka_node/kafka_client.hpp"
#include "tests/node/node_harness.hpp"
#include "tests/support/raw_http.hpp"
#include "net/blocking_client.hpp"

using namespace moonmq;
using namespace moonmq::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

/// A single broker with the Kafka listener on an ephemeral port.
struct kafka_node {
  temp_dir dir{"moonmq-kafka"};
  std::unique_ptr<node_process> node;
  uint16_t admin = 0;
  uint16_t client = 0;
  uint16_t kafka = 0;

  explicit kafka_node(std::vector<std::string> overrides = {}) {
    overrides.insert(overrides.begin(), {"Kafka.Enabled=true", "Kafka.Port=0"});
    node = std::make_unique<node_process>(dir, overrides);
    auto a = node->wait_ready(20s);
    if (!a)
      FAIL("moonmq-node did not become ready:\n" << node->log());
    admin = *a;
    client = *node->client_port();
    std::smatch m;
    auto text = node->log();
    static const std::regex re{R"(node\.ready [^\n]* kafka=[^ \n]+:([0-9]+))"};
    REQUIRE(std::regex_search(text, m, re));
    kafka = static_cast<uint16_t>(std::stoi(m[1]));
  }
  std::string broker() const { return "127.0.0.1:" + std::to_string(kafka); }
};

std::string kcat(const kafka_node& n, const std::string& args) {
  return "timeout 30 kcat -b " + n.broker() + " " + args;
}

transport::http_result http(uint16_t port, const std::string& method, const std::string& target,
                            const std::string& body = {}) {
  return transport::http_call(port, method, target, body, {{"Content-Type", "application/json"}});
}

}  // namespace

TEST_CASE("kafka listener: kcat metadata, produce and consume from the beginning", "[kafka_node]") {
  kafka_node n;
  auto [rc, meta] = sh(kcat(n, "-L") + " 2>&1");
  INFO(meta);
  REQUIRE(rc == 0);
  CHECK(meta.find("1 brokers") != std::string::npos);
  CHECK(meta.find(n.broker()) != std::string::npos);
  // Auto-created for the producer (1 partition); keys split on ':'.
  auto [prc, pout] = sh("seq 1 1000 | sed 's/.*/k&:&/' | " + kcat(n, "-P -t T -K:") + " 2>&1");
  INFO(pout);
  REQUIRE(prc == 0);
  auto [crc, cout] = sh(kcat(n, "-C -t T -o beginning -e -f '%k=%s\\n'") + " 2>/dev/null");
  auto got = lines(cout);
  REQUIRE(got.size() == 1000);
  CHECK(got.front() == "k1=1");
  CHECK(got.back() == "k1000=1000");
  // -o 5 -c 1 starts inside a batch: the client skips the batch's earlier records.
  auto [orc, one] = sh(kcat(n, "-C -t T -o 5 -c 1 -f '%o %s\\n'") + " 2>/dev/null");
  CHECK(one == "5 6\n");
  // ListOffsets: the end offset.
  auto [qrc, q] = sh(kcat(n, "-Q -t T:0:-1") + " 2>&1");
  INFO(q);
  CHECK(q.find("1000") != std::string::npos);
  // CRC checks on the consumer side pass on the stored batches.
  auto [xrc, xout] = sh(kcat(n, "-C -t T -o beginning -e -X check.crcs=true -f '%s\\n'") + " 2>/dev/null");
  CHECK(lines(xout).size() == 1000);
  // Out of range: the consumer resets (auto.offset.reset) instead of hanging.
  auto [rrc, rout] = sh(kcat(n, "-C -t T -o 5000 -e -X auto.offset.reset=earliest -f '%s\\n'") + " 2>/dev/null");
  CHECK(lines(rout).size() == 1000);
}

TEST_CASE("kafka listener: the node exits cleanly right after a consumer leaves a long poll behind",
          "[kafka_node]") {
  // A Fetch still parked when the consumer disconnects and SIGTERM arrives
  // once kept the actor system from ending (the node never exited).
  kafka_node n;
  auto [prc, pout] = sh("seq 1 100 | " + kcat(n, "-P -t L") + " 2>&1");
  INFO(pout);
  REQUIRE(prc == 0);
  auto [crc, cout] = sh(kcat(n, "-C -t L -o beginning -e -q") + " 2>/dev/null");
  CHECK(lines(cout).size() == 100);
  n.node->process().signal(SIGTERM);
  CHECK(n.node->process().wait(10s) == 0);
}

TEST_CASE("kafka listener: compression, idempotence and headers through kcat", "[kafka_node]") {
  kafka_node n;
  for (std::string codec : {"gzip", "snappy", "lz4", "zstd"}) {
    auto [rc, out] = sh("seq 1 50 | " + kcat(n, "-P -t C -z " + codec) + " 2>&1");
    INFO(codec << ": " << out);
    CHECK(rc == 0);
  }
  auto [crc, cout] = sh(kcat(n, "-C -t C -o beginning -e -f '%s\\n'") + " 2>/dev/null");
  CHECK(lines(cout).size() == 200);
  auto [irc, iout] = sh("seq 1 300 | " + kcat(n, "-P -t I -X enable.idempotence=true") + " 2>&1");
  INFO(iout);
  CHECK(irc == 0);
  auto [irc2, ic] = sh(kcat(n, "-C -t I -o beginning -e -f '%s\\n'") + " 2>/dev/null");
  auto got = lines(ic);
  CHECK(got.size() == 300);
  CHECK(std::set<std::string>(got.begin(), got.end()).size() == 300);
  auto [hrc, hout] = sh("echo 'key1:value1' | " + kcat(n, "-P -t H -K: -H trace=abc -H n=1") + " 2>&1");
  CHECK(hrc == 0);
  auto [hrc2, hc] = sh(kcat(n, "-C -t H -o beginning -e -f '%k|%s|%h\\n'") + " 2>/dev/null");
  CHECK(hc == "key1|value1|trace=abc,n=1\n");
}

TEST_CASE("kafka listener: records cross between HTTP and kcat with keys and headers", "[kafka_node]") {
  kafka_node n;
  REQUIRE(http(n.client, "POST", "/v1/topics", R"({"name":"X","partitions":1})").status == 201);
  auto p = http(n.client, "POST", "/v1/topics/X/records",
                R"({"records":[{"key":"hk","value":"from-http","headers":{"h1":"v1"},"partition":0}]})");
  REQUIRE(p.status == 200);
  auto [rc, out] = sh(kcat(n, "-C -t X -o beginning -e -f '%k|%s|%h\\n'") + " 2>/dev/null");
  CHECK(out == "hk|from-http|h1=v1\n");
  auto [prc, pout] = sh("echo 'kk:from-kcat' | " + kcat(n, "-P -t X -p 0 -K: -H h2=v2") + " 2>&1");
  REQUIRE(prc == 0);
  auto f = http(n.client, "GET", "/v1/topics/X/partitions/0/records?offset=1");
  REQUIRE(f.status == 200);
  auto j = json::parse(f.body);
  REQUIRE(j["records"].size() == 1);
  CHECK(j["records"][0]["key"] == "kk");
  CHECK(j["records"][0]["value"] == "from-kcat");
  CHECK(j["records"][0]["headers"][0]["key"] == "h2");
  CHECK(j["records"][0]["headers"][0]["value"] == "v2");
}

TEST_CASE("kafka listener: kcat group consumers commit offsets the HTTP API reads", "[kafka_node]") {
  kafka_node n;
  REQUIRE(http(n.client, "POST", "/v1/topics", R"({"name":"G","partitions":2})").status == 201);
  auto [prc, pout] = sh("seq 1 100 | " + kcat(n, "-P -t G") + " 2>&1");
  REQUIRE(prc == 0);
  auto consume = [&](int count) {
    return sh(kcat(n, "-G g1 -X auto.offset.reset=earliest -c " + std::to_string(count)
                   + " -f '%s\\n' -X auto.commit.interval.ms=100 G")
              + " 2>/dev/null");
  };
  auto [rc1, first] = consume(100);
  CHECK(lines(first).size() == 100);
  // The HTTP API sees the committed offsets (100 records over 2 partitions).
  std::string last;
  bool committed = wait_until(
    [&] {
      auto r = http(n.client, "GET", "/v1/groups/g1/offsets");
      last = std::to_string(r.status) + " " + r.body;
      if (r.status != 200)
        return false;
      int64_t sum = 0;
      auto body = json::parse(r.body);
      for (const auto& o : body["offsets"])
        sum += o["offset"].get<int64_t>();
      return sum == 100;
    },
    5s);
  INFO(last);
  CHECK(committed);
  // Resumes from the committed offsets: the next records only.
  auto [prc2, pout2] = sh("seq 101 110 | " + kcat(n, "-P -t G") + " 2>&1");
  REQUIRE(prc2 == 0);
  auto [rc2, second] = consume(10);
  auto got = lines(second);
  REQUIRE(got.size() == 10);
  for (const auto& v : got)
    CHECK(std::stoi(v) > 100);
}

TEST_CASE("kafka listener: two kcat group members split the partitions", "[kafka_node]") {
  kafka_node n;
  REQUIRE(http(n.client, "POST", "/v1/topics", R"({"name":"R","partitions":4})").status == 201);
  for (int p = 0; p < 4; ++p) {
    auto [prc, pout] = sh("seq " + std::to_string(p * 100 + 1) + " " + std::to_string(p * 100 + 100) + " | "
                          + kcat(n, "-P -t R -p " + std::to_string(p)) + " 2>&1");
    REQUIRE(prc == 0);
  }
  // Two members run at once (no -e: they stay in the group) until every
  // record was consumed and each holds two of the four partitions.
  std::vector<std::string> args{"-u", "-b", n.broker(), "-G", "g2", "-X", "auto.offset.reset=earliest", "-f", "%p:%s\n",
                                "-X", "session.timeout.ms=6000", "R"};
  child_process m1, m2;
  REQUIRE(m1.start("/usr/bin/kcat", args, n.dir.path() + "/m1.out"));
  REQUIRE(m2.start("/usr/bin/kcat", args, n.dir.path() + "/m2.out"));
  auto assigned = [](const std::string& log) {
    // The partitions of the member's last "assigned:" line.
    auto at = log.rfind("assigned:");
    if (at == std::string::npos || log.find("revoked", at) != std::string::npos)
      return std::string{};
    return log.substr(at, log.find('\n', at) - at);
  };
  std::set<std::string> values;
  std::string a1, a2;
  bool split = wait_until(
    [&] {
      values.clear();
      for (auto* m : {&m1, &m2})
        for (const auto& l : lines(read_text(m->log_file())))
          if (l[0] != '%')
            values.insert(l.substr(l.find(':') + 1));
      a1 = assigned(read_text(m1.log_file()));
      a2 = assigned(read_text(m2.log_file()));
      auto count = [](const std::string& a) { return std::count(a.begin(), a.end(), '['); };
      return values.size() == 400 && count(a1) == 2 && count(a2) == 2;
    },
    20s);
  INFO("m1: " << a1 << "\nm2: " << a2 << "\nrecords: " << values.size());
  CHECK(split);
  for (const auto& part : {"[0]", "[1]", "[2]", "[3]"})
    CHECK((a1.find(part) != std::string::npos) != (a2.find(part) != std::string::npos));
  m1.signal(SIGTERM);
  m2.signal(SIGTERM);
}

TEST_CASE("kafka listener: librdkafka static members restart without a rebalance and a duplicate instance is fenced",
          "[kafka_node][static]") {
  // KIP-345 with librdkafka 2.0.2 (python3-confluent-kafka): two static
  // members split two partitions; "a" closes (no LeaveGroup for a static
  // member) and a new consumer with its instance id starts within the
  // session timeout: it gets a's partition and b sees no revoke or assign.
  // Then a consumer reusing b's live instance id takes b's partition over
  // and b gets a fatal FENCED_INSTANCE_ID; the group shows the instance ids
  // and LeaveGroup v3 removes a member by instance id.
  kafka_node n{{"Kafka.GroupInitialRebalanceDelayMs=0"}};
  REQUIRE(http(n.client, "POST", "/v1/topics", R"({"name":"st","partitions":2})").status == 201);
  const std::string py = R"PY(
import sys, time
from confluent_kafka import Consumer, KafkaError
bs = sys.argv[1]
events, errors, names = {}, {}, {}
def make(name, instance):
    events[name], errors[name] = [], []
    c = Consumer({'bootstrap.servers': bs, 'group.id': 'statics', 'group.instance.id': instance,
                  'session.timeout.ms': 6000, 'heartbeat.interval.ms': 300,
                  'error_cb': lambda e: errors[name].append(e)})
    c.subscribe(['st'], on_assign=lambda c, ps: events[name].append(('assign', sorted(p.partition for p in ps))),
                on_revoke=lambda c, ps: events[name].append(('revoke', sorted(p.partition for p in ps))))
    names[id(c)] = name
    return c
def parts(c):
    return sorted(p.partition for p in c.assignment())
def pump(cs, secs, until=lambda: False):
    end = time.time() + secs
    while time.time() < end:
        for c in cs:
            m = c.poll(0.05)
            if m is not None and m.error():  # errors also come back as messages
                errors[names[id(c)]].append(m.error())
        if until():
            return True
    return until()
a, b = make('a', 'inst-a'), make('b', 'inst-b')
print('split', pump([a, b], 30, lambda: len(parts(a)) == 1 and len(parts(b)) == 1 and parts(a) != parts(b)))
pump([a, b], 1)
pa, pb, seen = parts(a), parts(b), len(events['b'])
a.close()
a2 = make('a2', 'inst-a')
print('restarted', pump([a2, b], 15, lambda: parts(a2) == pa))
pump([a2, b], 3)
print('a2 events', events['a2'] == [('assign', pa)], events['a2'])
print('b events after restart', events['b'][seen:])
print('b keeps', parts(b) == pb)
seen_a2 = len(events['a2'])
c = make('c', 'inst-b')
# librdkafka hands a fatal error to poll() as an error message with code _FATAL.
fatal = lambda: any(e.fatal() or e.code() == KafkaError._FATAL for e in errors['b'])
print('fenced', pump([c, b, a2], 15, fatal))
print('c takes over', pump([c, a2], 5, lambda: parts(c) == pb))
print('b error', [e.str() for e in errors['b']])
print('a2 events after duplicate', events['a2'][seen_a2:])
for x in (a2, c):
    x.close()
)PY";
  {
    std::ofstream f(n.dir.path() + "/statics.py");
    f << py;
  }
  auto [rc, out] = sh("timeout 90 /usr/bin/python3 " + n.dir.path() + "/statics.py " + n.broker() + " 2>&1");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("split True") != std::string::npos);
  CHECK(out.find("restarted True") != std::string::npos);
  CHECK(out.find("a2 events True") != std::string::npos);
  CHECK(out.find("b events after restart []") != std::string::npos);
  CHECK(out.find("b keeps True") != std::string::npos);
  CHECK(out.find("fenced True") != std::string::npos);
  CHECK(out.find("c takes over True") != std::string::npos);
  CHECK(out.find("b error ['Fatal error: Broker: Static consumer fenced by other consumer with same "
                 "group.instance.id") != std::string::npos);
  CHECK(out.find("a2 events after duplicate []") != std::string::npos);
  // Closed static members stay in the group until their session times out
  // (6 s): the HTTP describe shows both with their instance ids.
  auto described = http(n.client, "GET", "/v1/groups/statics");
  REQUIRE(described.status == 200);
  auto j = json::parse(described.body, nullptr, false);
  INFO(described.body);
  std::set<std::string> instances;
  for (const auto& m : j.value("members", json::array()))
    if (m.contains("group_instance_id") && m["group_instance_id"].is_string())
      instances.insert(m["group_instance_id"].get<std::string>());
  CHECK(instances == std::set<std::string>{"inst-a", "inst-b"});
  // LeaveGroup v3 removes a static member by its instance id alone (an
  // administrative removal); an instance the group does not have is 25.
  kafka::leave_group_request leave;
  leave.group_id = "statics";
  leave.members = {{"", std::string("inst-a")}, {"", std::string("inst-nobody")}};
  auto raw = raw_exchange(n.kafka, request_frame(leave, 3), 5s);
  REQUIRE(raw.size() > 8);
  auto left = kafka::decode_body<kafka::leave_group_response>(raw.substr(8), 3);
  REQUIRE(left.ok());
  CHECK(left->error_code == 0);
  REQUIRE(left->members.size() == 2);
  CHECK(left->members[0].error_code == 0);
  CHECK(left->members[1].group_instance_id == "inst-nobody");
  CHECK(left->members[1].error_code == kafka::error_code::unknown_member_id);
  auto after = json::parse(http(n.client, "GET", "/v1/groups/statics").body, nullptr, false);
  REQUIRE(after.is_object());
  REQUIRE(after["members"].size() == 1);
  CHECK(after["members"][0]["group_instance_id"] == "inst-b");
}

TEST_CASE("kafka listener: malformed frames get an error or a closed connection", "[kafka_node]") {
  kafka_node n;
  REQUIRE(http(n.client, "POST", "/v1/topics", R"({"name":"M","partitions":1})").status == 201);
  bool closed = false;
  // Negative size prefix, a size above the limit, a frame below the header size.
  raw_exchange(n.kafka, std::string("\xff\xff\xff\xfe", 4), 3s, &closed);
  CHECK(closed);
  closed = false;
  raw_exchange(n.kafka, std::string("\x7f\xff\xff\xff", 4), 3s, &closed);
  CHECK(closed);
  closed = false;
  raw_exchange(n.kafka, std::string("\x00\x00\x00\x02\x00\x00", 6), 3s, &closed);
  CHECK(closed);
  // A truncated body (the size covers only half the header): closed.
  closed = false;
  raw_exchange(n.kafka, std::string("\x00\x00\x00\x0a\x00\x03\x00\x04\x00\x00\x00\x01\xff\xff", 14)
                          + std::string("\x00\x00\x00\x04\x00\x12\x00\x00", 8),
               3s, &closed);
  CHECK(closed);
  // Unknown API key: closed.
  closed = false;
  raw_exchange(n.kafka, std::string("\x00\x00\x00\x0a\x03\xe7\x00\x00\x00\x00\x00\x01\xff\xff", 14), 3s, &closed);
  CHECK(closed);
  // Unsupported ApiVersions version: error 35 in the v0 layout.
  // (a future version: flexible request header v2, with its tag section)
  auto av = raw_exchange(n.kafka, std::string("\x00\x00\x00\x0b\x00\x12\x00\x63\x00\x00\x00\x09\xff\xff\x00", 15), 1s);
  REQUIRE(av.size() >= 10);
  CHECK(av.substr(4, 4) == std::string("\x00\x00\x00\x09", 4));
  CHECK(av.substr(8, 2) == std::string("\x00\x23", 2));
  // A produce with a bad CRC or a wrong magic: INVALID_RECORD (87) for the partition.
  auto bad_crc = one_record_batch();
  bad_crc.back() ^= 0x01;
  CHECK(produce_error(raw_exchange(n.kafka, produce_frame("M", bad_crc), 500ms)) == 87);
  auto bad_magic = one_record_batch();
  bad_magic[16] = 1;
  CHECK(produce_error(raw_exchange(n.kafka, produce_frame("M", bad_magic), 500ms)) == 87);
  auto short_batch = one_record_batch().substr(0, 30);
  CHECK(produce_error(raw_exchange(n.kafka, produce_frame("M", short_batch), 500ms)) == 87);
  // A valid one goes in at offset 0 (the refused ones appended nothing:
  // the listener's CRC check is the only one on the way to the log); an
  // unknown partition gets 3.
  CHECK(produce_result(raw_exchange(n.kafka, produce_frame("M", one_record_batch()), 500ms))
        == std::pair<int, int64_t>{0, 0});
  CHECK(produce_error(raw_exchange(n.kafka, produce_frame("nope", one_record_batch()), 500ms)) == 3);
  // Pipelined requests are answered in request order.
  std::string two = request_frame(kafka::api_versions_request{}, 2, 101) + request_frame(kafka::metadata_request{}, 4, 102)
                    + request_frame(kafka::api_versions_request{}, 1, 103);
  auto answers = raw_exchange(n.kafka, two, 1s);
  std::vector<int32_t> order;
  for (size_t pos = 0; pos + 8 <= answers.size();) {
    auto be32 = [&](size_t at) {
      return static_cast<int32_t>((uint8_t(answers[at]) << 24) | (uint8_t(answers[at + 1]) << 16)
                                  | (uint8_t(answers[at + 2]) << 8) | uint8_t(answers[at + 3]));
    };
    order.push_back(be32(pos + 4));
    pos += 4 + static_cast<size_t>(be32(pos));
  }
  CHECK(order == std::vector<int32_t>{101, 102, 103});
  // The node keeps serving.
  auto [rc, meta] = sh(kcat(n, "-L -t M") + " 2>&1");
  CHECK(rc == 0);
  CHECK(http(n.admin, "GET", "/health").status == 200);
  auto actors = http(n.admin, "GET", "/admin/actors");
  CHECK(actors.body.find("kafka_listener") != std::string::npos);
  auto m = http(n.admin, "GET", "/metrics");
  CHECK(m.body.find("moonmq_kafka_requests_total{api=\"Produce\"}") != std::string::npos);
  CHECK(m.body.find("moonmq_kafka_errors_total{api=\"Produce\"}") != std::string::npos);
}

TEST_CASE("kafka listener: kafkajs idempotent producer and a two-member group, nothing lost or duplicated",
          "[kafka_node]") {
  // kafkajs 2.2.4 comes from scripts/install-deps.sh (MOONMQ_NPM_DIR, default ~/.cache/moonmq-npm).
  std::string modules = npm_modules();
  INFO("kafkajs must be installed by scripts/install-deps.sh under " << modules);
  REQUIRE(!read_text(modules + "/kafkajs/package.json").empty());
  kafka_node n;
  auto [rc, out] = sh("NODE_PATH='" + modules + "' timeout 60 node " MOONMQ_SOURCE_DIR
                      "/tests/kafka_node/kafkajs_check.js " + n.broker() + " js 1000 2>&1");
  INFO(out);
  CHECK(rc == 0);
  auto result = json::parse(lines(out).empty() ? std::string("{}") : lines(out).back(), nullptr, false);
  REQUIRE(result.is_object());
  CHECK(result.value("received", 0) == 1000);
  CHECK(result.value("duplicates", -1) == 0);
}

TEST_CASE("kafka listener: kcat -Q finds offsets by timestamp", "[kafka_node]") {
  kafka_node n;
  REQUIRE(http(n.client, "POST", "/v1/topics", R"({"name":"Q","partitions":1})").status == 201);
  auto batch = [](const std::vector<int64_t>& stamps) {
    std::vector<storage::record> records(stamps.size());
    for (size_t i = 0; i < stamps.size(); ++i) {
      records[i].value = "v" + std::to_string(stamps[i]);
      records[i].timestamp_ms = stamps[i];
    }
    return storage::encode_batch(records).value();
  };
  // Offsets 0..2 at 1000, 2000, 3000 and 3..4 at 4000, 5000 (CreateTime).
  REQUIRE(produce_error(raw_exchange(n.kafka, produce_frame("Q", batch({1000, 2000, 3000})), 5s)) == 0);
  REQUIRE(produce_error(raw_exchange(n.kafka, produce_frame("Q", batch({4000, 5000})), 5s)) == 0);
  auto query = [&](int64_t ts) {
    auto [rc, out] = sh(kcat(n, "-Q -t Q:0:" + std::to_string(ts)) + " 2>&1");
    INFO(out);
    CHECK(rc == 0);
    std::smatch m;
    static const std::regex re{R"(offset (-?[0-9]+))"};
    return std::regex_search(out, m, re) ? std::stoll(m[1]) : int64_t{-100};
  };
  CHECK(query(0) == 0);      // before every record: the first
  CHECK(query(2000) == 1);   // exactly a record's timestamp
  CHECK(query(2500) == 2);   // between two records of one batch: the later one
  CHECK(query(3500) == 3);   // between batches: the next batch's first record
  CHECK(query(5001) == -1);  // after every record: Kafka's UNKNOWN_OFFSET
  CHECK(query(-2) == 0);     // earliest
  CHECK(query(-1) == 5);     // latest
}

TEST_CASE("kafka listener: pipelined produce keeps every partition's order, idempotent or not, and loses nothing",
          "[kafka_node]") {
  // librdkafka sends one partition per ProduceRequest and keeps many in
  // flight on one connection; the listener handles them at once, so the
  // appends of consecutive requests must still reach each partition in
  // request order (actors/direct_append.hpp).
  kafka_node n;
  constexpr int partitions = 50;
  constexpr int records = 20000;
  for (std::string topic : {"pipe", "pipe-idem"}) {
    auto created = http(n.client, "POST", "/v1/topics", json{{"name", topic}, {"partitions", partitions}}.dump());
    REQUIRE(created.status == 201);
    std::string extra = topic == "pipe-idem" ? " -X enable.idempotence=true" : "";
    auto [rc, out] = sh("seq 1 " + std::to_string(records) + " | sed 's/.*/k&:v&/' | "
                        + kcat(n, "-P -t " + topic + " -K: -X acks=all -X linger.ms=2" + extra) + " 2>&1");
    INFO(topic << ": " << out);
    REQUIRE(rc == 0);
    auto [crc, consumed] = sh(kcat(n, "-C -t " + topic + " -o beginning -e -f '%p %o %k\\n'") + " 2>/dev/null");
    std::map<int, std::vector<std::pair<long, long>>> by_partition;  // partition -> (offset, key number)
    std::set<long> keys;
    for (const auto& l : lines(consumed)) {
      int p = 0;
      long o = 0, k = 0;
      REQUIRE(std::sscanf(l.c_str(), "%d %ld k%ld", &p, &o, &k) == 3);
      by_partition[p].push_back({o, k});
      keys.insert(k);
    }
    CHECK(keys.size() == static_cast<size_t>(records));
    size_t total = 0;
    int out_of_order = 0;
    for (auto& [p, v] : by_partition) {
      total += v.size();
      std::sort(v.begin(), v.end());
      for (size_t i = 1; i < v.size(); ++i) {
        CHECK(v[i].first == v[i - 1].first + 1);  // offsets without gaps
        out_of_order += v[i].second < v[i - 1].second ? 1 : 0;
      }
    }
    CHECK(total == static_cast<size_t>(records));  // no duplicates
    CHECK(out_of_order == 0);
  }
}

TEST_CASE("kafka listener: a standalone broker creates topics with configs, grows them and alters their config "
          "durably through librdkafka",
          "[kafka_node]") {
  // Without a cluster the same APIs go to the broker actor: the topic
  // catalogue (data/topics.json) holds the count and config. CreateTopics
  // with a bad value of a known key is 40 INVALID_CONFIG naming the key
  // (keys moonmq does not implement, such as Streams' cleanup.policy=compact,
  // are ignored with a warning), and
  // num.partitions is cluster-wide, never one broker's (40).
  kafka_node n;
  std::string py =
    "from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions, ConfigResource\n"
    "a = AdminClient({'bootstrap.servers': '" + n.broker() + "'})\n"
    "fs = a.create_topics([NewTopic('cfg1', 2, 1, config={'retention.ms': '3600000'}),\n"
    "                      NewTopic('cfg2', 1, 1, config={'cleanup.policy': 'compact', 'min.insync.replicas': '2'}),\n"
    "                      NewTopic('cfg3', 1, 1, config={'segment.bytes': 'big'})], request_timeout=20)\n"
    "for t, f in sorted(fs.items()):\n"
    "    try:\n"
    "        f.result(); print(t, 'created')\n"
    "    except Exception as e:\n"
    "        print(t, e.args[0].name(), e.args[0].str())\n"
    "a.create_partitions([NewPartitions('cfg1', 3)], request_timeout=20)['cfg1'].result()\n"
    "r = ConfigResource('topic', 'cfg1', set_config={'retention.ms': '7200000', 'retention.bytes': '1048576'})\n"
    "a.alter_configs([r], request_timeout=20)[r].result()\n"
    "for e in sorted(a.describe_configs([r], request_timeout=20)[r].result().values(), key=lambda e: e.name):\n"
    "    print('topic', e.name, e.value, e.is_default)\n"
    "b = ConfigResource('broker', '1', set_config={'num.partitions': '4'})\n"
    "try:\n"
    "    a.alter_configs([b], request_timeout=20)[b].result(); print('broker altered')\n"
    "except Exception as e:\n"
    "    print('broker', e.args[0].name())\n";
  auto [rc, out] = python_script(n.dir.path(), "admin.py", py);
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("cfg1 created") != std::string::npos);
  CHECK(out.find("cfg2 created") != std::string::npos);  // configs moonmq does not implement are ignored
  CHECK(out.find("cfg3 INVALID_CONFIG config.segment.bytes: expected an integer, got 'big'") != std::string::npos);
  CHECK(out.find("topic retention.bytes 1048576 False") != std::string::npos);
  CHECK(out.find("topic retention.ms 7200000 False") != std::string::npos);
  CHECK(out.find("topic segment.bytes 1073741824 True") != std::string::npos);
  CHECK(out.find("broker INVALID_CONFIG") != std::string::npos);  // per-broker: moonmq's is cluster-wide

  auto catalogue = json::parse(read_text(n.dir.path() + "/data/topics.json"), nullptr, false);
  REQUIRE(catalogue.is_object());
  json cfg1;
  for (const auto& t : catalogue["topics"]) {
    CHECK(t["name"] != "cfg3");
    if (t["name"] == "cfg1")
      cfg1 = t;
  }
  CHECK(cfg1["partitions"] == 3);
  CHECK(cfg1["config"]["retention.ms"] == 7200000);
  CHECK(cfg1["config"]["retention.bytes"] == 1048576);
}

TEST_CASE("kafka listener: transactional produce, read_committed Fetch and ListOffsets stop at an open "
          "transaction",
          "[kafka_node][txn]") {
  kafka_node n;
  REQUIRE(http(n.client, "POST", "/v1/topics", R"({"name":"T","partitions":1})").status == 201);
  auto txn_batch = [](int64_t pid, int16_t epoch, int32_t seq, const std::string& value) {
    std::vector<storage::record> records(1);
    records[0].value = value;
    storage::batch_options o;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.base_sequence = seq;
    o.attributes = storage::attr_transactional;
    return storage::encode_batch(records, o).value();
  };
  auto produce = [&](std::string batch) { return produce_result(kafka_exchange(n.kafka, produce_frame("T", std::move(batch)), 5s)); };
  CHECK(produce(one_record_batch("plain")) == std::pair<int, int64_t>{0, 0});
  CHECK(produce(txn_batch(4000, 1, 0, "t0")) == std::pair<int, int64_t>{0, 1});  // opens a transaction at 1
  CHECK(produce(one_record_batch("after")) == std::pair<int, int64_t>{0, 2});
  CHECK(produce(txn_batch(4000, 1, 1, "t1")) == std::pair<int, int64_t>{0, 3});
  CHECK(produce(txn_batch(4000, 1, 1, "t1")) == std::pair<int, int64_t>{0, 3});  // a resend: its first offset
  CHECK(produce(txn_batch(4000, 0, 2, "old")).first == 47);                       // INVALID_PRODUCER_EPOCH
  CHECK(produce(txn_batch(-1, 0, 0, "no producer")).first == 87);                  // INVALID_RECORD

  auto fetch = [&](int8_t isolation) {
    kafka::fetch_request f;
    f.max_wait_ms = 0;
    f.min_bytes = 0;
    f.isolation_level = isolation;
    f.topics.push_back({"T", {{0, -1, 0, -1, 1 << 20}}});
    auto raw = kafka_exchange(n.kafka, request_frame(f, 11), 5s);
    REQUIRE(raw.size() > 8);
    auto resp = kafka::decode_response(kafka::api_key::fetch, 11, std::string_view(raw).substr(8));
    REQUIRE(resp);
    return std::get<kafka::fetch_response>(*resp).topics.at(0).partitions.at(0);
  };
  auto bases = [](const kafka::fetch_partition_response& p) {
    std::vector<int64_t> out;
    std::string_view rest = *p.records;
    while (!rest.empty()) {
      auto h = storage::peek_batch_header(rest).value();
      out.push_back(h.base.value);
      rest.remove_prefix(h.size);
    }
    return out;
  };
  auto committed = fetch(1);
  CHECK(committed.error_code == 0);
  CHECK(committed.high_watermark == 4);
  CHECK(committed.last_stable_offset == 1);  // the open transaction's first offset
  CHECK(bases(committed) == std::vector<int64_t>{0});
  REQUIRE(committed.aborted_transactions);
  CHECK(committed.aborted_transactions->empty());
  auto uncommitted = fetch(0);
  CHECK(uncommitted.last_stable_offset == 1);
  CHECK(bases(uncommitted) == std::vector<int64_t>{0, 1, 2, 3});

  auto latest = [&](int8_t isolation) {
    kafka::list_offsets_request l;
    l.isolation_level = isolation;
    l.topics.push_back({"T", {{0, kafka::latest_timestamp}}});
    auto raw = kafka_exchange(n.kafka, request_frame(l, 2), 5s);
    REQUIRE(raw.size() > 8);
    auto resp = kafka::decode_response(kafka::api_key::list_offsets, 2, std::string_view(raw).substr(8));
    REQUIRE(resp);
    return std::get<kafka::list_offsets_response>(*resp).topics.at(0).partitions.at(0).offset;
  };
  CHECK(latest(1) == 1);
  CHECK(latest(0) == 4);
  // The HTTP read with isolation=read_committed stops there too.
  auto r = http(n.client, "GET", "/v1/topics/T/partitions/0/records?offset=0&isolation=read_committed");
  REQUIRE(r.status == 200);
  auto body = json::parse(r.body);
  CHECK(body["records"].size() == 1);
  CHECK(body["next_offset"] == 1);
  CHECK(body["last_stable_offset"] == 1);
  auto plain = json::parse(http(n.client, "GET", "/v1/topics/T/partitions/0/records?offset=0").body);
  CHECK_FALSE(plain.contains("last_stable_offset"));
  CHECK(http(n.client, "GET", "/v1/topics/T/partitions/0/records?offset=0&isolation=serializable").status == 400);
  // No coordinator will end this transaction (the batches were never added
  // through one): the operator aborts it at the partition.
  const std::string abort = "/admin/partitions/T/0/abort-transaction";
  CHECK(http(n.admin, "POST", abort, R"({"producer_id":4000})").status == 400);
  auto fenced = http(n.admin, "POST", abort, R"({"producer_id":4000,"producer_epoch":0})");
  CHECK(fenced.status != 200);
  CHECK(json::parse(fenced.body)["error"] == "invalid_producer_epoch");
  CHECK(http(n.admin, "POST", "/admin/partitions/T/7/abort-transaction", R"({"producer_id":4000,"producer_epoch":1})")
          .status == 404);
  auto aborted = http(n.admin, "POST", abort, R"({"producer_id":4000,"producer_epoch":1})");
  INFO(aborted.body);
  REQUIRE(aborted.status == 200);
  CHECK(json::parse(aborted.body)["marker_offset"] == 4);
  CHECK(latest(1) == 5);  // the last stable offset passed the marker
  auto after = json::parse(
    http(n.client, "GET", "/v1/topics/T/partitions/0/records?offset=0&isolation=read_committed").body);
  CHECK(after["last_stable_offset"] == 5);
  std::vector<std::string> seen;
  for (const auto& rec : after["records"])
    seen.push_back(rec["value"].get<std::string>());
  CHECK(seen == std::vector<std::string>{"plain", "after"});  // t0 and t1 were aborted
  // A standalone broker has no metadata log and so no transaction
  // coordinator: ApiVersions leaves the transaction APIs out and
  // InitProducerId with a transactional id is 15 COORDINATOR_NOT_AVAILABLE.
  auto raw = kafka_exchange(n.kafka, request_frame(kafka::api_versions_request{}, 2), 5s);
  REQUIRE(raw.size() > 8);
  auto versions = kafka::decode_response(kafka::api_key::api_versions, 2, std::string_view(raw).substr(8));
  REQUIRE(versions);
  std::set<int16_t> offered;
  for (const auto& k : std::get<kafka::api_versions_response>(*versions).api_keys)
    offered.insert(k.api);
  CHECK(offered.count(22) == 1);  // InitProducerId (idempotence) stays
  for (int16_t api : {24, 25, 26, 28})
    CHECK(offered.count(api) == 0);
  kafka::init_producer_id_request init;
  init.transactional_id = "app";
  init.transaction_timeout_ms = 60000;
  raw = kafka_exchange(n.kafka, request_frame(init, 1), 5s);
  REQUIRE(raw.size() > 8);
  auto answer = kafka::decode_response(kafka::api_key::init_producer_id, 1, std::string_view(raw).substr(8));
  REQUIRE(answer);
  CHECK(std::get<kafka::init_producer_id_response>(*answer).error_code == 15);
}

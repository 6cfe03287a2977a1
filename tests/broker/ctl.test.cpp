// moonmqctl against a real moonmq-node: lines produced come back as the
// same lines, and consume --group resumes from the committed offsets.

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "tests/broker/broker_client.hpp"

using namespace moonmq::test;
using namespace moonmq::test::broker;
using namespace std::chrono_literals;

namespace {

/// Runs `moonmqctl --url 127.0.0.1:<port> <args>` with stdin from `in` (or
/// /dev/null) and stdout to `out`; returns the exit code.
int ctl(const temp_dir& dir, uint16_t port, const std::string& args, const std::string& in, const std::string& out) {
  static int counter = 0;
  child_process p;
  auto cmd = program("moonmqctl") + " --url 127.0.0.1:" + std::to_string(port) + " " + args + " < "
             + (in.empty() ? std::string("/dev/null") : in) + " > " + out;
  auto log = dir.path() + "/ctl-" + std::to_string(++counter) + ".log";
  REQUIRE(p.start("/bin/sh", {"-c", cmd}, log, dir.path()));
  auto rc = p.wait(60s);
  INFO(cmd << "\n" << read_text(log));
  REQUIRE(rc);
  return *rc;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in{path};
  std::string line;
  while (std::getline(in, line))
    out.push_back(line);
  return out;
}

/// Writes `count` lines "<prefix><i>" to `path`; returns them.
std::vector<std::string> write_lines(const std::string& path, const std::string& prefix, int count) {
  std::vector<std::string> lines;
  std::ofstream in{path};
  for (int i = 0; i < count; ++i) {
    lines.push_back(prefix + std::to_string(i));
    in << lines.back() << '\n';
  }
  return lines;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("moonmqctl produce then consume returns the same lines", "[broker][ctl]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "lines", 3);
  std::vector<std::string> lines;
  {
    std::ofstream in{dir.path() + "/in.txt"};
    for (int i = 0; i < 3000; ++i) {
      // Keyed lines ("k<i%10>=..."), UTF-8 and an empty value among them.
      std::string line = "k" + std::to_string(i % 10) + "=line " + std::to_string(i) + (i % 100 == 0 ? " \xc3\xbc" : "");
      if (i == 17)
        line = "k7=";
      lines.push_back(line);
      in << line << '\n';
    }
  }
  CHECK(ctl(dir, n.client, "produce lines -K = --batch 250", dir.path() + "/in.txt", dir.path() + "/offsets.txt") == 0);
  CHECK(ctl(dir, n.client, "consume lines --format kv", "", dir.path() + "/out.txt") == 0);
  auto out = lines_of(dir.path() + "/out.txt");
  REQUIRE(out.size() == lines.size());
  std::vector<std::string> as_kv;
  for (auto l : lines)
    as_kv.push_back(l.replace(l.find('='), 1, "\t"));
  CHECK(sorted(out) == sorted(as_kv));
  // One key lands in one partition, so each key's lines keep their order.
  for (int k = 0; k < 10; ++k) {
    std::vector<std::string> want, got;
    auto prefix = "k" + std::to_string(k) + "\t";
    for (const auto& l : as_kv)
      if (l.rfind(prefix, 0) == 0)
        want.push_back(l);
    for (const auto& l : out)
      if (l.rfind(prefix, 0) == 0)
        got.push_back(l);
    CHECK(got == want);
  }
  // --print-offsets reports every acknowledged line with its partition and offset.
  CHECK(ctl(dir, n.client, "produce lines -p 1 --print-offsets", dir.path() + "/in.txt", dir.path() + "/acks.txt") == 0);
  auto acks = lines_of(dir.path() + "/acks.txt");
  REQUIRE(acks.size() == lines.size());
  CHECK(acks.front().rfind("1\t", 0) == 0);
  CHECK(acks.back().substr(acks.back().rfind('\t') + 1) == lines.back());
  n.stop();
}

TEST_CASE("moonmqctl's binary and JSON forms carry and print the same records", "[broker][ctl][binary]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "forms", 2);
  {
    std::ofstream in{dir.path() + "/in.txt", std::ios::binary};
    for (int i = 0; i < 500; ++i)
      in << "k" << i % 7 << "=" << (i % 50 == 0 ? std::string("\xff\x00raw", 5) : "line " + std::to_string(i))
         << (i % 9 == 0 ? " \xc3\xbc" : "") << '\n';
    in << "no separator\n";
  }
  // The same lines through each form of produce (binary is the default).
  REQUIRE(ctl(dir, n.client, "produce forms -K = -p 0 --batch 64", dir.path() + "/in.txt", dir.path() + "/o1.txt") == 0);
  REQUIRE(ctl(dir, n.client, "produce forms -K = -p 1 --batch 64 --form json", dir.path() + "/in.txt",
              dir.path() + "/o2.txt") == 0);
  for (const auto* format : {"value", "kv", "json"}) {
    INFO(format);
    auto args = std::string("consume forms --format ") + format + " -p ";
    for (int p = 0; p < 2; ++p) {
      auto bin = dir.path() + "/bin-" + format + std::to_string(p) + ".txt";
      auto txt = dir.path() + "/json-" + format + std::to_string(p) + ".txt";
      REQUIRE(ctl(dir, n.client, args + std::to_string(p), "", bin) == 0);
      REQUIRE(ctl(dir, n.client, args + std::to_string(p) + " --form json", "", txt) == 0);
      auto a = lines_of(bin), b = lines_of(txt);
      CHECK(a.size() == 501);
      CHECK(a == b);
    }
    if (std::string(format) != "json")  // the partition differs there
      CHECK(lines_of(dir.path() + "/bin-" + format + "0.txt") == lines_of(dir.path() + "/bin-" + format + "1.txt"));
  }
  auto kv = lines_of(dir.path() + "/bin-kv0.txt");
  CHECK(kv[0] == "k0\tbase64:/wByYXcgw7w=");
  CHECK(kv[1] == "k1\tline 1");
  CHECK(kv.back() == "\tno separator");
  n.stop();
}

TEST_CASE("moonmqctl consume --group resumes from the committed offsets", "[broker][ctl]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "work", 4);
  auto lines = write_lines(dir.path() + "/in.txt", "job-", 2000);
  REQUIRE(ctl(dir, n.client, "produce work --batch 100", dir.path() + "/in.txt", dir.path() + "/o.txt") == 0);
  CHECK(ctl(dir, n.client, "consume work -g workers -c 700", "", dir.path() + "/first.txt") == 0);
  auto first = lines_of(dir.path() + "/first.txt");
  CHECK(first.size() == 700);
  // The committed offsets add up to what was printed.
  auto c = call(n.client, "GET", "/v1/groups/workers/offsets?topic=work");
  REQUIRE(c.status == 200);
  int64_t sum = 0;
  for (const auto& o : c.body["offsets"])
    sum += o["offset"].get<int64_t>();
  CHECK(sum == 700);
  // A restart in between: the offsets are durable.
  n.stop();
  auto again = running_node::start(dir);
  CHECK(ctl(dir, again.client, "consume work -g workers", "", dir.path() + "/second.txt") == 0);
  auto second = lines_of(dir.path() + "/second.txt");
  CHECK(second.size() == 1300);
  auto both = first;
  both.insert(both.end(), second.begin(), second.end());
  CHECK(sorted(both) == sorted(lines));
  // Nothing is left for the group.
  CHECK(ctl(dir, again.client, "consume work -g workers", "", dir.path() + "/third.txt") == 0);
  CHECK(lines_of(dir.path() + "/third.txt").empty());
  again.stop();
}

TEST_CASE("moonmqctl topic and group commands administer a broker in rpk's shape", "[broker][ctl]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  auto out = dir.path() + "/out.txt";
  auto text = [&] { return read_text(out); };
  REQUIRE(ctl(dir, n.client, "topic create orders -p 2 -c retention.ms=60000", "", out) == 0);
  CHECK(text() == "created orders with 2 partition(s)\n");
  REQUIRE(ctl(dir, n.client, "topic list", "", out) == 0);
  CHECK(text().find("NAME    PARTITIONS\norders  2\n") != std::string::npos);
  {
    std::ofstream in{dir.path() + "/in.txt"};
    for (int i = 0; i < 10; ++i)
      in << "line-" << i << "\n";
  }
  REQUIRE(ctl(dir, n.client, "produce orders -p 0", dir.path() + "/in.txt", out) == 0);

  // describe: the config with its source, and every partition's offsets.
  REQUIRE(ctl(dir, n.client, "topic describe orders", "", out) == 0);
  INFO(text());
  CHECK(text().find("PARTITIONS  2\n") != std::string::npos);
  CHECK(text().find("retention.ms     60000       topic") != std::string::npos);
  CHECK(text().find("cleanup.policy   delete      read-only") != std::string::npos);
  CHECK(text().find("PARTITION  OWNER") != std::string::npos);
  auto describe = lines_of(out);
  CHECK(std::count_if(describe.begin(), describe.end(),
                      [](const std::string& l) { return l.rfind("0          ", 0) == 0 && l.find("  10  ") != std::string::npos; })
        == 1);

  // alter-config merges; --delete returns a key to its default.
  REQUIRE(ctl(dir, n.client, "topic alter-config orders --set retention.bytes=1048576 --delete retention.ms", "", out)
          == 0);
  REQUIRE(ctl(dir, n.client, "topic describe orders --format json", "", out) == 0);
  auto j = nlohmann::json::parse(text());
  CHECK(j["config"][1] == nlohmann::json{{"name", "retention.bytes"}, {"value", "1048576"}, {"default", false},
                                         {"source", "topic"}, {"read_only", false}});
  CHECK(j["config"][2]["default"] == true);
  CHECK(ctl(dir, n.client, "topic alter-config orders --set nope=1", "", out) == 1);
  REQUIRE(ctl(dir, n.client, "topic add-partitions orders -n 2", "", out) == 0);
  CHECK(text() == "orders now has 4 partitions\n");

  // A group that consumed 4 of the 10 records: lag 6, then deleted.
  REQUIRE(ctl(dir, n.client, "consume orders -g g1 -c 4", "", out) == 0);
  REQUIRE(ctl(dir, n.client, "group list", "", out) == 0);
  CHECK(text().find("g1") != std::string::npos);
  REQUIRE(ctl(dir, n.client, "group describe g1 --format json", "", out) == 0);
  auto g = nlohmann::json::parse(text());
  CHECK(g["lag"] == 6);
  REQUIRE(ctl(dir, n.client, "group describe g1", "", out) == 0);
  CHECK(text().find("TOTAL-LAG    6\n") != std::string::npos);
  REQUIRE(ctl(dir, n.client, "group delete g1", "", out) == 0);
  CHECK(text() == "deleted g1\n");
  CHECK(ctl(dir, n.client, "group describe g1", "", out) == 1);

  REQUIRE(ctl(dir, n.client, "topic delete orders", "", out) == 0);
  REQUIRE(ctl(dir, n.client, "topic list", "", out) == 0);
  CHECK(text().find("orders") == std::string::npos);
  n.stop();
}

TEST_CASE("moonmqctl produce pipelines its requests and keeps the order of the lines", "[broker][ctl][pipelining]") {
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "ordered", 2);
  auto lines = write_lines(dir.path() + "/in.txt", "line ", 6000);
  // 120 requests of 50 lines, 16 in flight (the server's bound), each
  // answered after its fsync: one partition must hold the lines in order,
  // with consecutive offsets printed in line order.
  REQUIRE(ctl(dir, n.client, "produce ordered -p 1 --batch 50 --in-flight 16 --print-offsets", dir.path() + "/in.txt",
              dir.path() + "/offsets.txt") == 0);
  auto printed = lines_of(dir.path() + "/offsets.txt");
  REQUIRE(printed.size() == lines.size());
  for (size_t i = 0; i < printed.size(); ++i)
    REQUIRE(printed[i] == "1\t" + std::to_string(i) + "\t" + lines[i]);
  REQUIRE(ctl(dir, n.client, "consume ordered -p 1", "", dir.path() + "/out.txt") == 0);
  CHECK(lines_of(dir.path() + "/out.txt") == lines);
}

// A flushed segment damaged while the node is down (bit rot): after the
// restart that partition is offline with the damage in its error, every
// other partition serves produce and fetch, /admin/actors and
// moonmq_offline_partitions show it, and the operator's repair cuts at the
// damage, says how many records went and keeps offsets above the recovery
// point, so no acknowledged offset is given out twice.

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

#include "tests/broker/broker_client.hpp"

using namespace moonmq::test;
using namespace moonmq::test::broker;

namespace {

/// Produces `n` records of `value_prefix`<i> to one partition of "cor",
/// acks=leader; returns the acknowledged offsets.
std::vector<int64_t> produce(uint16_t port, int partition, int n, const std::string& value_prefix) {
  return produce_values(port, "cor", partition, n, value_prefix);
}

/// The value of gauge `name` (no labels) in the /metrics text, -1 if absent.
double gauge_value(uint16_t admin, const std::string& name) {
  auto text = call(admin, "GET", "/metrics").raw;
  auto at = text.find("\n" + name + " ");
  if (at == std::string::npos)
    return -1;
  return std::stod(text.substr(at + name.size() + 2));
}

/// The state of the actor named `name` in /admin/actors.
json actor_state(uint16_t admin, const std::string& name) {
  auto a = call(admin, "GET", "/admin/actors");
  REQUIRE(a.status == 200);
  for (const auto& actor : a.body["actors"])
    if (actor["name"] == name)
      return actor["state"];
  FAIL("no actor named " << name << " in " << a.raw.substr(0, 2000));
  return nullptr;
}

}  // namespace

TEST_CASE("a corrupt partition goes offline alone and the repair never reuses an offset",
          "[broker][corruption]") {
  expected_log_errors expected{{"partition.corrupt"}};
  temp_dir dir;
  auto n = running_node::start(dir);
  create_topic(n.client, "cor", 2);
  // Ten produce requests: ten batches of 100 records in partition 0.
  for (int r = 0; r < 10; ++r) {
    auto offs = produce(n.client, 0, 100, "p0-" + std::to_string(r) + "-");
    REQUIRE(offs.front() == r * 100);
    produce(n.client, 1, 10, "p1-" + std::to_string(r) + "-");
  }
  n.stop();

  // Two bytes XOR-ed in the middle of partition 0's segment, as a disk
  // error would leave them.
  const auto segment = dir.path() + "/data/cor-0/00000000000000000000.log";
  std::string bytes;
  {
    std::ifstream f(segment, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  REQUIRE(bytes.size() > 1000);
  const size_t mid = bytes.size() / 2;
  // The batch holding byte `mid` (batchLength: big-endian at 8..11).
  size_t batch_pos = 0;
  int64_t batch_base = 0;
  for (size_t pos = 0; pos <= mid;) {
    uint32_t len = 0;
    for (size_t i = 8; i < 12; ++i)
      len = (len << 8) | static_cast<uint8_t>(bytes[pos + i]);
    batch_pos = pos;
    batch_base = static_cast<int64_t>(pos == 0 ? 0 : batch_base + 100);
    pos += 12 + len;
  }
  bytes[mid] = static_cast<char>(bytes[mid] ^ 0x5a);
  bytes[mid + 1] = static_cast<char>(bytes[mid + 1] ^ 0x5a);
  {
    std::ofstream f(segment, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  n = running_node::start(dir);
  // The other partition serves produce and fetch.
  auto p1 = produce(n.client, 1, 5, "p1-after-");
  CHECK(p1.front() == 100);
  CHECK(fetch_all(n.client, "cor", 1).size() == 105);

  // The damaged one answers the offline error: nothing was cut, no offset
  // is handed out again.
  json one{{"records", json::array({json{{"partition", 0}, {"value", "x"}}})}};
  auto refused = call(n.client, "POST", "/v1/topics/cor/records?acks=leader", one);
  INFO(refused.raw);
  CHECK(refused.status == 503);
  CHECK(refused.body["error"] == "partition_offline");
  CHECK_THAT(refused.body["message"].get<std::string>(), Catch::Contains(segment));
  auto unreadable = call(n.client, "GET", "/v1/topics/cor/partitions/0/records?offset=0");
  CHECK(unreadable.status == 503);
  CHECK(unreadable.body["error"] == "partition_offline");

  // /admin/actors shows the damage; the gauge counts it; it is logged.
  auto state = actor_state(n.admin, "partition cor-0");
  INFO(state.dump());
  CHECK(state["online"] == false);
  const auto& c = state["corruption"];
  CHECK(c["file"] == segment);
  const int64_t first = c["first_offset"].get<int64_t>();
  CHECK(first == batch_base);  // the batch holding the damaged bytes
  CHECK(c["position"] == batch_pos);
  CHECK(c["end_offset"] == 1000);
  CHECK(c["recovery_point"] == 1000);
  CHECK(state["repair"] == "POST /admin/partitions/cor/0/truncate-corrupt");
  CHECK(actor_state(n.admin, "partition cor-1")["online"] == true);
  CHECK(gauge_value(n.admin, "moonmq_offline_partitions") == 1);
  CHECK_THAT(n.node->log(), Catch::Contains("partition.corrupt topic=cor partition=0"));

  // The explicit repair cuts at the damage and reports what went.
  auto repaired = call(n.admin, "POST", "/admin/partitions/cor/0/truncate-corrupt");
  INFO(repaired.raw);
  REQUIRE(repaired.status == 200);
  CHECK(repaired.body["records_removed"] == 1000 - first);
  CHECK(repaired.body["bytes_removed"].get<uint64_t>() == bytes.size() - c["position"].get<uint64_t>());
  CHECK(repaired.body["log_end_offset"] == 1000);
  CHECK(gauge_value(n.admin, "moonmq_offline_partitions") == 0);
  CHECK(call(n.admin, "POST", "/admin/partitions/cor/0/truncate-corrupt").status == 409);

  // Appends continue above every offset ever acknowledged.
  auto after = produce(n.client, 0, 3, "p0-after-");
  CHECK(after.front() == 1000);
  // Reads: the kept records at their offsets, then the gap is skipped.
  std::vector<std::pair<int64_t, std::string>> got;
  int64_t next = 0;
  for (int page = 0; page < 100 && next < 1003; ++page) {
    auto f = call(n.client, "GET", "/v1/topics/cor/partitions/0/records?offset=" + std::to_string(next));
    REQUIRE(f.status == 200);
    for (const auto& r : f.body["records"])
      got.emplace_back(r["offset"].get<int64_t>(), r["value"].get<std::string>());
    next = f.body["next_offset"].get<int64_t>();
    if (f.body["records"].empty())
      break;
  }
  REQUIRE(got.size() == static_cast<size_t>(first) + 3);
  for (int64_t o = 0; o < first; ++o) {
    CHECK(got[static_cast<size_t>(o)].first == o);
    CHECK(got[static_cast<size_t>(o)].second == "p0-" + std::to_string(o / 100) + "-" + std::to_string(o % 100));
  }
  CHECK(got[static_cast<size_t>(first)].first == 1000);
  CHECK(got.back() == std::make_pair(int64_t{1002}, std::string("p0-after-2")));

  // A restart keeps all of it.
  n.stop();
  n = running_node::start(dir);
  CHECK(actor_state(n.admin, "partition cor-0")["log_end_offset"] == 1003);
  CHECK(gauge_value(n.admin, "moonmq_offline_partitions") == 0);
  n.stop();
}

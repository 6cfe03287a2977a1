#include "tests/kafka_node/txn_support.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "cluster/group_placement.hpp"

namespace moonmq::test {

using namespace std::chrono_literals;

std::multiset<std::string> lines_with(const std::string& out, const std::string& prefix) {
  std::multiset<std::string> found;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0)
      found.insert(line.substr(prefix.size()));
  return found;
}

std::multiset<std::string> values(const std::string& tag, int n) {
  std::multiset<std::string> out;
  for (int i = 0; i < n; ++i)
    out.insert(tag + "-" + std::to_string(i));
  return out;
}

std::string python_reader() {
  return "def read(level, want):\n"
         "    c = Consumer({'bootstrap.servers': bs, 'group.id': 'rd-' + level, 'isolation.level': level,\n"
         "                  'auto.offset.reset': 'earliest', 'enable.auto.commit': False})\n"
         "    c.assign([TopicPartition(t, 0, 0) for t in topics])\n"
         "    got = []\n"
         "    idle = 0\n"
         "    while idle < 6:\n"
         "        m = c.poll(0.5)\n"
         "        if m is None:\n"
         "            idle += 1 if len(got) >= want else 0\n"
         "            continue\n"
         "        if m.error():\n"
         "            continue\n"
         "        got.append(m.value().decode())\n"
         "    c.close()\n"
         "    for v in got:\n"
         "        print(level, v)\n";
}

python_run::python_run(const std::string& dir, const std::string& name, const std::string& code)
    : name_(dir + "/" + name), log_(dir + "/" + name + ".out") {
  {
    std::ofstream f(dir + "/" + name);
    f << "import os, time\n"
         "def wait_for(step):\n"
         "    deadline = time.time() + 60\n"
         "    while not os.path.exists('" + name_ + ".' + step):\n"
         "        if time.time() > deadline:\n"
         "            raise SystemExit('the test never let the script past ' + step)\n"
         "        time.sleep(0.05)\n"
      << code;
  }
  REQUIRE(proc_.start("/usr/bin/python3", {"-u", name_}, log_));
}

bool python_run::printed(const std::string& prefix, std::chrono::milliseconds timeout) {
  return wait_until([&] { return !lines_with(output(), prefix).empty(); }, timeout);
}

void python_run::expect(const std::string& prefix, std::chrono::milliseconds timeout) {
  if (!printed(prefix, timeout))
    FAIL("the script printed no line starting with '" << prefix << "'; its output:\n" << output());
}

void python_run::proceed(const std::string& step) { std::ofstream(name_ + "." + step) << step; }

nlohmann::json txn_record(uint16_t admin, const std::string& transactional_id) {
  auto a = move::call(admin, "GET", "/admin/transactions");
  if (a.status != 200 || !a.body.is_object() || !a.body["transactions"].is_array())
    return nullptr;
  for (const auto& row : a.body["transactions"])
    if (row.value("transactional_id", "") == transactional_id)
      return row;
  return nullptr;
}

std::string txn_id_coordinated_by(const std::string& first, const std::vector<std::string>& all,
                                  const std::vector<std::vector<std::string>>& also) {
  for (int n = 0;; ++n) {
    auto id = "txn-" + std::to_string(n);
    bool fits = cluster::group_coordinator(id, all) == first;
    for (const auto& set : also)
      fits = fits && cluster::group_coordinator(id, set) == first;
    if (fits)
      return id;
  }
}

}  // namespace moonmq::test

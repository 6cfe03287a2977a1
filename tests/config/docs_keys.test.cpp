// docs/configuration.md against the loader: every key the loader looks for
// is in the documentation's key table, and every key the table names is one
// the loader looks for. A key added to config/loader.cpp without a row, or a
// row left behind by a renamed key, fails here.

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "config/loader.hpp"

using namespace moonmq::config;

namespace {

/// "Server.Cluster.Peers[0].Id" → "Server.Cluster.Peers[].Id";
/// "Server.Autobalance.Goals.NW_IN.Enabled" → "….Goals.<NAME>.Enabled".
std::string normal(std::string key) {
  key = std::regex_replace(key, std::regex(R"(\[[0-9]+\])"), "[]");
  return std::regex_replace(key, std::regex(R"(^(Server\.Autobalance\.Goals)\.[^.]+)"), "$1.<NAME>");
}

/// The keys the first column of each table row of docs/configuration.md
/// names: `A.B.X/Y/Z` is A.B.X, A.B.Y and A.B.Z; a row whose key ends in
/// `[]` or `.<NAME>` also names the fields its type column lists in braces
/// (`{Id, Address}`), and the array or map itself.
std::set<std::string> documented() {
  std::ifstream in(std::string(MOONMQ_SOURCE_DIR) + "/docs/configuration.md");
  REQUIRE(in);
  std::set<std::string> keys;
  const std::regex row{R"(^\| `([^`]+)`(?:, `([^`]+)`)? \|([^|]*)\|)"};
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, row))
      continue;
    for (int col : {1, 2}) {
      std::string key = m[col].str();
      if (key.empty())
        continue;
      bool container = key.size() > 7 && (key.compare(key.size() - 2, 2, "[]") == 0
                                          || key.compare(key.size() - 7, 7, ".<NAME>") == 0);
      if (!container) {
        auto dot = key.rfind('.', key.find('/'));
        std::string prefix = key.substr(0, dot + 1);
        std::stringstream names(key.substr(dot + 1));
        for (std::string name; std::getline(names, name, '/');)
          keys.insert(prefix + name);
        continue;
      }
      keys.insert(key.substr(0, key.size() - (key.back() == ']' ? 2 : 7)));
      auto type = m[3].str();
      auto open = type.find('{'), close = type.find('}');
      if (open == std::string::npos || close == std::string::npos)
        continue;
      std::stringstream fields(type.substr(open + 1, close - open - 1));
      for (std::string f; std::getline(fields, f, ',');) {
        f.erase(0, f.find_first_not_of(' '));
        f.erase(f.find_last_not_of(' ') + 1);
        keys.insert(key + "." + f);
      }
    }
  }
  return keys;
}

}  // namespace

TEST_CASE("docs/configuration.md documents every key the loader reads, and no other", "[config]") {
  // Every section present (with one peer and one goal), so that the loader
  // looks for every key it knows.
  auto r = load_text(R"({"Server": {
    "Admin": {}, "Kafka": {}, "Http": {}, "Storage": {}, "Groups": {}, "Scheduler": {}, "Placement": {},
    "Autobalance": {"Goals": {"NW_IN": {}}},
    "Cluster": {"BrokerId": "b1", "Tls": {}, "Raft": {},
                "Peers": [{"Id": "b2", "Address": "127.0.0.1:9096"}]}}})",
                     "docs_keys", {});
  INFO([&] {
    std::string all;
    for (const auto& e : r.errors)
      all += e + "\n";
    return all;
  }());
  REQUIRE(r.ok());
  std::set<std::string> read;
  for (const auto& k : r.keys_read)
    read.insert(normal(k));
  auto docs = documented();
  std::string undocumented, unread;
  for (const auto& k : read)
    if (!docs.count(k))
      undocumented += k + "\n";
  for (const auto& k : docs)
    if (!read.count(k))
      unread += k + "\n";
  INFO("read by the loader, not in docs/configuration.md:\n" << undocumented);
  INFO("in docs/configuration.md, not read by the loader:\n" << unread);
  CHECK(undocumented.empty());
  CHECK(unread.empty());
}

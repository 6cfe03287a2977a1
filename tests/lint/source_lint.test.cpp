// Checks over moonmq's own sources for bug patterns the compiler accepts.
//
// A range-for over `*holder->snapshot()` (a function returning a
// std::shared_ptr) keeps only the reference `*` gives: the shared_ptr
// temporary dies before the first iteration, so when the holder publishes a
// newer snapshot the container is freed under the loop (heap-use-after-free;
// seen as a broker crashing in std::_Rb_tree_increment while GET
// /cluster/owners iterated the metadata image during a join). The snapshot
// must be held in a named local first.
//
// A test name whose part before the first ": " is long hangs the run when
// the test fails: Catch2 2.13's console reporter indents the header's
// continuation lines by that part, and once the indent nears its 79
// columns it prints the same line forever (a failing test of a 76-character
// part filled its output with "-" lines until killed).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// Calls `fn(relative path, whole text)` for each of the project's C++
/// sources (.cpp, and .hpp unless `cpp_only`), build and dot directories and
/// this folder (whose files spell the patterns out) left out.
template <class Fn>
void for_each_source(bool cpp_only, Fn fn) {
  const fs::path root{MOONMQ_SOURCE_DIR};
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const auto& p = it->path();
    if (it->is_directory() && (p.filename() == "build" || p.filename().string().front() == '.')) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || (p.extension() != ".cpp" && (cpp_only || p.extension() != ".hpp")))
      continue;
    if (p.parent_path().filename() == "lint")
      continue;
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    fn(fs::relative(p, root).string(), text.str());
  }
}

/// "path:line: text" of every line of the project's C++ sources matching `pattern`.
std::vector<std::string> matches(const std::regex& pattern) {
  std::vector<std::string> found;
  for_each_source(false, [&](const std::string& path, const std::string& text) {
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::regex_search(line, pattern))
        found.push_back(path + ":" + std::to_string(n) + ": " + line);
  });
  return found;
}

}  // namespace

TEST_CASE("no range-for iterates through a snapshot it does not hold", "[lint]") {
  // `for (x : *a->b())` and `for (x : *a.b())`: the dereferenced call's result is a temporary.
  const std::regex dangling{R"(for \([^;]*:\s*\*[A-Za-z_][A-Za-z0-9_.>-]*(->|\.)[A-Za-z_][A-Za-z0-9_]*\([^()]*\)\))"};
  auto found = matches(dangling);
  std::ostringstream list;
  for (const auto& f : found)
    list << f << "\n";
  INFO(list.str());
  CHECK(found.empty());
  // The pattern does catch the form it is for.
  CHECK(std::regex_search("  for (const auto& [tp, owner] : *ctx.owners->get())", dangling));
  CHECK_FALSE(std::regex_search("  for (const auto& [tp, owner] : *owners)", dangling));
}

namespace {

/// The name of the TEST_CASE whose "(" is at `open` in `source`: its
/// adjacent string literals joined (escapes kept as written).
std::string test_name_at(const std::string& source, std::size_t open) {
  std::string name;
  std::size_t i = open + 1;
  for (;;) {
    while (i < source.size() && std::isspace(static_cast<unsigned char>(source[i])))
      ++i;
    if (i >= source.size() || source[i] != '"')
      return name;
    for (++i; i < source.size() && source[i] != '"'; ++i) {
      if (source[i] == '\\' && i + 1 < source.size())
        name += source[i++];
      name += source[i];
    }
    ++i;
  }
}

}  // namespace

TEST_CASE("test names keep their part before the first colon-space short", "[lint]") {
  constexpr std::size_t longest = 64;  // leaves Catch2 15 columns to wrap the rest in
  std::vector<std::string> too_long;
  std::size_t names = 0;
  for_each_source(true, [&](const std::string& path, const std::string& source) {
    for (auto at = source.find("TEST_CASE("); at != std::string::npos; at = source.find("TEST_CASE(", at + 1)) {
      auto name = test_name_at(source, at + std::string("TEST_CASE").size());
      if (name.empty())
        continue;
      ++names;
      if (auto colon = name.find(": "); colon != std::string::npos && colon > longest)
        too_long.push_back(path + ": " + name);
    }
  });
  std::ostringstream list;
  for (const auto& t : too_long)
    list << t << "\n";
  INFO(list.str());
  CHECK(too_long.empty());
  CHECK(names > 500);  // the scan does find the suite's tests
  CHECK(test_name_at(R"x(("a b: " "c\"d", "[x]"))x", 0) == R"x(a b: c\"d)x");
}

// The folders form layers (README "Layout"): the pure libraries below
// everything, `peers/` (how a broker reaches its peers) above them, `net/`
// (HTTP) and `actors/` side by side above that, `api/` (routes and the
// Kafka listener) over both, `node/` (the composition root) over
// everything, `tools/` on top. An include that goes up or
// sideways makes a cycle in the folder graph: the actors would depend on
// HTTP types, or the HTTP machinery on actors.
TEST_CASE("folders include only the folders below them", "[lint]") {
  const std::vector<std::string> pure{"util",    "config", "storage", "groups", "dataplane", "cluster",
                                      "placement", "goals", "plugins", "raft",   "kafka"};
  std::vector<std::pair<std::string, std::vector<std::string>>> forbidden;  // folder -> folders it may not include
  for (const auto& p : pure)
    forbidden.push_back({p, {"peers", "net", "actors", "api", "node", "tools"}});
  forbidden.push_back({"peers", {"net", "actors", "api", "node", "tools"}});
  forbidden.push_back({"net", {"actors", "api", "node", "tools"}});
  forbidden.push_back({"actors", {"net", "api", "node", "tools"}});
  forbidden.push_back({"api", {"node", "tools"}});
  forbidden.push_back({"node", {"tools"}});
  std::vector<std::string> found;
  const std::regex include{R"re(^\s*#\s*include\s*"([a-z_]+)/)re"};
  for_each_source(false, [&](const std::string& path, const std::string& text) {
    auto folder = path.substr(0, path.find('/'));
    auto rule = std::find_if(forbidden.begin(), forbidden.end(), [&](const auto& r) { return r.first == folder; });
    if (rule == forbidden.end())
      return;
    std::istringstream in(text);
    std::string line;
    std::smatch m;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::regex_search(line, m, include)
          && std::find(rule->second.begin(), rule->second.end(), m[1].str()) != rule->second.end())
        found.push_back(path + ":" + std::to_string(n) + ": " + line);
  });
  INFO([&] {
    std::string all;
    for (const auto& f : found)
      all += f + "\n";
    return all;
  }());
  CHECK(found.empty());
}

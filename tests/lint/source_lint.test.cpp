// Checks over moonmq's own sources for bug patterns the compiler accepts.
//
// A range-for over `*holder->snapshot()` (a function returning a
// std::shared_ptr) keeps only the reference `*` gives: the shared_ptr
// temporary dies before the first iteration, so when the holder publishes a
// newer snapshot the container is freed under the loop (heap-use-after-free;
// seen as a broker crashing in std::_Rb_tree_increment while GET
// /cluster/owners iterated the metadata image during a join). The snapshot
// must be held in a named local first.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// "path:line: text" of every line of the project's C++ sources matching `pattern`.
std::vector<std::string> matches(const std::regex& pattern) {
  std::vector<std::string> found;
  const fs::path root{MOONMQ_SOURCE_DIR};
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const auto& p = it->path();
    if (it->is_directory() && (p.filename() == "build" || p.filename().string().front() == '.')) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || (p.extension() != ".cpp" && p.extension() != ".hpp"))
      continue;
    if (p.parent_path().filename() == "lint")  // this file spells the patterns out
      continue;
    std::ifstream in(p);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::regex_search(line, pattern))
        found.push_back(fs::relative(p, root).string() + ":" + std::to_string(n) + ": " + line);
  }
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

#pragma once
// The command line of benchmarks that run moonmq-node children: `--name
// value` pairs, `--node PATH` and `--dir D` common to all, `--help`.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <type_traits>
#include <variant>

namespace moonmq::bench {

/// Where a benchmark runs: the moonmq-node binary and the directory for its
/// data dirs and files (a benchmark's options struct derives from this).
struct node_options {
  std::string node;  ///< `--node PATH`; default: moonmq-node beside the benchmark
  std::string dir;   ///< `--dir D`; default: the current directory
};

/// Where an option's value goes: a number, converted as std::atoi / atoll /
/// atol / atof would, or a string; a `bool` option takes no value and sets
/// its flag.
using option_target = std::variant<int*, int64_t*, size_t*, double*, std::string*, bool*>;

/// Parses argv into the options of `targets` plus `--node` and `--dir` of
/// `o`; `--help`/`-h` prints `usage` and exits 0. Then fills the defaults of
/// `o.node` and `o.dir`. Returns 0, or 2 after printing what is wrong
/// (missing value, unknown option) to stderr.
inline int parse_node_options(int argc, char** argv, const char* usage, node_options& o,
                              std::map<std::string, option_target> targets) {
  targets.emplace("--node", &o.node);
  targets.emplace("--dir", &o.dir);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", usage);
      std::exit(0);
    }
    auto t = targets.find(a);
    if (t != targets.end() && std::holds_alternative<bool*>(t->second)) {
      *std::get<bool*>(t->second) = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "missing value for %s\n", a.c_str());
      return 2;
    }
    const char* v = argv[++i];
    if (t == targets.end()) {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
    std::visit(
      [v](auto* field) {
        using field_type = std::remove_pointer_t<decltype(field)>;
        if constexpr (std::is_same_v<field_type, int>)
          *field = std::atoi(v);
        else if constexpr (std::is_same_v<field_type, int64_t>)
          *field = std::atoll(v);
        else if constexpr (std::is_same_v<field_type, size_t>)
          *field = static_cast<size_t>(std::atol(v));
        else if constexpr (std::is_same_v<field_type, double>)
          *field = std::atof(v);
        else if constexpr (std::is_same_v<field_type, std::string>)
          *field = v;
      },
      t->second);
  }
  if (o.node.empty())
    o.node = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "moonmq-node").string();
  if (o.dir.empty())
    o.dir = std::filesystem::current_path().string();
  return 0;
}

}  // namespace moonmq::bench

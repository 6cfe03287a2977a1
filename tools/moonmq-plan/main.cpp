// moonmq-plan --model FILE [--goals-dir DIR] [--format plan|reassignment]:
// offline planner (CONTRACT §1, §6). Reads a cluster model (or a planner
// case file, tests/goals/cases: its "model"), loads the goal plugins, prints
// the plan JSON on stdout, or with --format reassignment the plan's moves as
// the reassignment `moonmqctl reassign execute --plan` takes. Exit 0 on success, 2 on invalid input (arguments, model file,
// goals directory) with a message on stderr. Plugin files that fail to load
// are reported on stderr and skipped.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <boost/dll/runtime_symbol_info.hpp>
#include <nlohmann/json.hpp>

#include "goals/detector.hpp"
#include "goals/model_json.hpp"
#include "plugins/goal_loader.hpp"

namespace {

constexpr int kExitInvalid = 2;

const char* kUsage =
    "usage: moonmq-plan --model FILE [--goals-dir DIR] [--format plan|reassignment]\n"
    "  --model FILE      cluster model JSON (brokers, partitions, goals, ...), or a planner case\n"
    "                    file ({\"model\": ...}, tests/goals/cases)\n"
    "  --goals-dir DIR   goal plugins directory (default: <dir of moonmq-plan>/plugins)\n"
    "  --format F        plan (default): the whole plan; reassignment: its moves as\n"
    "                    {\"version\":1,\"partitions\":[...]} for moonmqctl reassign execute\n"
    "Prints the plan JSON on stdout. Exit 0, or 2 on invalid input.\n";

int invalid(const std::string& message) {
  std::cerr << "moonmq-plan: " << message << "\n";
  return kExitInvalid;
}

std::string default_goals_dir() {
  boost::dll::fs::error_code ec;
  const auto exe = boost::dll::program_location(ec);
  if (ec) return "plugins";
  return (exe.parent_path() / "plugins").string();
}

/// The file's bytes followed by kModelTextPadding spaces. A regular file is
/// read straight into `out` (no second copy of a model that may be over
/// 100 MiB); anything else (a pipe) is read to its end. False when unreadable.
bool read_padded(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return false;
    out.assign(size + moonmq::goals::kModelTextPadding, ' ');
    const auto want = static_cast<std::streamsize>(size);
    return in.read(out.data(), want).gcount() == want;
  }
  std::ostringstream all;
  all << in.rdbuf();
  out = all.str();
  out.append(moonmq::goals::kModelTextPadding, ' ');
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, goals_dir, format = "plan";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string& out) -> bool {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--model") {
      if (!value(model_path)) return invalid("--model needs a FILE\n" + std::string(kUsage));
    } else if (arg == "--goals-dir") {
      if (!value(goals_dir)) return invalid("--goals-dir needs a DIR\n" + std::string(kUsage));
    } else if (arg == "--format") {
      if (!value(format) || (format != "plan" && format != "reassignment"))
        return invalid("--format needs plan or reassignment\n" + std::string(kUsage));
    } else {
      return invalid("unknown argument \"" + arg + "\"\n" + kUsage);
    }
  }
  if (model_path.empty()) return invalid("--model FILE is required\n" + std::string(kUsage));
  if (goals_dir.empty()) goals_dir = default_goals_dir();

  std::string text;
  if (!read_padded(model_path, text)) return invalid("cannot read model file \"" + model_path + "\"");
  const std::string_view model_text(text.data(), text.size() - moonmq::goals::kModelTextPadding);
  auto model = moonmq::goals::model_from_text(model_text, moonmq::goals::kModelTextPadding);
  if (!model) {
    // A planner case file holds the model under "model".
    auto doc = nlohmann::json::parse(model_text, nullptr, false);
    if (doc.is_object() && !doc.contains("brokers") && doc.contains("model") && doc["model"].is_object())
      model = moonmq::goals::model_from_text(doc["model"].dump());
  }
  if (!model) return invalid("invalid model \"" + model_path + "\": " + model.error());

  const auto loaded = moonmq::plugins::load_goal_dir(goals_dir);
  for (const auto& e : loaded.errors) {
    if (e.path == goals_dir) return invalid(e.message);
    std::cerr << "moonmq-plan: warning: " << e.message << "\n";
  }
  if (loaded.goals.empty()) std::cerr << "moonmq-plan: warning: no goal plugin loaded from " << goals_dir << "\n";
  std::vector<const moonmq::goals::goal*> goals;
  for (const auto& g : loaded.goals) goals.push_back(g.goal.get());
  for (const auto& [name, o] : model->goals) {
    bool known = false;
    for (const auto& g : loaded.goals) known = known || g.name == name;
    if (!known && o.enabled.value_or(true))
      std::cerr << "moonmq-plan: warning: goal \"" << name << "\" is configured but no plugin provides it\n";
  }
  auto plan = moonmq::goals::make_plan(model.value(), goals);
  if (!plan) return invalid("invalid model \"" + model_path + "\": " + plan.error());
  std::cout << (format == "reassignment" ? moonmq::goals::plan_to_reassignment(plan.value())
                                          : moonmq::goals::plan_to_json(plan.value()))
                 .dump(2)
            << "\n";
  return std::cout.good() ? 0 : 1;
}

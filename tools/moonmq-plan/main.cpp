// moonmq-plan --model FILE [--goals-dir DIR] [--format plan|reassignment]:
// offline planner (CONTRACT §1, §6). Reads a cluster model (or a planner
// case file, tests/goals/cases: its "model"), loads the goal plugins, prints
// the plan JSON on stdout, or with --format reassignment the plan's moves as
// the reassignment `moonmqctl reassign execute --plan` takes. Exit 0 on success, 2 on invalid input (arguments, model file,
// goals directory) with a message on stderr. Plugin files that fail to load
// are reported on stderr and skipped.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
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

/// read(2), repeated when a signal interrupts it: bytes read, 0 at end of
/// file, -1 on an error.
ssize_t read_some(int fd, char* out, std::size_t size) {
  for (;;) {
    const ssize_t n = ::read(fd, out, size);
    if (n >= 0 || errno != EINTR) return n;
  }
}

/// A model file's bytes followed by kModelTextPadding readable bytes (what
/// model_from_text needs to read it without a copy). A regular file is read
/// straight into an anonymous mapping populated up front: one batch of page
/// allocations instead of a fault per 4 KiB page of a model that may be over
/// 100 MiB. Anything else (a pipe), a file whose size fstat gives as 0
/// (procfs) and the rest of a file that grew past that size while being
/// read are read into a string, up to end of file.
class model_buffer {
 public:
  model_buffer() = default;
  model_buffer(const model_buffer&) = delete;
  model_buffer& operator=(const model_buffer&) = delete;
  ~model_buffer() {
    if (map_ != MAP_FAILED) munmap(map_, mapped_);
  }

  /// False when the file cannot be read (a directory cannot).
  bool read(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    const bool ok = fstat(fd, &st) == 0 &&
                    (S_ISREG(st.st_mode) && st.st_size > 0 ? read_regular(fd, st) : read_stream(fd));
    close(fd);
    return ok;
  }
  /// The file's bytes; kModelTextPadding more bytes are readable after them.
  std::string_view text() const {
    return map_ != MAP_FAILED ? std::string_view(static_cast<const char*>(map_), size_)
                              : std::string_view(copy_.data(), size_);
  }

 private:
  bool read_regular(int fd, const struct stat& st) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    size_ = static_cast<std::size_t>(st.st_size);
    mapped_ = (size_ + moonmq::goals::kModelTextPadding + page - 1) / page * page;
    map_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (map_ == MAP_FAILED) return false;
    char* const bytes = static_cast<char*>(map_);
    for (std::size_t done = 0; done < size_;) {
      const ssize_t n = read_some(fd, bytes + done, size_ - done);
      if (n < 0) return false;
      if (n == 0) {  // the file shrank while being read: its text ends here
        size_ = done;
        return true;
      }
      done += static_cast<std::size_t>(n);
    }
    // End of file where fstat said? If the file grew, the rest goes with
    // what was read into a string.
    char next = 0;
    const ssize_t more = read_some(fd, &next, 1);
    if (more <= 0) return more == 0;
    copy_.assign(bytes, size_);
    copy_.push_back(next);
    munmap(map_, mapped_);
    map_ = MAP_FAILED;
    return read_stream(fd);
  }
  /// Appends the rest of the file to copy_, then the padding.
  bool read_stream(int fd) {
    char chunk[65536];
    for (;;) {
      const ssize_t n = read_some(fd, chunk, sizeof chunk);
      if (n < 0) return false;
      if (n == 0) break;
      copy_.append(chunk, static_cast<std::size_t>(n));
    }
    size_ = copy_.size();
    copy_.append(moonmq::goals::kModelTextPadding, ' ');
    return true;
  }

  void* map_ = MAP_FAILED;
  std::size_t mapped_ = 0;
  std::size_t size_ = 0;
  std::string copy_;
};

/// The model in `text`: a cluster model, or a planner case file's "model".
moonmq::goals::outcome<moonmq::goals::cluster_model> read_model(std::string_view text) {
  auto model = moonmq::goals::model_from_text(text, moonmq::goals::kModelTextPadding);
  // A planner case file holds the model under "model", so it has no
  // "brokers": only then is the text parsed again to look for it.
  if (!model && model.error() == "brokers: missing or not an array") {
    auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_object() && !doc.contains("brokers") && doc.contains("model") && doc["model"].is_object())
      model = moonmq::goals::model_from_text(doc["model"].dump());
  }
  return model;
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

  std::optional<moonmq::goals::outcome<moonmq::goals::cluster_model>> model;
  {  // the file's text is released before planning
    model_buffer buffer;
    if (!buffer.read(model_path)) return invalid("cannot read model file \"" + model_path + "\"");
    model = read_model(buffer.text());
  }
  if (!model->ok()) return invalid("invalid model \"" + model_path + "\": " + model->error());
  const moonmq::goals::cluster_model& cluster = model->value();

  const auto loaded = moonmq::plugins::load_goal_dir(goals_dir);
  for (const auto& e : loaded.errors) {
    if (e.path == goals_dir) return invalid(e.message);
    std::cerr << "moonmq-plan: warning: " << e.message << "\n";
  }
  if (loaded.goals.empty()) std::cerr << "moonmq-plan: warning: no goal plugin loaded from " << goals_dir << "\n";
  std::vector<const moonmq::goals::goal*> goals;
  for (const auto& g : loaded.goals) goals.push_back(g.goal.get());
  for (const auto& [name, o] : cluster.goals) {
    bool known = false;
    for (const auto& g : loaded.goals) known = known || g.name == name;
    if (!known && o.enabled.value_or(true))
      std::cerr << "moonmq-plan: warning: goal \"" << name << "\" is configured but no plugin provides it\n";
  }
  auto plan = moonmq::goals::make_plan(cluster, goals);
  if (!plan) return invalid("invalid model \"" + model_path + "\": " + plan.error());
  std::cout << (format == "reassignment" ? moonmq::goals::plan_to_reassignment(plan.value())
                                          : moonmq::goals::plan_to_json(plan.value()))
                 .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)  // a plugin's text may not be UTF-8
            << "\n";
  return std::cout.good() ? 0 : 1;
}

// moonmq-node: one broker (CONTRACT.md §1): the command line and the
// signals around the composition root (node/node_runtime.hpp).
//
//   moonmq-node [--config FILE] [--set Dotted.Key=value ...]
//
// Exit codes: 0 clean shutdown (SIGINT/SIGTERM), 1 runtime failure (a
// listener that cannot bind, an unwritable data dir), 2 invalid
// configuration (the message names the key or the file and line).

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <malloc.h>
#include <pthread.h>

#include "config/loader.hpp"
#include "moonmq/version.hpp"
#include "node/node_runtime.hpp"
#include "util/logging.hpp"

namespace {

using namespace moonmq;

/// Pins glibc malloc's mmap threshold at 32 MiB and its trim threshold at
/// 64 MiB: the values its dynamic adjustment reaches after the first freed
/// 32 MiB block (mallopt(3)), set from the start. Batch lists, request
/// bodies and fetch answers of 128 KiB to a few MiB are then reused from
/// the heap instead of being mapped and unmapped each time: every fresh
/// page is a page fault, which made the source read and the destination
/// append of a move copy each cost several ms per MiB on a virtual machine,
/// and a window of appends gained nothing (bench/move/README.md). Freed
/// memory is kept for reuse (trimmed only past 64 MiB at the top of each
/// arena). The environment's MALLOC_MMAP_THRESHOLD_ /
/// MALLOC_TRIM_THRESHOLD_, or the same glibc.malloc tunables in
/// GLIBC_TUNABLES, win.
void tune_malloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  auto tuned = [tunables](const char* env, const char* tunable) {
    return std::getenv(env) != nullptr || (tunables && std::strstr(tunables, tunable));
  };
  if (!tuned("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold"))
    ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (!tuned("MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold"))
    ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

/// SIGINT and SIGTERM, blocked in every thread from the start of main (so
/// that a signal arriving during start-up is not lost) and taken by sigwait.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  tune_malloc();
  auto signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  CLI::App app{"moonmq-node: one moonmq broker (client API, admin endpoint, cluster member)"};
  std::string config_file;
  std::vector<std::string> overrides;
  bool show_version = false;
  app.add_option("-c,--config", config_file, "appsettings JSON file (// comments allowed)");
  app.add_option("-s,--set", overrides, "override one key: Dotted.Key=value (e.g. Server.Admin.Port=9700)")
    ->type_name("KEY=VALUE");
  app.add_flag("-V,--version", show_version, "print the version and exit");
  app.footer("Environment: MOONMQ_ENVIRONMENT=<name> also reads <config stem>.<name>.json next to the "
             "config file.\nExit codes: 0 clean shutdown, 1 runtime failure, 2 invalid configuration.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (show_version) {
    std::cout << "moonmq-node " << moonmq::version_string << "\n";
    return 0;
  }
  const char* env = std::getenv("MOONMQ_ENVIRONMENT");
  auto loaded = moonmq::config::load(config_file, env ? env : "", overrides);
  for (const auto& w : loaded.warnings)
    std::cerr << "moonmq-node: warning: " << w << "\n";
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors)
      std::cerr << "moonmq-node: invalid configuration: " << e << "\n";
    return 2;
  }
  moonmq::log::set_level(loaded.config.log_level);
  moonmq::node_hooks hooks;
  hooks.wait_for_stop = [&signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    return std::string(sig == SIGINT ? "SIGINT" : "SIGTERM");
  };
  try {
    return moonmq::run_node(loaded, hooks);
  } catch (const std::exception& e) {
    std::cerr << "moonmq-node: fatal: " << e.what() << "\n";
    return 1;
  }
}

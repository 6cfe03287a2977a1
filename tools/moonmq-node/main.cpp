// moonmq-node: one broker (CONTRACT.md §1).
//
//   moonmq-node [--config FILE] [--set Dotted.Key=value ...]
//
// Exit codes: 0 clean shutdown (SIGINT/SIGTERM), 1 runtime failure (a
// listener that cannot bind, an unwritable data dir), 2 invalid
// configuration (the message names the key or the file and line).

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <caf/all.hpp>

#include "actors/node.hpp"
#include "actors/registry.hpp"
#include "actors/system.hpp"
#include "config/loader.hpp"
#include "moonmq/version.hpp"
#include "transport/admin_routes.hpp"
#include "transport/http_server.hpp"
#include "util/logging.hpp"
#include "util/metrics.hpp"

namespace {

using namespace moonmq;

/// Checks that `dir` exists (creating it) and is writable; "" on success,
/// else the reason.
std::string prepare_data_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return "cannot create data dir " + dir + ": " + ec.message();
  auto probe = std::filesystem::path(dir) / ".moonmq-write-probe";
  {
    std::ofstream out{probe};
    if (!(out << "ok") || !out.flush())
      return "data dir " + dir + " is not writable";
  }
  std::filesystem::remove(probe, ec);
  return {};
}

transport::http_server_options listener_options(const config::node_config& cfg, std::string name,
                                                const config::listener_config& l) {
  transport::http_server_options o;
  o.name = std::move(name);
  o.host = l.host;
  o.port = l.port;
  o.max_body_bytes = cfg.http.max_body_bytes;
  o.header_timeout = std::chrono::milliseconds{cfg.http.header_timeout_ms};
  o.max_connections = cfg.http.max_connections;
  return o;
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

int run(const config::load_result& loaded) {
  const auto& cfg = loaded.config;
  auto logger = log::get("node");
  if (auto why = prepare_data_dir(cfg.data_dir); !why.empty()) {
    logger->error("node.data_dir_failed path={} reason=\"{}\"", cfg.data_dir, why);
    std::cerr << "moonmq-node: " << why << "\n";
    return 1;
  }
  metrics::register_process_metrics(version_string);

  auto sys_cfg = make_system_config(cfg.scheduler);
  caf::actor_system sys{*sys_cfg};
  auto registry = spawn_registry(sys, std::chrono::milliseconds{500});

  transport::io_pool io{cfg.http.threads};
  auto admin_router = std::make_shared<transport::router>();
  node_settings settings{cfg.broker_id(), cfg.data_dir, loaded.files, {}};
  // The node is spawned once the listeners are bound, so that its summary
  // shows the real ports.
  transport::admin_context ctx;
  ctx.system = &sys;
  ctx.registry = registry;
  ctx.broker_id = cfg.broker_id();
  ctx.token = cfg.admin.token;
  transport::http_server admin{io, listener_options(cfg, "admin", cfg.admin), admin_router};

  transport::add_admin_routes(*admin_router, ctx);
  if (auto ec = admin.start()) {
    logger->error("node.listen_failed listener=admin address={}:{} error=\"{}\"", cfg.admin.host, cfg.admin.port,
                  ec.message());
    std::cerr << "moonmq-node: cannot listen on " << cfg.admin.host << ":" << cfg.admin.port << " (admin): "
              << ec.message() << "\n";
    caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
    io.stop();
    return 1;
  }
  settings.listeners["admin"] = cfg.admin.host + ":" + std::to_string(admin.port());
  node_actor node = spawn_node(sys, settings, registry);
  logger->info("node.ready broker={} version={} admin={}:{}", cfg.broker_id(), version_string, cfg.admin.host,
               admin.port());

  int sig = 0;
  auto signals = stop_signals();
  sigwait(&signals, &sig);
  auto t0 = std::chrono::steady_clock::now();
  logger->info("node.signal signal={}", sig == SIGINT ? "SIGINT" : "SIGTERM");
  admin.stop(std::chrono::milliseconds{3000});
  io.stop();
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  sys.await_all_actors_done();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  logger->info("node.stopped broker={} shutdown_ms={}", cfg.broker_id(), ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
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
  try {
    return run(loaded);
  } catch (const std::exception& e) {
    std::cerr << "moonmq-node: fatal: " << e.what() << "\n";
    return 1;
  }
}

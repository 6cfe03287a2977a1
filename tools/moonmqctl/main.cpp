// moonmqctl: operator CLI over the client API (CONTRACT.md §1, §3).
//
//   moonmqctl [--url HOST:PORT] produce TOPIC [-K SEP] [-p N] [--batch N] [--acks leader|none] [--print-offsets]
//             [--form binary|json]
//   moonmqctl [--url HOST:PORT] consume TOPIC [-p N] [-o OFFSET] [-g GROUP] [-f] [-c COUNT] [--format value|json|kv]
//             [--form binary|json]
//   moonmqctl [--admin-url HOST:PORT] [--token T] reassign generate --topics t1,t2 --brokers b1,b2,b3
//   moonmqctl [--admin-url HOST:PORT] [--token T] reassign execute --plan FILE [--wait] [--interval-ms N]
//   moonmqctl [--admin-url HOST:PORT] [--token T] reassign verify [--wait] [--interval-ms N]
//   moonmqctl [--admin-url HOST:PORT] [--token T] reassign cancel TOPIC PARTITION
//   moonmqctl [--admin-url HOST:PORT] [--token T] cluster info
//   moonmqctl [--admin-url HOST:PORT] [--token T] broker list | show ID | drain ID [--wait] | undrain ID | remove ID
//   moonmqctl [--admin-url HOST:PORT] [--token T] balancer show | status | dry-run | set KEY=VALUE...
//   moonmqctl [--url HOST:PORT] topic list | create NAME [-p N] [-c K=V]... | describe NAME |
//             alter-config NAME [--set K=V]... [--delete K]... | add-partitions NAME -n N | delete NAME...
//   moonmqctl [--url HOST:PORT] group list | describe GROUP | delete GROUP...
//
// Every command but produce, consume and reassign generate (whose output is
// a plan file) takes `--format text|json`: aligned tables with human-sized
// numbers, or the API's answer.
//
// produce reads lines from stdin (one record each); consume prints records,
// one per line; both use the binary records form by default (`--form json`
// for the JSON one; the output is the same); reassign drives partition
// moves over the admin API (CONTRACT §4). Exit: 0 success, 1 a request
// failed, 2 bad usage.

#include <iostream>

#include <CLI/CLI.hpp>

#include "tools/moonmqctl/commands.hpp"
#include "net/blocking_client.hpp"

int main(int argc, char** argv) {
  using namespace moonmq::ctl;
  CLI::App app{"moonmqctl: produce, consume and administer a moonmq cluster"};
  app.require_subcommand(1);
  std::string url = "127.0.0.1:8080";
  app.add_option("-u,--url", url, "client API address host:port")->capture_default_str();

  produce_options po;
  auto* prod = app.add_subcommand("produce", "send stdin lines as records");
  prod->add_option("topic", po.topic, "topic")->required();
  prod->add_option("-K,--key-separator", po.key_separator, "split each line into key and value at SEP");
  prod->add_option("-p,--partition", po.partition, "partition (default: by key, else sticky)");
  prod->add_option("--batch", po.batch, "lines per request at most")->capture_default_str()->check(CLI::Range(1, 100000));
  prod->add_option("--acks", po.acks, "leader (after fsync) or none")->capture_default_str()->check(
    CLI::IsMember({"leader", "none"}));
  prod->add_flag("--print-offsets", po.print_offsets, "print partition, offset and line of every acknowledged record");
  prod->add_option("--form", po.form, "request body: binary (application/vnd.moonmq.records.v1) or json")
    ->capture_default_str()->check(CLI::IsMember({"binary", "json"}));
  prod->add_option("--in-flight", po.in_flight,
                   "requests sent before the oldest is answered (pipelined on one connection; 1 = one at a time; "
                   "above 1, a partition move's cutover may reorder two requests to the same partition)")
    ->capture_default_str()->check(CLI::Range(1, 64));

  consume_options co;
  auto* cons = app.add_subcommand("consume", "print records, one per line");
  cons->add_option("topic", co.topic, "topic")->required();
  cons->add_option("-p,--partition", co.partition, "partition (default: all)");
  cons->add_option("-o,--offset", co.offset, "start offset (default: log-start, or committed with a group)");
  cons->add_option("-g,--group", co.group, "consumer group (assignment and committed offsets)");
  cons->add_flag("-f,--follow", co.follow, "keep reading at the log end");
  cons->add_option("-c,--count", co.count, "stop after COUNT records");
  cons->add_option("--format", co.format, "value, json or kv")->capture_default_str()->check(
    CLI::IsMember({"value", "json", "kv"}));
  cons->add_option("--idle-exit-ms", co.idle_exit_ms, "with --follow: exit after this long without records");
  cons->add_option("--form", co.form, "fetch answers: binary (application/vnd.moonmq.records.v1) or json")
    ->capture_default_str()->check(CLI::IsMember({"binary", "json"}));

  std::string admin_url = "127.0.0.1:9644";
  admin_endpoint admin;
  app.add_option("--admin-url", admin_url, "admin API address host:port")->capture_default_str();
  app.add_option("--token", admin.token, "admin API bearer token (Server.Admin.Token)");

  reassign_options ro;
  auto* reassign = app.add_subcommand("reassign", "move partitions between brokers (admin API)");
  reassign->require_subcommand(1);
  auto* gen = reassign->add_subcommand("generate", "print a plan spreading topics evenly over brokers");
  gen->add_option("--topics", ro.topics, "topics, comma separated")->required()->delimiter(',');
  gen->add_option("--brokers", ro.brokers, "target broker ids, comma separated")->required()->delimiter(',');
  auto* exec = reassign->add_subcommand("execute", "submit a plan (version-1 JSON)");
  exec->add_option("--plan", ro.plan_file, "plan file")->required();
  exec->add_option("--reason", ro.reason,
                   "why, journaled with every move of the plan and shown in its rows (at most 256 bytes)");
  exec->add_flag("--wait", ro.wait, "then follow the accepted moves until each has ended");
  exec->add_option("--interval-ms", ro.interval_ms, "poll period with --wait")->capture_default_str()->check(
    CLI::Range(50, 600000));
  auto* verify = reassign->add_subcommand("verify", "show every move's state and progress");
  verify->add_flag("--wait", ro.wait, "poll until every move is done, failed or cancelled");
  verify->add_option("--interval-ms", ro.interval_ms, "poll period with --wait")->capture_default_str()->check(
    CLI::Range(50, 600000));
  auto* cancel = reassign->add_subcommand("cancel", "cancel a move (refused once past cutover)");
  cancel->add_option("topic", ro.topic, "topic")->required();
  cancel->add_option("partition", ro.partition, "partition")->required()->check(CLI::Range(0, 2147483647));
  auto format_into = [](CLI::App* sub, std::string& format) {
    sub->add_option("--format", format, "text (aligned tables) or json (the API's answer)")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  };
  for (auto* sub : {exec, verify, cancel})
    format_into(sub, ro.format);

  std::string cluster_format = "text";
  auto* cluster = app.add_subcommand("cluster", "the cluster at a glance (admin API)");
  cluster->require_subcommand(1);
  auto* cinfo = cluster->add_subcommand("info", "controller, brokers (alive, standing, partitions, size) and totals");
  format_into(cinfo, cluster_format);

  balancer_options bo;
  auto* balancer = app.add_subcommand("balancer", "the balance loop: settings, last pass, plans (admin API)");
  balancer->require_subcommand(1);
  auto* bshow = balancer->add_subcommand("show", "print the effective settings");
  auto* bstatus = balancer->add_subcommand("status", "the loop's last pass: balancedness, goals, moves");
  auto* bdry = balancer->add_subcommand("dry-run", "plan now and print the plan; nothing moves");
  auto* bset = balancer->add_subcommand("set", "change settings cluster-wide, at runtime (needs Raft)");
  bset->add_option("settings", bo.settings, "KEY=VALUE pairs, VALUE in JSON (DryRun=false, ExcludedTopics='[\"a\"]')")
    ->required();
  for (auto* sub : {bshow, bstatus, bdry, bset})
    format_into(sub, bo.format);

  broker_options ko;
  auto* broker = app.add_subcommand("broker", "drain and remove brokers (admin API, needs Raft)");
  broker->require_subcommand(1);
  auto* blist = broker->add_subcommand("list", "every broker's standing: active, draining or removed");
  blist->callback([&] { ko.action = "list"; });
  format_into(blist, ko.format);
  for (auto [name, help] : {std::pair{"show", "one broker's standing and the partitions it still owns"},
                            std::pair{"drain", "move every partition off a broker; nothing new lands on it"},
                            std::pair{"undrain", "cancel a drain"},
                            std::pair{"remove", "retire a drained broker that owns no partition"}}) {
    auto* sub = broker->add_subcommand(name, help);
    sub->add_option("id", ko.id, "broker id")->required();
    format_into(sub, ko.format);
    sub->callback([&ko, action = std::string(name)] { ko.action = action; });
    if (std::string(name) == "drain") {
      sub->add_flag("--wait", ko.wait, "poll until the broker owns no partition");
      sub->add_option("--interval-ms", ko.interval_ms, "poll period with --wait")->capture_default_str()->check(
        CLI::Range(50, 600000));
    }
  }

  // topic / group: everyday administration over the client API (admin.cpp).
  admin_options ao;
  auto add_format = [&](CLI::App* sub) { format_into(sub, ao.format); };
  auto* topic = app.add_subcommand("topic", "create, list, describe, configure, grow and delete topics");
  topic->require_subcommand(1);
  auto* tlist = topic->add_subcommand("list", "every topic with its partition count");
  auto* tcreate = topic->add_subcommand("create", "create a topic cluster-wide");
  tcreate->add_option("name", ao.name, "topic")->required();
  tcreate->add_option("-p,--partitions", ao.partitions, "partitions (default: the cluster's num.partitions)")
    ->check(CLI::Range(1, 10000));
  tcreate->add_option("-c,--config", ao.set, "topic config KEY=VALUE (retention.ms, retention.bytes, segment.bytes)");
  auto* tdescribe = topic->add_subcommand("describe", "owners, offsets and size of every partition, and the config");
  tdescribe->add_option("name", ao.name, "topic")->required();
  auto* talter = topic->add_subcommand("alter-config", "change topic configs cluster-wide");
  talter->add_option("name", ao.name, "topic")->required();
  talter->add_option("--set", ao.set, "KEY=VALUE to set");
  talter->add_option("--delete", ao.remove, "KEY to return to its default");
  auto* tadd = topic->add_subcommand("add-partitions", "add partitions to a topic");
  tadd->add_option("name", ao.name, "topic")->required();
  tadd->add_option("-n,--num", ao.add, "partitions to add")->required()->check(CLI::Range(1, 10000));
  auto* tdelete = topic->add_subcommand("delete", "delete topics cluster-wide");
  tdelete->add_option("names", ao.names, "topics")->required();
  for (auto [sub, action] : {std::pair{tlist, "list"}, std::pair{tcreate, "create"}, std::pair{tdescribe, "describe"},
                             std::pair{talter, "alter-config"}, std::pair{tadd, "add-partitions"},
                             std::pair{tdelete, "delete"}}) {
    add_format(sub);
    sub->callback([&ao, a = std::string(action)] { ao.action = a; });
  }
  auto* group = app.add_subcommand("group", "list, describe (with lag) and delete consumer groups");
  group->require_subcommand(1);
  auto* glist = group->add_subcommand("list", "every group of the cluster");
  auto* gdescribe = group->add_subcommand("describe", "members, committed offsets and lag");
  gdescribe->add_option("name", ao.name, "group")->required();
  auto* gdelete = group->add_subcommand("delete", "delete empty groups and their committed offsets");
  gdelete->add_option("names", ao.names, "groups")->required();
  for (auto [sub, action] :
       {std::pair{glist, "list"}, std::pair{gdescribe, "describe"}, std::pair{gdelete, "delete"}}) {
    add_format(sub);
    sub->callback([&ao, a = std::string(action)] { ao.action = a; });
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  endpoint ep;
  if (!moonmq::transport::split_host_port(url, ep.host, ep.port)) {
    std::cerr << "moonmqctl: --url must be host:port, got '" << url << "'\n";
    return 2;
  }
  if (*reassign || *balancer || *broker || *cluster) {
    if (!moonmq::transport::split_host_port(admin_url, admin.host, admin.port)) {
      std::cerr << "moonmqctl: --admin-url must be host:port, got '" << admin_url << "'\n";
      return 2;
    }
    if (*broker)
      return broker_command(admin, ko);
    if (*cluster)
      return cluster_info(admin, cluster_format);
    if (*bshow)
      return balancer_show(admin, bo);
    if (*bstatus)
      return balancer_status(admin, bo);
    if (*bdry)
      return balancer_dry_run(admin, bo);
    if (*bset)
      return balancer_set(admin, bo);
    if (*gen)
      return reassign_generate(admin, ro);
    if (*exec)
      return reassign_execute(admin, ro);
    if (*verify)
      return reassign_verify(admin, ro);
    return reassign_cancel(admin, ro);
  }
  if (*topic)
    return topic_command(ep, ao);
  if (*group)
    return group_command(ep, ao);
  if (*prod)
    return produce(ep, po);
  return consume(ep, co);
}

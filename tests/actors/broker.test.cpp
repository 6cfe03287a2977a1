// The broker actor's local copies follow the metadata log's topic configs
// (docs/metadata.md "Topic configuration"): an adopt takes the config of
// the image as it is when the adopt runs, so an adopt sent from an older
// image never undoes a newer change, and every partition gets the config.
// Keys a topic does not set take the cluster's topic defaults (the image's
// dynamic settings), and a change of one reaches every copy through the sync.

#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/broker.hpp"
#include "actors/catalog_view.hpp"
#include "actors/registry.hpp"
#include "actors/system.hpp"
#include "dataplane/topic_catalog.hpp"
#include "tests/support/process.hpp"

using namespace moonmq;
using moonmq::test::temp_dir;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

struct broker_fixture {
  broker_fixture() : cfg(make_system_config({})), sys(*cfg), self(sys) {
    std::string error;
    auto catalog = dataplane::topic_catalog::load(dir.path(), error);
    REQUIRE(catalog);
    broker_settings s;
    s.broker_id = "b1";
    s.data_dir = dir.path();
    s.retention_check_ms = 0;
    s.image = image;
    s.io.threads = 1;
    s.io.data_dir = dir.path();
    registry = spawn_registry(sys, 500ms);
    broker = spawn_broker(sys, s, std::move(*catalog), view, registry);
  }
  ~broker_fixture() {
    caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
  }

  /// The image holds topic "t" created at index 5 with `config`, and the
  /// dynamic settings `settings`.
  void image_holds(const std::string& config, const std::string& settings = "{}") {
    auto topics = std::make_shared<topic_image>();
    (*topics)["t"] = topic_info{2, config, 5};
    image->set(std::make_shared<owner_map>(), topics, std::make_shared<const std::string>(settings),
               std::make_shared<const broker_standing>());
  }
  /// What the sync would adopt now (the topics whose copy differs).
  std::vector<std::string> stale() const {
    return cluster::plan_topic_sync(local_copies(*view->get()), log_copies(*image->topics(),
                                                                           image->topic_defaults().values),
                                    {})
      .adopt;
  }
  void adopt(const std::string& config) {
    self->request(broker, 10s, adopt_atom::value, std::string{"t"}, int32_t{2}, config, int64_t{5})
      .receive([](int32_t n) { CHECK(n == 2); }, [](caf::error& e) { FAIL(caf::to_string(e)); });
  }
  int64_t retention_ms() const { return view->get()->at("t").config.retention_ms; }
  /// The config partition `p` reports (its status).
  json partition_config(int32_t p) {
    json out;
    self->request(view->get()->at("t").partitions.at(static_cast<size_t>(p)), 10s, status_atom::value)
      .receive([&](std::string& s) { out = json::parse(s)["config"]; },
               [](caf::error& e) { FAIL(caf::to_string(e)); });
    return out;
  }

  temp_dir dir{"moonmq-broker"};
  std::shared_ptr<owner_view> image = std::make_shared<owner_view>();
  std::shared_ptr<catalog_view> view = std::make_shared<catalog_view>();
  std::unique_ptr<caf::actor_system_config> cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  registry_actor registry;
  broker_actor broker;
};

}  // namespace

TEST_CASE("an adopt takes the image's config, so an adopt from an older image never undoes a newer change",
          "[broker][metadata]") {
  broker_fixture f;
  f.image_holds(R"({"retention.ms":100})");
  f.adopt(R"({"retention.ms":100})");
  CHECK(f.retention_ms() == 100);
  // A change applied: the image moves on, its adopt arrives...
  f.image_holds(R"({"retention.ms":200})");
  f.adopt(R"({"retention.ms":200})");
  CHECK(f.retention_ms() == 200);
  // ... and an adopt sent earlier, from the older image, arrives last.
  f.adopt(R"({"retention.ms":100})");
  CHECK(f.retention_ms() == 200);
  CHECK(f.partition_config(0)["retention.ms"] == 200);
  CHECK(f.partition_config(1)["retention.ms"] == 200);
  // The catalogue holds it durably.
  std::string error;
  auto reloaded = dataplane::topic_catalog::load(f.dir.path(), error);
  REQUIRE(reloaded);
  CHECK(reloaded->find("t")->config.retention_ms == 200);
}

TEST_CASE("a config this build cannot wholly read applies what it can", "[broker][metadata]") {
  broker_fixture f;
  f.image_holds(R"({"retention.ms":300,"future.key":1,"segment.bytes":"big"})");
  f.adopt("");
  CHECK(f.retention_ms() == 300);
  CHECK(f.view->get()->at("t").config.segment_bytes == dataplane::topic_config{}.segment_bytes);
}

TEST_CASE("keys a topic does not set follow the cluster's topic defaults, and a changed default reaches the copy "
          "through the sync",
          "[broker][metadata]") {
  broker_fixture f;
  f.image_holds(R"({"retention.ms":100})", R"({"LogRetentionMs":9,"LogRetentionBytes":2048,"LogSegmentBytes":4096})");
  f.adopt(R"({"retention.ms":100})");
  const auto& t = [&]() -> const dataplane::topic_config& { return f.view->get()->at("t").config; };
  CHECK(t().retention_ms == 100);  // the topic's own key wins
  CHECK(t().retention_bytes == 2048);
  CHECK(t().segment_bytes == 4096);
  CHECK(f.partition_config(1)["retention.bytes"] == 2048);
  CHECK(f.stale().empty());

  // The cluster changes its defaults (LogSegmentBytes removed: built-in
  // again): the copy differs, and the sync adopts it again.
  f.image_holds(R"({"retention.ms":100})", R"({"LogRetentionBytes":8192})");
  CHECK(f.stale() == std::vector<std::string>{"t"});
  sync_local_topics(f.broker, *f.view, *f.image->topics(), {}, f.image->topic_defaults().values, nullptr);
  CHECK(moonmq::test::wait_until([&] { return t().retention_bytes == 8192; }, 10s));
  CHECK(t().segment_bytes == dataplane::topic_config{}.segment_bytes);
  CHECK(t().retention_ms == 100);
  CHECK(f.partition_config(0)["retention.bytes"] == 8192);
  CHECK(f.stale().empty());
  std::string error;
  auto reloaded = dataplane::topic_catalog::load(f.dir.path(), error);
  REQUIRE(reloaded);
  CHECK(reloaded->find("t")->config.retention_bytes == 8192);

  // A value this build cannot read is skipped: the built-in default applies.
  f.image_holds("", R"({"LogRetentionBytes":"lots","LogSegmentBytes":12})");
  sync_local_topics(f.broker, *f.view, *f.image->topics(), {}, f.image->topic_defaults().values, nullptr);
  CHECK(moonmq::test::wait_until([&] { return t().retention_ms == -1; }, 10s));
  CHECK(t().retention_bytes == -1);
  CHECK(t().segment_bytes == dataplane::topic_config{}.segment_bytes);
}

// The metrics registry's series removal and the scrape-time families
// (util/metrics.hpp): a removed series is gone from the text, the others
// stay, and a family left without series is not rendered.

#include <catch2/catch.hpp>

#include "util/metrics.hpp"

using namespace moonmq::metrics;

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("remove takes one series out of the text and leaves the others", "[metrics]") {
  registry r;
  r.get_gauge("moonmq_x_load", "load", {{"broker", "b1"}}).set(1);
  r.get_gauge("moonmq_x_load", "load", {{"broker", "b2"}}).set(2);
  r.get_counter("moonmq_x_total", "count", {{"broker", "b2"}}).inc(3);
  r.get_histogram("moonmq_x_seconds", "time", {1.0}, {{"broker", "b2"}}).observe(0.5);
  REQUIRE(has_line(r.render(), "moonmq_x_load{broker=\"b2\"} 2"));

  CHECK(r.remove("moonmq_x_load", {{"broker", "b2"}}));
  CHECK(r.remove("moonmq_x_total", {{"broker", "b2"}}));
  CHECK(r.remove("moonmq_x_seconds", {{"broker", "b2"}}));
  auto text = r.render();
  CHECK(has_line(text, "moonmq_x_load{broker=\"b1\"} 1"));
  CHECK(text.find("b2") == std::string::npos);
  // Counter and histogram families left without series are not listed.
  CHECK(text.find("moonmq_x_total") == std::string::npos);
  CHECK(text.find("moonmq_x_seconds") == std::string::npos);

  // Nothing to remove: unknown family, unknown labels, already removed.
  CHECK_FALSE(r.remove("moonmq_nothing", {}));
  CHECK_FALSE(r.remove("moonmq_x_load", {{"broker", "b9"}}));
  CHECK_FALSE(r.remove("moonmq_x_load", {{"broker", "b2"}}));
}

TEST_CASE("a removed series comes back from zero when it is asked for again", "[metrics]") {
  registry r;
  r.get_counter("moonmq_y_total", "count", {{"peer", "b3"}}).inc(7);
  REQUIRE(r.remove("moonmq_y_total", {{"peer", "b3"}}));
  CHECK(r.get_counter("moonmq_y_total", "count", {{"peer", "b3"}}).value() == 0);
  CHECK(has_line(r.render(), "moonmq_y_total{peer=\"b3\"} 0"));
}

TEST_CASE("remove_if drops the series a predicate picks", "[metrics]") {
  registry r;
  for (std::string b : {"b1", "b2", "b3"})
    for (std::string res : {"disk", "nw_in"})
      r.get_gauge("moonmq_z_load", "load", {{"broker", b}, {"resource", res}}).set(1);
  auto gone = r.remove_if("moonmq_z_load", [](const labels& l) { return l[0].second != "b1"; });
  CHECK(gone == 4);
  auto text = r.render();
  CHECK(has_line(text, "moonmq_z_load{broker=\"b1\",resource=\"disk\"} 1"));
  CHECK(has_line(text, "moonmq_z_load{broker=\"b1\",resource=\"nw_in\"} 1"));
  CHECK(text.find("b2") == std::string::npos);
  CHECK(text.find("b3") == std::string::npos);
  CHECK(r.remove_if("moonmq_unknown", [](const labels&) { return true; }) == 0);
  CHECK(r.remove_if("moonmq_z_load", [](const labels&) { return true; }) == 2);
  CHECK(r.render().find("moonmq_z_load") == std::string::npos);
}

TEST_CASE("render_families writes scrape-time families with escaped labels", "[metrics]") {
  std::vector<sample_family> fams;
  fams.push_back({"moonmq_p_end", "log end", "gauge", {{{{"topic", "a\"b"}, {"partition", "0"}}, 42.0}}});
  fams.push_back({"moonmq_p_none", "nothing here", "gauge", {}});
  auto text = render_families(fams);
  CHECK(text
        == "# HELP moonmq_p_end log end\n# TYPE moonmq_p_end gauge\nmoonmq_p_end{topic=\"a\\\"b\",partition=\"0\"} 42\n"
           "# HELP moonmq_p_none nothing here\n# TYPE moonmq_p_none gauge\n");
}

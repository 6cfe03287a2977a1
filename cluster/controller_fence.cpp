#include "cluster/controller_fence.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cluster/json_file.hpp"
#include "util/logging.hpp"

namespace moonmq::cluster {
namespace {

using json = nlohmann::json;
constexpr int file_version = 1;
constexpr const char* what = "controller epoch";

}  // namespace

result<controller_fence> controller_fence::open(const std::string& data_dir) {
  if (auto ok = detail::ensure_dir(data_dir); !ok)
    return ok.err();
  controller_fence fence{(std::filesystem::path{data_dir} / file_name).string()};
  auto loaded = detail::load_json_file(fence.file_, what, file_version);
  if (!loaded)
    return loaded.err();
  if (*loaded) {
    const json& doc = **loaded;
    auto e = doc.find("epoch");
    auto c = doc.find("controller");
    if (e == doc.end() || !(e->is_number_unsigned() || (e->is_number_integer() && e->get<int64_t>() >= 0)))
      return detail::corrupt_file(what, fence.file_, "\"epoch\" is missing or not an integer >= 0");
    if (c == doc.end() || !c->is_string())
      return detail::corrupt_file(what, fence.file_, "\"controller\" is missing or not a string");
    fence.highest_ = epoch{e->get<uint64_t>()};
    fence.holder_ = broker_id{c->get<std::string>()};
    if (fence.highest_ == epoch{0} ? !fence.holder_.empty() : !valid_broker_id(fence.holder_.str()))
      return detail::corrupt_file(what, fence.file_,
                                  "\"controller\" must be a valid broker id (or \"\" with epoch 0)");
  }
  log::get("cluster")->info("fence.opened file={} epoch={} controller={}", fence.file_, fence.highest_.value,
                            fence.holder_.str());
  return fence;
}

status controller_fence::write(epoch at, const broker_id& holder) const {
  return detail::save_json_file(file_, {{"version", file_version}, {"epoch", at.value}, {"controller", holder.str()}});
}

error controller_fence::refused(errc code, const std::string& why) const {
  auto e = make_error(code, why);
  e.highest = highest_;
  e.holder = holder_;
  return e;
}

result<epoch> controller_fence::claim(const broker_id& self) {
  if (!valid_broker_id(self.str()))
    return make_error(errc::invalid_argument, "invalid broker id " + quote_input(self.str()));
  auto next = highest_.next();
  if (auto ok = write(next, self); !ok)
    return ok.err();
  highest_ = next;
  holder_ = self;
  log::get("cluster")->info("fence.claimed epoch={} controller={}", next.value, self.str());
  return next;
}

result<observe_outcome> controller_fence::observe(epoch at, const broker_id& controller) {
  if (at == epoch{0})
    return make_error(errc::invalid_argument, "controller epoch 0 is not a claim");
  if (!valid_broker_id(controller.str()))
    return make_error(errc::invalid_argument, "invalid controller id " + quote_input(controller.str()));
  if (at < highest_)
    return refused(errc::stale_epoch, "controller epoch " + std::to_string(at.value) + " of " + controller.str() +
                                          " is stale: epoch " + std::to_string(highest_.value) + " is held by " +
                                          holder_.str());
  if (at == highest_) {
    if (controller != holder_)
      return refused(errc::epoch_conflict, "controller epoch " + std::to_string(at.value) + " claimed by " +
                                               controller.str() + " is already held by " + holder_.str());
    return observe_outcome::current;
  }
  if (auto ok = write(at, controller); !ok)
    return ok.err();
  highest_ = at;
  holder_ = controller;
  log::get("cluster")->info("fence.raised epoch={} controller={}", at.value, controller.str());
  return observe_outcome::raised;
}

}  // namespace moonmq::cluster

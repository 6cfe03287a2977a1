#include "cluster/move_journal.hpp"

#include <array>
#include <filesystem>
#include <limits>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "cluster/json_file.hpp"
#include "util/logging.hpp"

namespace moonmq::cluster {
namespace {

using json = nlohmann::json;
constexpr int file_version = 1;
constexpr const char* what = "reassignment journal";
constexpr size_t max_move_id_length = 128;

constexpr std::array<std::pair<move_state, const char*>, 9> state_names{{
    {move_state::queued, "queued"},
    {move_state::copying, "copying"},
    {move_state::cutover, "cutover"},
    {move_state::draining, "draining"},
    {move_state::offsets, "offsets"},
    {move_state::rolling_back, "rolling_back"},
    {move_state::done, "done"},
    {move_state::failed, "failed"},
    {move_state::cancelled, "cancelled"},
}};

bool valid_move_id(const std::string& id) {
  if (id.empty() || id.size() > max_move_id_length)
    return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok)
      return false;
  }
  return true;
}

status validate(const move_entry& e) {
  if (!valid_move_id(e.move_id))
    return make_error(errc::invalid_argument, "invalid move id " + quote_input(e.move_id));
  if (!valid_topic(e.tp.topic))
    return make_error(errc::invalid_argument, "invalid topic name " + quote_input(e.tp.topic));
  if (e.tp.partition < 0)
    return make_error(errc::invalid_argument, "partition " + std::to_string(e.tp.partition) + " is negative");
  if (!valid_broker_id(e.from.str()) || !valid_broker_id(e.to.str()))
    return make_error(errc::invalid_argument, "invalid broker id in move " + e.move_id);
  if (e.from == e.to)
    return make_error(errc::invalid_argument, "move " + e.move_id + " has the same source and destination " +
                                                  e.from.str());
  if (e.bytes_copied < 0 || e.bytes_total < 0 || e.copy_position < 0 || e.started_ms < 0 || e.updated_ms < 0)
    return make_error(errc::invalid_argument, "move " + e.move_id + " has a negative count, position or time");
  if (!valid_move_reason(e.reason))
    return make_error(errc::invalid_argument, "move " + e.move_id + " has a reason longer than "
                                                  + std::to_string(max_move_reason_bytes)
                                                  + " bytes, or with a control character");
  return {};
}

/// The length of the UTF-8 character starting at `s[i]` (RFC 3629: no
/// overlong forms, no surrogates, at most U+10FFFF), or 0 when the bytes
/// there are not one.
std::size_t utf8_char_at(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](std::size_t k) { return k < s.size() && (b(k) & 0xC0) == 0x80; };
  unsigned char c = b(i);
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2))
      return 0;
    if ((c == 0xE0 && b(i + 1) < 0xA0) || (c == 0xED && b(i + 1) >= 0xA0))
      return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3))
      return 0;
    if ((c == 0xF0 && b(i + 1) < 0x90) || (c == 0xF4 && b(i + 1) >= 0x90))
      return 0;
    return 4;
  }
  return 0;
}

/// True when the `n`-byte character at `s[i]` is a control character (C0,
/// DEL, C1) or a line or paragraph separator (U+2028, U+2029): a reason
/// stays one line of text.
bool control_at(std::string_view s, std::size_t i, std::size_t n) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  if (n == 1)
    return b(i) < 0x20 || b(i) == 0x7F;
  if (n == 2)
    return b(i) == 0xC2 && b(i + 1) < 0xA0;  // U+0080..U+009F
  return n == 3 && b(i) == 0xE2 && b(i + 1) == 0x80 && (b(i + 2) == 0xA8 || b(i + 2) == 0xA9);
}

json encode(const move_entry& e) {
  return {{"move_id", e.move_id},     {"topic", e.tp.topic},
          {"partition", e.tp.partition}, {"from", e.from.str()},
          {"to", e.to.str()},           {"epoch", e.at.value},
          {"state", to_string(e.state)}, {"bytes_copied", e.bytes_copied},
          {"bytes_total", e.bytes_total}, {"copy_position", e.copy_position},
          {"error", e.error},           {"started_ms", e.started_ms},
          {"updated_ms", e.updated_ms},  {"origin", e.origin},
          {"owner_epoch", e.owner_epoch}, {"reason", e.reason}};
}

/// Decodes one row; every field is checked (the file is untrusted).
result<move_entry> decode(const json& j, const std::string& file, const std::string& where) {
  if (!j.is_object())
    return detail::corrupt_file(what, file, where + " is not an object");
  auto str = [&](const char* key, std::string& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string())
      return false;
    out = it->get<std::string>();
    return true;
  };
  auto num = [&](const char* key, int64_t& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() ||
        (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())))
      return false;
    out = it->get<int64_t>();
    return out >= 0;
  };
  move_entry e;
  std::string from, to, state;
  int64_t partition = 0, at = 0;
  for (const char* key : {"move_id", "topic", "from", "to", "state", "error"}) {
    std::string* out = key == std::string{"move_id"} ? &e.move_id
                       : key == std::string{"topic"} ? &e.tp.topic
                       : key == std::string{"from"}  ? &from
                       : key == std::string{"to"}    ? &to
                       : key == std::string{"state"} ? &state
                                                     : &e.error;
    if (!str(key, *out))
      return detail::corrupt_file(what, file, where + "." + key + " is missing or not a string");
  }
  struct numeric {
    const char* key;
    int64_t* out;
  };
  for (auto [key, out] : {numeric{"partition", &partition}, numeric{"epoch", &at},
                          numeric{"bytes_copied", &e.bytes_copied}, numeric{"bytes_total", &e.bytes_total},
                          numeric{"copy_position", &e.copy_position}, numeric{"started_ms", &e.started_ms},
                          numeric{"updated_ms", &e.updated_ms}}) {
    if (!num(key, *out))
      return detail::corrupt_file(what, file, where + "." + key + " is missing or not an integer >= 0");
  }
  if (partition > std::numeric_limits<int32_t>::max())
    return detail::corrupt_file(what, file, where + ".partition is out of range");
  // Optional: rows written before owner epochs have none (0).
  if (auto o = j.find("owner_epoch"); o != j.end()) {
    if (!o->is_number_unsigned())
      return detail::corrupt_file(what, file, where + ".owner_epoch must be a non-negative integer");
    e.owner_epoch = o->get<uint64_t>();
  }
  // Optional: rows written before origins have none.
  if (auto o = j.find("origin"); o != j.end()) {
    if (!o->is_string() || !valid_move_origin(o->get<std::string>()))
      return detail::corrupt_file(what, file, where + ".origin must be \"operator\", \"balancer\" or \"\"");
    e.origin = o->get<std::string>();
  }
  // Optional: rows written before reasons have none.
  if (auto r = j.find("reason"); r != j.end()) {
    if (!r->is_string() || !valid_move_reason(r->get<std::string>()))
      return detail::corrupt_file(what, file, where + ".reason must be a string of at most "
                                                + std::to_string(max_move_reason_bytes)
                                                + " bytes without control characters");
    e.reason = r->get<std::string>();
  }
  auto s = parse_move_state(state);
  if (!s)
    return detail::corrupt_file(what, file, where + ".state " + quote_input(state) + " is not a move state");
  e.tp.partition = static_cast<int32_t>(partition);
  e.from = broker_id{from};
  e.to = broker_id{to};
  e.at = epoch{static_cast<uint64_t>(at)};
  e.state = *s;
  if (auto ok = validate(e); !ok)
    return detail::corrupt_file(what, file, where + ": " + ok.err().message);
  return e;
}

}  // namespace

const char* to_string(move_state s) {
  for (const auto& [state, name] : state_names) {
    if (state == s)
      return name;
  }
  return "unknown";
}

std::optional<move_state> parse_move_state(std::string_view name) {
  for (const auto& [state, n] : state_names) {
    if (name == n)
      return state;
  }
  return std::nullopt;
}

bool is_terminal(move_state s) {
  return s == move_state::done || s == move_state::failed || s == move_state::cancelled;
}

bool is_past_cutover(move_state s) {
  return !(s == move_state::queued || s == move_state::copying);
}

bool allowed_transition(move_state from, move_state to) {
  using m = move_state;
  switch (from) {
    case m::queued: return to == m::copying || to == m::failed || to == m::cancelled;
    case m::copying: return to == m::cutover || to == m::failed || to == m::cancelled;
    // Shared storage has no drain (the destination reads the sealed log
    // where it is): cutover goes on to offsets, one journal write less
    // inside the move's sealed window.
    case m::cutover: return to == m::draining || to == m::offsets || to == m::rolling_back;
    case m::draining: return to == m::offsets || to == m::rolling_back;
    // A failed offset push does not undo a move (the data is on the
    // destination already): offsets ends in done, with a warning; or, with
    // the metadata log, in rolling_back once the source took the partition
    // back by a conditional owner change the destination never confirmed
    // (docs/metadata.md "Owner epochs").
    case m::offsets: return to == m::done || to == m::rolling_back;
    case m::rolling_back: return to == m::failed;
    case m::done:
    case m::failed:
    case m::cancelled: return false;
  }
  return false;
}

const char* to_string(take_back_action a) {
  switch (a) {
    case take_back_action::propose: return "propose";
    case take_back_action::wait: return "wait";
    case take_back_action::rollback: return "rollback";
    case take_back_action::keep_confirming: return "keep_confirming";
    case take_back_action::done: return "done";
  }
  return "wait";
}

bool valid_move_reason(std::string_view r) {
  if (r.size() > max_move_reason_bytes)
    return false;
  for (std::size_t i = 0; i < r.size();) {
    auto n = utf8_char_at(r, i);
    if (n == 0 || control_at(r, i, n))
      return false;
    i += n;
  }
  return true;
}

std::string clip_move_reason(std::string_view text) {
  static constexpr std::string_view ellipsis = "...";
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    auto n = utf8_char_at(text, i);
    std::string_view piece = n == 0                 ? std::string_view{"?"}
                             : control_at(text, i, n) ? std::string_view{" "}
                                                      : text.substr(i, n);
    if (out.size() + piece.size() > max_move_reason_bytes) {
      // Cut: drop whole characters (continuation bytes, then the lead
      // byte) until the ellipsis fits.
      while (!out.empty() && out.size() + ellipsis.size() > max_move_reason_bytes) {
        while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80)
          out.pop_back();
        if (!out.empty())
          out.pop_back();
      }
      out += ellipsis;
      return out;
    }
    out += piece;
    i += n == 0 ? 1 : n;
  }
  return out;
}

bool destination_confirmed(const std::string& to, uint64_t cutover_epoch, const std::string& owner, uint64_t epoch) {
  return cutover_epoch > 0 && !to.empty() && owner == to && epoch > cutover_epoch;
}

take_back_action take_back_decision(const move_entry& e, const std::string& owner, uint64_t epoch, bool refused) {
  if (owner == e.from.str())
    return take_back_action::rollback;
  if (e.owner_epoch == 0)
    return take_back_action::keep_confirming;  // without the cutover's epoch a take-back could overrule a confirm
  if (destination_confirmed(e.to.str(), e.owner_epoch, owner, epoch))
    return take_back_action::keep_confirming;
  if (epoch > e.owner_epoch)
    return take_back_action::done;  // confirmed, and the partition moved on from the destination since
  return refused ? take_back_action::wait : take_back_action::propose;
}

recovery_plan recovery_decision(const move_entry& e) {
  recovery_plan p;
  switch (e.state) {
    case move_state::queued:
      p.action = recovery_action::abort;
      p.next = move_state::failed;
      p.reason = "aborted: the source restarted before the move started";
      break;
    case move_state::copying:
      p.action = recovery_action::abort;
      p.next = move_state::failed;
      p.cleanup_destination = true;
      p.reason = "aborted: the source restarted during the copy; the partial copy on " + e.to.str() +
                 " is removed";
      break;
    case move_state::cutover:
    case move_state::draining:
    case move_state::offsets:
      p.action = recovery_action::resume;
      p.next = e.state;
      p.reassert_destination_owner = true;
      p.reason = std::string{"resumed at "} + to_string(e.state) + " after a restart of the source";
      break;
    case move_state::rolling_back:
      p.action = recovery_action::finish_rollback;
      p.next = move_state::failed;
      p.cleanup_destination = true;
      p.restore_source_owner = true;
      p.reason = e.error.empty() ? "rolled back after a restart of the source" : e.error;
      break;
    case move_state::done:
    case move_state::failed:
    case move_state::cancelled: break;
  }
  return p;
}

result<move_journal> move_journal::open(const std::string& data_dir) {
  if (auto ok = detail::ensure_dir(data_dir); !ok)
    return ok.err();
  move_journal journal{(std::filesystem::path{data_dir} / file_name).string()};
  auto loaded = detail::load_json_file(journal.file_, what, file_version);
  if (!loaded)
    return loaded.err();
  if (*loaded) {
    const json& doc = **loaded;
    auto list = doc.find("moves");
    if (list == doc.end() || !list->is_array())
      return detail::corrupt_file(what, journal.file_, "\"moves\" is missing or not an array");
    std::map<topic_partition, std::string> active;
    for (size_t i = 0; i < list->size(); ++i) {
      auto where = "moves[" + std::to_string(i) + "]";
      auto row = decode((*list)[i], journal.file_, where);
      if (!row)
        return row.err();
      if (!is_terminal(row->state) && !active.emplace(row->tp, row->move_id).second)
        return detail::corrupt_file(what, journal.file_, where + " is a second unfinished move of " +
                                                             to_string(row->tp));
      auto id = row->move_id;
      if (!journal.moves_.emplace(id, std::move(row).value()).second)
        return detail::corrupt_file(what, journal.file_, where + " repeats move id " + quote_input(id));
    }
  }
  log::get("reassigner")->info("journal.opened file={} moves={} unfinished={}", journal.file_, journal.moves_.size(),
                               journal.unfinished().size());
  return journal;
}

status move_journal::write(const std::map<std::string, move_entry>& moves) const {
  json list = json::array();
  for (const auto& [id, e] : moves)
    list.push_back(encode(e));
  return detail::save_json_file(file_, {{"version", file_version}, {"moves", list}});
}

status move_journal::replace_row(const move_entry& row) {
  auto next = moves_;
  next[row.move_id] = row;
  if (auto ok = write(next); !ok)
    return ok;
  moves_ = std::move(next);
  return {};
}

status move_journal::add(move_entry e) {
  if (auto ok = validate(e); !ok)
    return ok;
  if (e.state != move_state::queued)
    return make_error(errc::invalid_argument, "a new move starts queued, not " + std::string{to_string(e.state)});
  if (moves_.count(e.move_id))
    return make_error(errc::invalid_argument, "move id " + quote_input(e.move_id) + " is already in the journal");
  if (const auto* other = active_for(e.tp))
    return make_error(errc::move_in_progress, to_string(e.tp) + " is already moving (move " + other->move_id +
                                                  ", state " + to_string(other->state) + ")");
  e.updated_ms = e.started_ms;
  if (auto ok = replace_row(e); !ok)
    return ok;
  log::get("reassigner")->info("move.queued move={} topic={} partition={} from={} to={} epoch={}", e.move_id,
                               e.tp.topic, e.tp.partition, e.from.str(), e.to.str(), e.at.value);
  return {};
}

status move_journal::transition(const std::string& move_id, move_state next, int64_t now_ms,
                                const std::string& error, uint64_t owner_epoch) {
  auto it = moves_.find(move_id);
  if (it == moves_.end())
    return make_error(errc::unknown_move, "no move " + quote_input(move_id) + " in the journal");
  if (!allowed_transition(it->second.state, next))
    return make_error(errc::invalid_transition, "move " + move_id + " cannot go from " +
                                                    to_string(it->second.state) + " to " + to_string(next));
  bool needs_reason = next == move_state::failed || next == move_state::cancelled || next == move_state::rolling_back;
  if (needs_reason && error.empty())
    return make_error(errc::invalid_argument, std::string{"a move entering "} + to_string(next) + " needs an error");
  if (now_ms < 0)
    return make_error(errc::invalid_argument, "negative time");
  move_entry row = it->second;
  row.state = next;
  row.updated_ms = now_ms;
  if (!error.empty())
    row.error = error;
  if (owner_epoch != 0)
    row.owner_epoch = owner_epoch;
  if (auto ok = replace_row(row); !ok)
    return ok;
  log::get("reassigner")->info("move.{} move={} topic={} partition={} to={}{}{}", to_string(next), move_id,
                               row.tp.topic, row.tp.partition, row.to.str(), error.empty() ? "" : " error=", error);
  return {};
}

status move_journal::record_progress(const std::string& move_id, int64_t bytes_copied, int64_t bytes_total,
                                     int64_t copy_position, int64_t now_ms) {
  auto it = moves_.find(move_id);
  if (it == moves_.end())
    return make_error(errc::unknown_move, "no move " + quote_input(move_id) + " in the journal");
  const move_entry& cur = it->second;
  if (cur.state != move_state::copying && cur.state != move_state::draining)
    return make_error(errc::invalid_transition, "move " + move_id + " records progress only while copying or "
                                                "draining, not in " + to_string(cur.state));
  if (bytes_copied < cur.bytes_copied || copy_position < cur.copy_position)
    return make_error(errc::invalid_argument, "progress of move " + move_id + " goes back (bytes_copied " +
                                                  std::to_string(cur.bytes_copied) + " -> " +
                                                  std::to_string(bytes_copied) + ", copy_position " +
                                                  std::to_string(cur.copy_position) + " -> " +
                                                  std::to_string(copy_position) + ")");
  if (now_ms < 0)
    return make_error(errc::invalid_argument, "negative time");
  if (bytes_copied > bytes_total)
    return make_error(errc::invalid_argument, "move " + move_id + ": bytes_copied " + std::to_string(bytes_copied) +
                                                  " exceeds bytes_total " + std::to_string(bytes_total));
  move_entry row = cur;
  row.bytes_copied = bytes_copied;
  row.bytes_total = bytes_total;
  row.copy_position = copy_position;
  row.updated_ms = now_ms;
  return replace_row(row);
}

result<size_t> move_journal::prune_finished(int64_t before_ms) {
  auto next = moves_;
  size_t dropped = 0;
  for (auto it = next.begin(); it != next.end();) {
    if (is_terminal(it->second.state) && it->second.updated_ms < before_ms) {
      it = next.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  if (dropped == 0)
    return dropped;
  if (auto ok = write(next); !ok)
    return ok.err();
  moves_ = std::move(next);
  return dropped;
}

const move_entry* move_journal::find(const std::string& move_id) const {
  auto it = moves_.find(move_id);
  return it == moves_.end() ? nullptr : &it->second;
}

const move_entry* move_journal::active_for(const topic_partition& tp) const {
  for (const auto& [id, e] : moves_) {
    if (e.tp == tp && !is_terminal(e.state))
      return &e;
  }
  return nullptr;
}

const move_entry* move_journal::latest_for(const topic_partition& tp) const {
  const move_entry* best = nullptr;
  for (const auto& [id, e] : moves_) {
    if (e.tp == tp && (!best || e.started_ms >= best->started_ms))
      best = &e;
  }
  return best;
}

std::vector<move_entry> move_journal::unfinished() const {
  std::vector<move_entry> out;
  for (const auto& [id, e] : moves_) {
    if (!is_terminal(e.state))
      out.push_back(e);
  }
  return out;
}

}  // namespace moonmq::cluster

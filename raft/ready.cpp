#include "raft/ready.hpp"

namespace moonmq::raft {

namespace {

log_index first_expected(const persisted_state& p) {
  return p.snap ? p.snap->last_index.next() : log_index{1};
}

}  // namespace

status apply_ready(persisted_state& p, const ready_batch& rd) {
  if (rd.snap) {
    const snapshot& s = *rd.snap;
    bool keep_suffix = false;
    std::size_t cut = 0;  // entries [0, cut) are <= s.last_index
    while (cut < p.entries.size() && p.entries[cut].index <= s.last_index)
      ++cut;
    if (cut > 0 && p.entries[cut - 1].index == s.last_index && p.entries[cut - 1].entry_term == s.last_term)
      keep_suffix = true;  // compaction of our own log
    if (cut == 0 && !p.entries.empty() && p.entries.front().index == s.last_index.next())
      keep_suffix = true;  // already compacted at this index (re-applying the same snapshot)
    if (keep_suffix)
      p.entries.erase(p.entries.begin(), p.entries.begin() + static_cast<std::ptrdiff_t>(cut));
    else
      p.entries.clear();
    p.snap = s;
    if (p.hard.commit < s.last_index)
      p.hard.commit = s.last_index;
  }
  if (rd.truncate_from) {
    log_index from = *rd.truncate_from;
    if (from < first_expected(p))
      return error{errc::invalid_argument, "apply_ready: truncate_from below the snapshot", {}, 0};
    while (!p.entries.empty() && p.entries.back().index >= from)
      p.entries.pop_back();
    log_index next = p.entries.empty() ? first_expected(p) : p.entries.back().index.next();
    if (!rd.entries.empty() && rd.entries.front().index != next)
      return error{errc::invalid_argument, "apply_ready: entries would leave a gap", {}, 0};
    for (const auto& e : rd.entries) {
      if (e.index != next)
        return error{errc::invalid_argument, "apply_ready: entries not contiguous", {}, 0};
      p.entries.push_back(e);
      next = next.next();
    }
  }
  if (rd.hard)
    p.hard = *rd.hard;
  return {};
}

status check_persisted(const persisted_state& p) {
  log_index next = first_expected(p);
  term prev = p.snap ? p.snap->last_term : term{0};
  for (const auto& e : p.entries) {
    if (e.index != next)
      return error{errc::corrupt_state, "log entries are not contiguous from the snapshot (expected index " +
                                            std::to_string(next.value) + ", found " + std::to_string(e.index.value) +
                                            ")",
                   {}, 0};
    if (e.entry_term < prev)
      return error{errc::corrupt_state, "log entry " + std::to_string(e.index.value) + " has term " +
                                            std::to_string(e.entry_term.value) + " below its predecessor's",
                   {}, 0};
    prev = e.entry_term;
    next = next.next();
  }
  log_index last = next.prev();
  if (p.hard.commit > last)
    return error{errc::corrupt_state, "commit index " + std::to_string(p.hard.commit.value) +
                                          " beyond the last durable entry " + std::to_string(last.value),
                 {}, 0};
  if (p.snap && p.hard.commit < p.snap->last_index)
    return error{errc::corrupt_state, "commit index below the snapshot index", {}, 0};
  return {};
}

}  // namespace moonmq::raft

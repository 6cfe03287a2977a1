#include "dataplane/topic_name.hpp"

namespace moonmq::dataplane {

std::string check_topic_name(std::string_view name) {
  if (name.empty())
    return "topic name must not be empty";
  if (name.size() > 249)
    return "topic name is longer than 249 characters";
  if (name == "." || name == ".." || name.find("..") != std::string_view::npos)
    return "topic name must not be '.', '..' or contain '..'";
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_'
              || c == '-';
    if (!ok)
      return "topic name may only contain letters, digits, '.', '_' and '-'";
  }
  return {};
}

}  // namespace moonmq::dataplane

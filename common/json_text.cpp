#include "common/json_text.hpp"

#include <cstdio>

namespace sb {

std::string json_string(std::string_view value) {
  std::string out = "\"";
  out.reserve(value.size() + 2);
  for (char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace sb

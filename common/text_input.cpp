#include "common/text_input.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/usage_error.hpp"

namespace sb {

std::string read_text_input(const std::string& path, const std::string& what, size_t max_bytes) {
  const auto refuse = [&](const std::string& why) {
    return UsageError("cannot read " + what + " '" + path + "': " + why);
  };
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);  // a link's target
  if (error) throw refuse(error.message());
  if (!std::filesystem::is_regular_file(status)) throw refuse("not a regular file");
  const uintmax_t bytes = std::filesystem::file_size(path, error);
  if (error) throw refuse(error.message());
  if (bytes > max_bytes)
    throw refuse(std::to_string(bytes) + " bytes, more than the " + std::to_string(max_bytes) + " such a file can be");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw refuse(std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw refuse("read failed");
  return text.str();
}

}  // namespace sb

#include "common/distinct_files.hpp"

#include <filesystem>
#include <system_error>

#include "common/usage_error.hpp"

namespace sb {

void require_distinct_files(const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, fs::path>> seen;  // flag, canonical path
  for (const auto& [flag, path] : files) {
    if (path.empty()) continue;
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(path, error);
    if (error) continue;  // unresolvable here: opening it will say why
    for (const auto& [earlier_flag, earlier] : seen)
      if (earlier == canonical)
        throw UsageError(earlier_flag + " and " + flag + " name the same file, '" + canonical.string() + "'");
    seen.emplace_back(flag, canonical);
  }
}

}  // namespace sb

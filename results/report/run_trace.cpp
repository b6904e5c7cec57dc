#include "results/report/run_trace.hpp"

#include <cstdio>
#include <filesystem>
#include <system_error>

namespace sb::report {
namespace fs = std::filesystem;
namespace {

// The trace path a run recorded: sb-train's in its configuration, sb-buckets' on /buckets
// (schema 18 and 19; older runs wrote none).
std::string recorded_trace(const Run& run) {
  const h5::Node& root = *run.root;
  if (root.has("train")) {
    const h5::Node train = root.open_group("train");
    if (train.has("config")) {
      const h5::Node config = train.open_group("config");
      if (config.has_attr("trace")) return config.attr_string("trace");
    }
  }
  if (root.has("buckets")) {
    const h5::Node buckets = root.open_group("buckets");
    if (buckets.has_attr("trace")) return buckets.attr_string("trace");
  }
  return "";
}

bool is_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

}  // namespace

RunTrace trace_of(const Run& run) {
  RunTrace trace;
  trace.recorded = recorded_trace(run);
  if (trace.recorded.empty()) return trace;
  const fs::path recorded(trace.recorded);
  const fs::path beside = fs::path(run.file_path).parent_path() / recorded.filename();
  if (is_file(recorded)) trace.found = recorded.string();
  else if (is_file(beside)) trace.found = beside.string();
  return trace;
}

std::string relative_href(const std::string& path, const std::string& page_dir) {
  std::error_code error;
  const fs::path target = fs::weakly_canonical(fs::absolute(path, error), error);
  const fs::path page = fs::weakly_canonical(fs::absolute(page_dir, error), error);
  fs::path relative = target.lexically_relative(page);
  if (relative.empty()) relative = target;  // another root (a different drive): the full path
  std::string href;
  for (const unsigned char c : relative.generic_string()) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                       c == '-' || c == '.' || c == '_' || c == '~';
    if (plain) {
      href += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      href += escaped;
    }
  }
  return href;
}

}  // namespace sb::report

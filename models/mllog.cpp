#include "models/mllog.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "common/check.hpp"
#include "common/usage_error.hpp"

namespace sb::models {

MlLog::MlLog(const std::string& path) : path_(path) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw UsageError("cannot write --mllog file '" + path + "'");
}

MlLog::~MlLog() {
  if (file_) std::fclose(file_);
}

std::string MlLog::number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[40];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

std::string MlLog::number(float value) {
  if (!std::isfinite(value)) return "null";
  char text[40];
  std::snprintf(text, sizeof text, "%.7g", static_cast<double>(value));
  return text;
}

std::string MlLog::string(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string MlLog::epoch_metadata(int64_t epoch) { return "{\"epoch_num\": " + std::to_string(epoch) + "}"; }

void MlLog::event(const char* type, const std::string& key, const std::string& value_json, const std::string& metadata_json) {
  if (!file_) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
  errno = 0;
  const int written =
      std::fprintf(file_,
                   ":::MLLOG {\"namespace\": \"\", \"time_ms\": %lld, \"event_type\": \"%s\", \"key\": %s, "
                   "\"value\": %s, \"metadata\": %s}\n",
                   ms, type, string(key).c_str(), value_json.c_str(), metadata_json.c_str());
  // A log that silently stops (a full disk) would read as a run that stopped: end it here instead.
  if (written < 0 || std::fflush(file_) != 0)
    throw LibraryError("cannot write the --mllog file '" + path_ + "': " + (errno ? std::strerror(errno) : "write failed"));
}

void MlLog::point(const std::string& key, const std::string& value_json, const std::string& metadata_json) {
  event("POINT_IN_TIME", key, value_json, metadata_json);
}
void MlLog::start(const std::string& key, const std::string& metadata_json) {
  event("INTERVAL_START", key, "null", metadata_json);
}
void MlLog::end(const std::string& key, const std::string& metadata_json) {
  event("INTERVAL_END", key, "null", metadata_json);
}

}  // namespace sb::models

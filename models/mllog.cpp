#include "models/mllog.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/check.hpp"
#include "common/json_text.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"

namespace sb::models {

MlLog::MlLog(const std::string& path) : path_(path) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "w");
  // The options were checked on every rank; what fails here (permissions, a race) fails on rank 0
  // alone, as a fault that ends the job, not as bad input the other ranks would wait on.
  if (!file_) throw LibraryError("cannot write --mllog file '" + path + "': " + std::strerror(errno));
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

std::string MlLog::string(const std::string& value) { return json_string(value); }

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

MlPerfSubmission mlperf_submission(const std::map<std::string, std::string>& labels) {
  MlPerfSubmission submission;
  auto take = [&](const char* key, std::string& field) {
    if (auto found = labels.find(key); found != labels.end()) {
      if (found->second.empty()) throw UsageError(std::string("--label ") + key + "= needs a value");
      field = found->second;
    }
  };
  take("submission_org", submission.org);
  take("submission_platform", submission.platform);
  take("submission_division", submission.division);
  take("submission_status", submission.status);
  if (submission.division != "closed" && submission.division != "open")
    throw UsageError("--label submission_division is closed or open, not '" + submission.division + "'");
  const std::string& status = submission.status;
  if (status != "cloud" && status != "onprem" && status != "preview" && status != "research")
    throw UsageError("--label submission_status is cloud, onprem, preview or research, not '" + status + "'");
  return submission;
}

namespace {
// A whole number short enough for std::stoi.
bool is_digits(const std::string& text) {
  return !text.empty() && text.size() < 7 && text.find_first_not_of("0123456789") == std::string::npos;
}

// The first "model name" of /proc/cpuinfo, or empty.
std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t first = line.find_first_not_of(' ', colon + 1);
    return first == std::string::npos ? std::string() : line.substr(first);
  }
  return {};
}
}  // namespace

std::string default_platform(int ranks, const std::string& device_name) {
  std::string system = device_name;
  if (system.rfind("cuda:", 0) == 0) system = system.substr(std::min(system.size(), system.find(' ') + 1));
  if (system.empty()) system = cpu_model_name();
  if (system.empty()) system = "CPU";
  return std::to_string(ranks) + "x" + system;
}

std::string mlperf_tensor_name(const std::string& name) {
  const std::vector<std::string> part = split_list(name, '.');
  // A batch norm's weight is its gamma and its bias its beta; a convolution has a weight only.
  auto bn_suffix = [](const std::string& field) { return field == "weight" ? "_gamma" : field == "bias" ? "_beta" : ""; };
  if (part.size() == 2) {
    if (part[0] == "conv1" && part[1] == "weight") return "conv0_weight";
    if (part[0] == "bn1" && *bn_suffix(part[1])) return std::string("bn0") + bn_suffix(part[1]);
    if (part[0] == "fc" && (part[1] == "weight" || part[1] == "bias")) return "fc1_" + part[1];
    return name;
  }
  // layer<S>.<B>.<layer>...: stage S, unit B + 1.
  if (part.size() < 4 || part[0].rfind("layer", 0) != 0 || !is_digits(part[0].substr(5)) || !is_digits(part[1]))
    return name;
  const std::string unit = "stage" + part[0].substr(5) + "_unit" + std::to_string(std::stoi(part[1]) + 1) + "_";
  const std::string& field = part.back();
  if (part.size() == 4 && part[2].rfind("conv", 0) == 0 && field == "weight") return unit + part[2] + "_weight";
  if (part.size() == 4 && part[2].rfind("bn", 0) == 0 && *bn_suffix(field)) return unit + part[2] + bn_suffix(field);
  if (part.size() == 5 && part[2] == "downsample" && part[3] == "0" && field == "weight") return unit + "conv1sc_weight";
  if (part.size() == 5 && part[2] == "downsample" && part[3] == "1" && *bn_suffix(field)) return unit + "bnsc" + bn_suffix(field);
  return name;
}

}  // namespace sb::models

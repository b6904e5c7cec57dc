#pragma once
// An MLPerf-style log: one ":::MLLOG {json}" line per event, with MLPerf's fields (namespace,
// time_ms, event_type POINT_IN_TIME / INTERVAL_START / INTERVAL_END, key, value, metadata) and the
// keys of MLPerf's ResNet logs, written by rank 0 and flushed line by line so that a run that dies
// leaves every event before it. A line that cannot be written (a full disk) throws LibraryError.
#include <cstdio>
#include <string>

namespace sb::models {

class MlLog {
 public:
  // An empty path: no log.
  explicit MlLog(const std::string& path);
  ~MlLog();
  MlLog(const MlLog&) = delete;
  MlLog& operator=(const MlLog&) = delete;

  // value_json and metadata_json are JSON texts: a number, a quoted string, an object...
  void point(const std::string& key, const std::string& value_json, const std::string& metadata_json = "{}");
  void start(const std::string& key, const std::string& metadata_json = "{}");
  void end(const std::string& key, const std::string& metadata_json = "{}");
  bool enabled() const { return file_ != nullptr; }

  static std::string number(double value);
  static std::string number(float value);  // at float precision: 0.9f is 0.9
  static std::string string(const std::string& value);
  static std::string epoch_metadata(int64_t epoch);  // {"epoch_num": N}

 private:
  void event(const char* type, const std::string& key, const std::string& value_json, const std::string& metadata_json);
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace sb::models

#pragma once
// An MLPerf-style log: one ":::MLLOG {json}" line per event, with MLPerf's fields (namespace,
// time_ms, event_type POINT_IN_TIME / INTERVAL_START / INTERVAL_END, key, value, metadata) and the
// keys of MLPerf's ResNet logs, written by rank 0 and flushed line by line so that a run that dies
// leaves every event before it. A line that cannot be written (a full disk) throws LibraryError.
#include <cstdio>
#include <map>
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

// MLPerf's submission keys, which its compliance checker requires once each: who ran it, on
// what system, in which division and with what availability. Defaults: org "scalebench", the
// platform as default_platform() names it, division "open" (nothing checks that a run keeps the
// closed division's rules) and status "research".
struct MlPerfSubmission {
  std::string org = "scalebench";
  std::string platform;  // empty: default_platform()
  std::string division = "open";
  std::string status = "research";
};

// The submission keys from the run's --label tags submission_org, submission_platform,
// submission_division and submission_status. Throws UsageError for a division other than closed
// or open, or a status other than cloud, onprem, preview or research.
MlPerfSubmission mlperf_submission(const std::map<std::string, std::string>& labels);

// "8xNVIDIA H200" from 8 ranks on "cuda:0 NVIDIA H200"; on the host (an empty device name),
// "2xAMD EPYC 7763 64-Core Processor" from /proc/cpuinfo's model name, or "2xCPU".
std::string default_platform(int ranks, const std::string& device_name);

// MLPerf's name for a ResNet tensor, the MXNet reference's that its compliance checker expects in
// weights_initialization, from torchvision's: conv1.weight -> conv0_weight, bn1.bias -> bn0_beta,
// layer2.0.conv3.weight -> stage2_unit1_conv3_weight, layer2.0.downsample.0.weight ->
// stage2_unit1_conv1sc_weight, layer2.0.downsample.1.weight -> stage2_unit1_bnsc_gamma,
// fc.bias -> fc1_bias. Any other name comes back unchanged.
std::string mlperf_tensor_name(const std::string& torchvision_name);

}  // namespace sb::models

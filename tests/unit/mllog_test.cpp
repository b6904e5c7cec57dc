// The MLPerf log's naming and submission keys: ResNet-50's tensors under the names MLPerf's
// compliance checker expects (the set built here from the reference's naming rule, not from our
// mapping), the submission keys taken from --label tags, and the default platform name.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/usage_error.hpp"
#include "models/mllog.hpp"
#include "models/onednn_backend.hpp"
#include "models/resnet.hpp"

namespace sb::models {
namespace {

// MLPerf's ResNet-50 tensors: the stem (conv0, bn0), 3, 4, 6 and 3 bottleneck units per stage,
// each with three convolutions and their batch norms, a projection shortcut (conv1sc, bnsc) in
// each stage's first unit, and fc1.
std::set<std::string> mlperf_resnet50_tensors() {
  std::set<std::string> names = {"conv0_weight", "bn0_gamma", "bn0_beta", "fc1_weight", "fc1_bias"};
  const int units[] = {3, 4, 6, 3};
  for (int stage = 1; stage <= 4; ++stage)
    for (int unit = 1; unit <= units[stage - 1]; ++unit) {
      const std::string prefix = "stage" + std::to_string(stage) + "_unit" + std::to_string(unit) + "_";
      for (const std::string layer : {"1", "2", "3"}) {
        names.insert(prefix + "conv" + layer + "_weight");
        names.insert(prefix + "bn" + layer + "_gamma");
        names.insert(prefix + "bn" + layer + "_beta");
      }
      if (unit == 1)
        for (const char* shortcut : {"conv1sc_weight", "bnsc_gamma", "bnsc_beta"}) names.insert(prefix + shortcut);
    }
  return names;
}

TEST(MlLog, ResNet50TensorsGetMlperfsNames) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet50", 3, 1000, 224, 1));
  std::set<std::string> named;
  for (const Parameter* p : model.parameters()) named.insert(mlperf_tensor_name(p->name));
  EXPECT_EQ(named.size(), model.parameters().size());  // no two tensors under one name
  EXPECT_EQ(named, mlperf_resnet50_tensors());
  EXPECT_EQ(mlperf_tensor_name("layer2.0.downsample.1.bias"), "stage2_unit1_bnsc_beta");
  EXPECT_EQ(mlperf_tensor_name("layer4.2.conv3.weight"), "stage4_unit3_conv3_weight");
}

TEST(MlLog, OtherNamesStayAsTheyAre) {
  for (const char* name : {"bn1.running_mean", "layer1.0.conv1.bias", "layerx.0.conv1.weight", "layer1.a.bn1.weight",
                           "layer1.0.downsample.2.weight", "fc.scale", "head.weight", ""})
    EXPECT_EQ(mlperf_tensor_name(name), name);
}

TEST(MlLog, SubmissionKeysComeFromLabels) {
  const MlPerfSubmission defaults = mlperf_submission({{"interconnect", "HDR200"}});
  EXPECT_EQ(defaults.org, "scalebench");
  EXPECT_EQ(defaults.platform, "");
  EXPECT_EQ(defaults.division, "open");
  EXPECT_EQ(defaults.status, "research");
  const MlPerfSubmission given = mlperf_submission({{"submission_org", "ACME"},
                                                    {"submission_platform", "dgxh200_n16"},
                                                    {"submission_division", "closed"},
                                                    {"submission_status", "onprem"}});
  EXPECT_EQ(given.org, "ACME");
  EXPECT_EQ(given.platform, "dgxh200_n16");
  EXPECT_EQ(given.division, "closed");
  EXPECT_EQ(given.status, "onprem");
  EXPECT_THROW(mlperf_submission({{"submission_division", "premier"}}), UsageError);
  EXPECT_THROW(mlperf_submission({{"submission_status", "available"}}), UsageError);
  EXPECT_THROW(mlperf_submission({{"submission_org", ""}}), UsageError);
}

TEST(MlLog, DefaultPlatformCountsRanksOnTheirDevice) {
  EXPECT_EQ(default_platform(8, "cuda:0 NVIDIA H200"), "8xNVIDIA H200");
  const std::string host = default_platform(2, "");
  EXPECT_EQ(host.rfind("2x", 0), 0u);
  EXPECT_GT(host.size(), 2u);  // the CPU's model name, or "CPU"
}

}  // namespace
}  // namespace sb::models

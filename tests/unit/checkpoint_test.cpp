// Checkpoints: the round trip of the training state, and a state that sb-train never writes (a
// damaged or edited file: a negative epoch crashed the resumed run) refused as bad input, naming
// the field.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/usage_error.hpp"
#include "models/checkpoint.hpp"
#include "models/onednn_backend.hpp"
#include "models/optimizer.hpp"
#include "models/resnet.hpp"
#include "tests/unit/temp_dir.hpp"

namespace sb::models {
namespace {

class Checkpoint : public testing::TempDirTest {
 protected:
  // Saves `state` and loads it back into a model built the same way.
  TrainingState round_trip(const TrainingState& state) {
    save_checkpoint(path("checkpoint.h5"), model_, optimizer_, state);
    return load_checkpoint(path("checkpoint.h5"), model_, optimizer_);
  }
  // The message of loading `state` back, or "" when it loads.
  std::string refusal(const TrainingState& state) {
    try {
      round_trip(state);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }
  OnednnBackend backend_;
  ResNet model_{backend_, make_resnet_config("resnet20", 1, 10, 28, 3)};
  Optimizer optimizer_{backend_, model_.parameters(), OptimizerConfig{}};
};

TEST_F(Checkpoint, TheTrainingStateComesBackAsSaved) {
  TrainingState state;
  state.epoch = 3, state.next_batch = 17, state.step = 1234, state.epoch_samples = 2176;
  state.epoch_loss_sum = 812.5, state.elapsed_s = 61.25, state.ranks = 8, state.resumes = 2;
  const TrainingState back = round_trip(state);
  EXPECT_EQ(back.epoch, 3);
  EXPECT_EQ(back.next_batch, 17);
  EXPECT_EQ(back.step, 1234);
  EXPECT_EQ(back.epoch_samples, 2176);
  EXPECT_EQ(back.epoch_loss_sum, 812.5);
  EXPECT_EQ(back.elapsed_s, 61.25);
  EXPECT_EQ(back.ranks, 8);
  EXPECT_EQ(back.resumes, 2);
}

TEST_F(Checkpoint, AStateOutOfRangeIsBadInputNamingTheField) {
  TrainingState negative_epoch;
  negative_epoch.epoch = -1;
  EXPECT_NE(refusal(negative_epoch).find("is damaged: its epoch is out of range"), std::string::npos);
  TrainingState no_ranks;
  no_ranks.ranks = 0;
  EXPECT_NE(refusal(no_ranks).find("its ranks is out of range"), std::string::npos);
  TrainingState batch_from_nan;
  batch_from_nan.next_batch = INT64_MIN;  // what a NaN becomes in an int64 attribute
  EXPECT_NE(refusal(batch_from_nan).find("its next_batch is out of range"), std::string::npos);
  TrainingState nan_scale;
  nan_scale.loss_scale = std::nan("");
  EXPECT_NE(refusal(nan_scale).find("its loss_scale is out of range"), std::string::npos);
  EXPECT_EQ(refusal(TrainingState{}), "");
}

TEST_F(Checkpoint, ATensorHoldingANonFiniteValueIsBadInputNamingTheTensor) {
  Tensor& weight = model_.parameters().front()->value;
  std::vector<float> values(static_cast<size_t>(weight.count()), 0.5f);
  values[7] = std::nanf("");
  backend_.write(weight, values);
  EXPECT_NE(refusal(TrainingState{}).find("is damaged: tensor 'conv1.weight' holds a value that is not finite"),
            std::string::npos);
}

}  // namespace
}  // namespace sb::models

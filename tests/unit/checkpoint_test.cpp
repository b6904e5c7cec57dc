// Checkpoints: the round trip of the training state, and a state that sb-train never writes (a
// damaged or edited file: a negative epoch crashed the resumed run) refused as bad input, naming
// the field; a bit flipped in a stored value, which HDF5 reads without complaint, found by the
// content checksum.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/usage_error.hpp"
#include "models/checkpoint.hpp"
#include "models/onednn_backend.hpp"
#include "models/optimizer.hpp"
#include "models/resnet.hpp"
#include "results/results_file.hpp"
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
  // Flips the lowest bit of the one place in the file where `value`'s bytes are stored.
  template <class T>
  void flip_stored(const std::string& file, T value) {
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string pattern(sizeof value, '\0');
    std::memcpy(pattern.data(), &value, sizeof value);
    const size_t at = bytes.find(pattern);
    ASSERT_NE(at, std::string::npos);
    ASSERT_EQ(bytes.find(pattern, at + 1), std::string::npos) << "the value is stored more than once";
    bytes[at] = static_cast<char>(bytes[at] ^ 1);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  }
  // The checkpoint's schema_version set to `version`, and its sum removed unless `keep_sum`,
  // through HDF5 itself.
  static void edit_checkpoint(const std::string& file, int64_t version, bool keep_sum) {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t group = H5Gopen2(f, "checkpoint", H5P_DEFAULT);
    if (!keep_sum && H5Aexists(group, "content_checksum") > 0) {
      EXPECT_GE(H5Adelete(group, "content_checksum"), 0);
    }
    const hid_t attr = H5Aopen(f, "schema_version", H5P_DEFAULT);
    EXPECT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &version), 0);
    H5Aclose(attr), H5Gclose(group), H5Fclose(f);
  }
  std::string load_refusal() {
    try {
      load_checkpoint(path("checkpoint.h5"), model_, optimizer_);
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
  state.momentum_lr = 0.0375;
  const TrainingState back = round_trip(state);
  EXPECT_EQ(back.epoch, 3);
  EXPECT_EQ(back.next_batch, 17);
  EXPECT_EQ(back.step, 1234);
  EXPECT_EQ(back.epoch_samples, 2176);
  EXPECT_EQ(back.epoch_loss_sum, 812.5);
  EXPECT_EQ(back.elapsed_s, 61.25);
  EXPECT_EQ(back.ranks, 8);
  EXPECT_EQ(back.resumes, 2);
  EXPECT_EQ(back.momentum_lr, 0.0375);
  EXPECT_FALSE(back.settings.has_value()) << "none given, none written";
}

// The writer's settings and the changes earlier resumes found come back as they were, a value
// with a newline or an empty one included.
TEST_F(Checkpoint, TheWritersSettingsComeBackAsSaved) {
  TrainingState state;
  state.settings = std::map<std::string, std::string>{{"NCCL_ALGO", "Ring"}, {"OMP_NUM_THREADS", ""}, {"UCX_TLS", "rc\nsm"}};
  state.setting_changes = {"resume 1: NCCL_ALGO: Tree then, Ring now", "resume 2: UCX_TLS: unset then, rc\\nsm now"};
  const TrainingState back = round_trip(state);
  ASSERT_TRUE(back.settings.has_value());
  EXPECT_EQ(*back.settings, *state.settings);
  EXPECT_EQ(back.setting_changes, state.setting_changes);
  state.setting_changes.clear();
  EXPECT_TRUE(round_trip(state).setting_changes.empty());
}

// A checkpoint from before schema 15 has no momentum_lr: NaN, which the trainer takes as the last
// step's rate.
TEST_F(Checkpoint, AnOlderCheckpointsUnknownMomentumRateIsNaN) {
  TrainingState state;
  state.momentum_lr = 0.5;
  save_checkpoint(path("checkpoint.h5"), model_, optimizer_, state);
  edit_checkpoint(path("checkpoint.h5"), kFirstChecksummedSchemaVersion - 1, false);
  const hid_t f = H5Fopen(path("checkpoint.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t group = H5Gopen2(f, "checkpoint", H5P_DEFAULT);
  EXPECT_GE(H5Adelete(group, "momentum_lr"), 0);
  H5Gclose(group), H5Fclose(f);
  EXPECT_TRUE(std::isnan(load_checkpoint(path("checkpoint.h5"), model_, optimizer_).momentum_lr));
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
  for (double rate : {-0.1, std::numeric_limits<double>::infinity()}) {
    TrainingState bad_rate;
    bad_rate.momentum_lr = rate;
    EXPECT_NE(refusal(bad_rate).find("its momentum_lr is out of range"), std::string::npos) << rate;
  }
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

// A flipped bit in an attribute's value or in a tensor is no error to HDF5: a checkpoint whose
// epoch_loss_sum had become 1024.0 was resumed as if whole.
TEST_F(Checkpoint, ABitFlippedInAStoredValueIsDamageFoundByTheChecksum) {
  TrainingState state;
  state.epoch_loss_sum = 812.3046875;
  save_checkpoint(path("checkpoint.h5"), model_, optimizer_, state);
  ASSERT_EQ(load_refusal(), "");
  flip_stored(path("checkpoint.h5"), state.epoch_loss_sum);
  EXPECT_NE(load_refusal().find("is damaged: its content does not match its checksum"), std::string::npos);

  Tensor& weight = model_.parameters().front()->value;
  std::vector<float> values(static_cast<size_t>(weight.count()), 0.5f);
  values[7] = 0.123456789f;
  backend_.write(weight, values);
  save_checkpoint(path("checkpoint.h5"), model_, optimizer_, TrainingState{});
  flip_stored(path("checkpoint.h5"), 0.123456789f);
  EXPECT_NE(load_refusal().find("is damaged: its content does not match its checksum"), std::string::npos);
}

// A checkpoint of a schema that always stores a sum, without one, is damaged (its sum's name was);
// one from before sums were stored loads as it always did.
TEST_F(Checkpoint, AMissingChecksumIsDamageOnlyWhereTheSchemaAlwaysHasOne) {
  save_checkpoint(path("checkpoint.h5"), model_, optimizer_, TrainingState{});
  edit_checkpoint(path("checkpoint.h5"), kSchemaVersion, false);
  EXPECT_NE(load_refusal().find("is damaged: its checksum is missing"), std::string::npos);
  edit_checkpoint(path("checkpoint.h5"), kFirstChecksummedSchemaVersion - 1, false);
  EXPECT_EQ(load_refusal(), "");
}

// The schema_version on the file's root is summed too: changed (to 0, by one flipped byte), it had
// loaded, and a version from before checksums would have let a missing sum pass.
TEST_F(Checkpoint, AChangedSchemaVersionIsDamage) {
  save_checkpoint(path("checkpoint.h5"), model_, optimizer_, TrainingState{});
  edit_checkpoint(path("checkpoint.h5"), 0, true);
  EXPECT_NE(load_refusal().find("is damaged: its content does not match its checksum"), std::string::npos);
}

TEST_F(Checkpoint, AnExchangeStateWithAFlippedBitIsRefused) {
  const std::string file = path("checkpoint.exchange-rank0.h5");
  save_exchange_state(file, {{"residual.conv1.weight", {0.25f, -0.125f, 0.987654321f}}}, 12, 2);
  std::string why;
  ASSERT_TRUE(load_exchange_state(file, 12, 2, why).has_value());
  flip_stored(file, 0.987654321f);
  try {
    load_exchange_state(file, 12, 2, why);
    ADD_FAILURE() << "a damaged exchange state was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is damaged: its content does not match its checksum"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sb::models

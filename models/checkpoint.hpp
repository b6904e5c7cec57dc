#pragma once
// Checkpoints: the model's parameters and running statistics, the optimizer's momentum, and the
// TrainingState, in one HDF5 file written under a temporary name and renamed, so a crash during a
// save leaves the previous checkpoint whole. Tensors are stored as fp32 in NCHW (torchvision's
// layout and names), whatever layout the backend keeps them in. All randomness in training is
// drawn from (seed, epoch, sample index), so the seed and the position are the whole RNG state:
// a resumed run continues exactly as if it had not stopped.
#include <cstdint>
#include <string>

#include "models/optimizer.hpp"
#include "models/resnet.hpp"
#include "models/training_state.hpp"
#include "results/h5.hpp"

namespace sb::models {

// The per-epoch curve as one dataset per field (`epoch`, `wall_s`, `train_loss`, `images_per_s`,
// `evaluated`, `top1`, `top5`; top-1/5 NaN where not evaluated): in results files and checkpoints.
void write_curve(const h5::Node& group, const std::vector<EpochRecord>& curve);
std::vector<EpochRecord> read_curve(const h5::Node& group);

void save_checkpoint(const std::string& path, ResNet& model, Optimizer& optimizer, const TrainingState& state);

// Restores what save_checkpoint wrote into a model and optimizer built the same way. Throws
// UsageError for a missing or unreadable file, or one of another model, seed or shape.
TrainingState load_checkpoint(const std::string& path, ResNet& model, Optimizer& optimizer);

}  // namespace sb::models

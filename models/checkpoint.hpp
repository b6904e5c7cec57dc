#pragma once
// Checkpoints: the model's parameters and running statistics, the optimizer's momentum, and the
// TrainingState, in one HDF5 file written under a temporary name and renamed, so a crash during a
// save leaves the previous checkpoint whole. Tensors are stored as fp32 in NCHW (torchvision's
// layout and names), whatever layout the backend keeps them in. All randomness in training is
// drawn from (seed, epoch, sample index), so the seed and the position are the whole RNG state:
// a resumed run continues exactly as if it had not stopped.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/buckets/gradient_averager.hpp"
#include "models/optimizer.hpp"
#include "models/resnet.hpp"
#include "models/training_state.hpp"
#include "results/h5.hpp"

namespace sb::models {

// The per-epoch curve as one dataset per field (`epoch`, `wall_s`, `train_loss`, `images_per_s`,
// `evaluated`, `top1`, `top5`; top-1/5 NaN where not evaluated): in results files and checkpoints.
void write_curve(const h5::Node& group, const std::vector<EpochRecord>& curve);

void save_checkpoint(const std::string& path, ResNet& model, Optimizer& optimizer, const TrainingState& state);

// Restores what save_checkpoint wrote into a model and optimizer built the same way. Throws
// UsageError for a missing or unreadable file, or one of another model, seed or shape. `content`,
// when given, receives the checksum of all that was read: ranks that read it from their nodes'
// copies read the same checkpoint only if theirs agree.
TrainingState load_checkpoint(const std::string& path, ResNet& model, Optimizer& optimizer,
                              uint64_t* content = nullptr);

// The gradient exchange's carried state of one rank (error-feedback residuals, compressors' warm
// starts: GradientAverager::carried_state), which differs from rank to rank: a file per rank
// beside the checkpoint, written at the same step, tagged with the step and the rank count.
std::string exchange_state_path(const std::string& checkpoint_path, int rank);
void save_exchange_state(const std::string& path, const std::vector<NamedFloats>& state, int64_t step, int ranks);
// What save_exchange_state wrote at `step` by a run of `ranks` ranks; nothing, with `why`, when the
// file is missing or was written at another step or by another number of ranks.
std::optional<std::vector<NamedFloats>> load_exchange_state(const std::string& path, int64_t step, int ranks,
                                                            std::string& why);

}  // namespace sb::models

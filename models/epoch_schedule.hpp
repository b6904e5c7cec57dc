#pragma once
// Values that change by epoch, as the fast ImageNet records change image size and batch size:
// (value, first epoch) pairs in epoch order, written VALUE:EPOCH,... on the command line.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sb::models {

using EpochSchedule = std::vector<std::pair<int64_t, int64_t>>;  // (value, first 0-based epoch)

// "128:0,224:16" -> {(128, 0), (224, 16)}: values in [low, high], epochs increasing from 0.
// Throws UsageError naming `flag` otherwise.
EpochSchedule parse_epoch_schedule(const std::string& text, const std::string& flag, const std::string& value_name,
                                   int64_t low, int64_t high, const std::string& example);
EpochSchedule parse_resize_schedule(const std::string& text);  // --resize-schedule SIZE:EPOCH,...
EpochSchedule parse_batch_schedule(const std::string& text);   // --batch-schedule BATCH:EPOCH,...

// The value in force in `epoch`: the last entry starting at or before it, else `before_first`.
int64_t value_at(const EpochSchedule& schedule, int64_t epoch, int64_t before_first);

// Back to VALUE:EPOCH,... ("" for an empty schedule), as the results file records it.
std::string format_epoch_schedule(const EpochSchedule& schedule);

}  // namespace sb::models

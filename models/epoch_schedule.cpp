#include "models/epoch_schedule.hpp"

#include "common/text_fields.hpp"
#include "common/usage_error.hpp"

namespace sb::models {

EpochSchedule parse_epoch_schedule(const std::string& text, const std::string& flag, const std::string& value_name,
                                   int64_t low, int64_t high, const std::string& example) {
  EpochSchedule schedule;
  for (const std::string& item : split_list(text)) {
    const std::vector<std::string> fields = split_list(item, ':');
    const auto amount = fields.size() == 2 ? parse_whole_integer(fields[0]) : std::nullopt;
    const auto epoch = fields.size() == 2 ? parse_whole_integer(fields[1]) : std::nullopt;
    if (!amount || !epoch)
      throw UsageError(flag + " wants " + value_name + ":EPOCH[," + value_name + ":EPOCH...], e.g. " + example +
                       ", not '" + text + "'");
    if (*amount < low || *amount > high || *epoch < 0 || (!schedule.empty() && *epoch <= schedule.back().second))
      throw UsageError(flag + " wants " + value_name + "s of " + std::to_string(low) + " to " + std::to_string(high) +
                       " at increasing epochs from 0, not '" + text + "'");
    schedule.emplace_back(*amount, *epoch);
  }
  return schedule;
}

EpochSchedule parse_resize_schedule(const std::string& text) {
  return parse_epoch_schedule(text, "--resize-schedule", "SIZE", 8, 1024, "128:0,224:16");
}

EpochSchedule parse_batch_schedule(const std::string& text) {
  return parse_epoch_schedule(text, "--batch-schedule", "BATCH", 1, int64_t{1} << 24, "256:0,512:2");
}

int64_t value_at(const EpochSchedule& schedule, int64_t epoch, int64_t before_first) {
  int64_t value = before_first;
  for (const auto& [amount, first] : schedule)
    if (first <= epoch) value = amount;
  return value;
}

std::string format_epoch_schedule(const EpochSchedule& schedule) {
  std::string text;
  for (const auto& [amount, epoch] : schedule)
    text.append(text.empty() ? "" : ",").append(std::to_string(amount)).append(":").append(std::to_string(epoch));
  return text;
}

}  // namespace sb::models

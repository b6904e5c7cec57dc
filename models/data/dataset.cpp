#include "models/data/dataset.hpp"

#include <filesystem>

#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "models/data/idx.hpp"
#include "models/data/imagefolder.hpp"
#include "models/data/synthetic.hpp"

namespace sb::models {

DataSplits open_data(const std::string& spec, int64_t image_size) {
  if (spec == "fashion-mnist") return open_idx_directory(kFashionMnistDir);
  if (spec == "synthetic") return open_synthetic(224);
  if (spec.rfind("synthetic:", 0) == 0) {
    const std::string size = spec.substr(10);
    const int64_t px = parse_whole_integer(size).value_or(0);
    if (px < 8 || px > 1024) throw UsageError("--data synthetic:SIZE needs a size of 8 to 1024 px, not '" + size + "'");
    return open_synthetic(px);
  }
  if (spec.rfind("imagefolder:", 0) == 0) return open_image_folder(spec.substr(12), image_size);
  if (std::filesystem::is_directory(spec)) return open_idx_directory(spec);
  throw UsageError("--data '" + spec + "' is neither fashion-mnist, synthetic[:SIZE], imagefolder:DIR nor a directory of IDX files");
}

}  // namespace sb::models

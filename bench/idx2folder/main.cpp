// sb-idx2folder: writes an IDX data set (Fashion-MNIST by default) out as a real JPEG ImageFolder,
// OUT/train/<class>/<index>.jpg and OUT/val/<class>/<index>.jpg, so that sb-train's JPEG path
// (--data imagefolder:OUT) can be run and tested on real images.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "common/check.hpp"
#include "common/closed_stdout.hpp"
#include "common/command_line.hpp"
#include "common/usage_error.hpp"
#include "models/data/idx.hpp"
#include "models/data/imagefolder.hpp"

int main(int argc, char** argv) {
  sb::outlive_closed_stdout("sb-idx2folder");
  std::string data = sb::models::kFashionMnistDir, out;
  int64_t train_limit = 0, val_limit = 0;
  int quality = 95;
  CLI::App app("sb-idx2folder: writes the four IDX files of a directory as a JPEG ImageFolder (train/ and val/).",
               "sb-idx2folder");
  app.add_option("--data", data, "directory of the IDX files [/usr/share/datasets/fashion-mnist]");
  app.add_option("--out", out, "the ImageFolder root to create")->required();
  app.add_option("--train-limit", train_limit, "write only the first N training images (0: all) [all]");
  app.add_option("--val-limit", val_limit, "write only the first N test images (0: all) [all]");
  app.add_option("--quality", quality, "JPEG quality, 1..100 [95]");
  try {
    if (!sb::parse_command_line(app, argc, argv, true)) return 0;
    if (quality < 1 || quality > 100) throw sb::UsageError("--quality must be 1 to 100");
    if (train_limit < 0 || val_limit < 0) throw sb::UsageError("--train-limit and --val-limit must not be negative");
    sb::models::DataSplits splits = sb::models::open_idx_directory(data);
    std::error_code error;
    std::filesystem::create_directories(out, error);
    if (error) throw sb::UsageError("--out: cannot create '" + out + "': " + error.message());
    sb::models::write_image_folder(static_cast<const sb::models::IdxDataset&>(*splits.train), out + "/train",
                                   train_limit, quality);
    sb::models::write_image_folder(static_cast<const sb::models::IdxDataset&>(*splits.eval), out + "/val", val_limit,
                                   quality);
    std::printf("sb-idx2folder: wrote %s/train and %s/val\n", out.c_str(), out.c_str());
    return 0;
  } catch (const sb::UsageError& e) {
    std::fprintf(stderr, "sb-idx2folder: error: %s\n", e.what());
    return sb::kExitUsage;
  } catch (const std::exception& e) {  // a fault (a full disk), not the input
    std::fprintf(stderr, "sb-idx2folder: %s\n", e.what());
    return sb::kExitFault;
  }
}

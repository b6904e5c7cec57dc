#include "results/save_once.hpp"

#include <cstdio>

#include "common/check.hpp"

namespace sb {

void save_results_once(std::unique_ptr<ResultsFile>& file, const std::string& status,
                       const std::function<void(ResultsFile&)>& write, const std::string& elsewhere,
                       std::FILE* announce) {
  if (!file) return;
  const std::string path = file->final_path();
  try {
    write(*file);
    file->commit();
  } catch (const LibraryError& e) {
    file.reset();  // and its temporary file with it
    throw LibraryError("cannot write the results to " + path + " (" + e.what() + ")" +
                       (elsewhere.empty() ? "" : "; " + elsewhere));
  }
  file.reset();
  std::fprintf(announce, "# %s results: %s\n", status == "complete" ? "Complete" : "Partial", path.c_str());
  std::fflush(announce);
}

}  // namespace sb

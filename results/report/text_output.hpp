#pragma once
// The report's text files (data, scripts, summary, index). Each is written under a temporary name
// and renamed to its own once whole, so that a report that fails part-way (a full disk, a missing
// folder) ends with the file's name and the reason, and leaves whole files or none: never a
// truncated one that a plot would read as complete.
#include <fstream>
#include <ostream>
#include <string>

namespace sb::report {

class TextFile {
 public:
  // Throws LibraryError naming `path` when its temporary cannot be created.
  explicit TextFile(std::string path);
  ~TextFile();  // an unfinished file's temporary is removed
  TextFile(const TextFile&) = delete;
  TextFile& operator=(const TextFile&) = delete;

  std::ostream& stream() { return out_; }
  // Closes the file and gives it its name; throws LibraryError (naming it, with the reason) when
  // a write failed.
  void commit();

 private:
  std::string path_, temporary_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace sb::report

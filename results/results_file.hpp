#pragma once
// One results file per run, never seen half-written: it is created under a temporary name beside
// its final one (FINAL.tmp-PID), and renamed to the final name only by commit(), after HDF5 has
// closed it. commit() first seals it: the root's content_checksum sums everything in the file, so
// that a reader finds a bit flipped since (on a disk, in a copy between clusters), which HDF5,
// checking none of a file's raw data, reads as a value. A file dropped without commit() (an error, an exception) is removed; a process
// killed outright leaves only the temporary name, which no reader takes for a result.
#include <memory>
#include <string>

#include "results/h5.hpp"

namespace sb {

inline constexpr int64_t kSchemaVersion = 24;
// The first version whose checkpoints and exchange states carry a content_checksum.
inline constexpr int64_t kFirstChecksummedSchemaVersion = 13;
// The first version whose every file carries one on its root, over the whole file.
inline constexpr int64_t kFirstSealedFileSchemaVersion = 14;
// The oldest version whose groups sb-report reads: 5 to 9 only added groups and attributes.
inline constexpr int64_t kOldestReadableSchemaVersion = 4;

class ResultsFile {
 public:
  // Where the file is built: on disk as it is written, or in memory and written out whole by
  // commit(). The second is for H5Ocopy, whose error path crashes HDF5 1.10 when the disk fills
  // in the middle of a copy; in memory the copy cannot fail that way, and the one write of the
  // whole file is checked like any other.
  enum class Build { on_disk, in_memory };

  // Creates the temporary file. Throws UsageError naming the path when it cannot be created
  // (a missing folder, no permission), so that a bad --out is reported before any work is done;
  // LibraryError when the disk is at fault (full).
  // `tag` goes at the end of the temporary's name (FINAL.tmp-PID<tag>): a second file built for the
  // same final path in the same process (sb-train's epoch snapshots) must not take the first's.
  explicit ResultsFile(std::string final_path, Build build = Build::on_disk, const std::string& tag = "");
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  h5::Node& root() { return *root_; }
  const std::string& final_path() const { return final_path_; }
  const std::string& temporary_path() const { return temporary_path_; }

  // Seals the file, closes it, flushes it to disk and renames it to its final name.
  void commit();
  // Closes and removes the temporary file.
  void discard();

 private:
  std::string final_path_;
  std::string temporary_path_;
  Build build_;
  h5::Handle file_;
  std::unique_ptr<h5::Node> root_;
};

// A committed results file, opened read-only. Throws UsageError for a path that is not a
// complete scalebench results file (missing, not HDF5, a temporary name, no schema_version), and
// for one whose superblock or root group is damaged, which HDF5 opens but cannot read.
class ResultsReader {
 public:
  explicit ResultsReader(const std::string& path);
  const h5::Node& root() const { return *root_; }
  int64_t schema_version() const { return schema_version_; }
  // Reads the whole file and compares it with the seal its writer stored: throws UsageError for a
  // file that is damaged (HDF5 fails to read a part, or the content differs from its checksum, or a
  // file of a schema that always has one lacks it). Files from before seals were stored are only
  // read whole.
  void verify_content() const;

 private:
  std::string path_;
  h5::Handle file_;
  std::unique_ptr<h5::Node> root_;
  int64_t schema_version_ = 0;
};

}  // namespace sb

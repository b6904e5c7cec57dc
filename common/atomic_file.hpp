#pragma once
// Files that appear under their name only when whole: written under a temporary name
// (NAME.tmp-PID) and renamed, so that a program that fails part-way (a full disk, a killed
// process) leaves whole files or none, never one cut short that a reader would take as complete.
// The text and binary files the programs write (report data and scripts, profiles, machine
// descriptions, JPEGs) go through AtomicFile; results files through ResultsFile.
#include <sstream>
#include <string>
#include <string_view>

namespace sb {

// Writes `bytes` to PATH.tmp-PID, syncs it to disk when `sync` (against a power loss, not only a
// failing process), and renames it to `path`. Throws LibraryError naming `path` with the system's
// reason, leaving nothing behind.
void write_file_atomically(const std::string& path, std::string_view bytes, bool sync);

// The last step of both: syncs the closed, finished `temporary` to disk when `sync`, and renames it
// to `path`. Throws LibraryError naming `path` with the system's reason (or, where something
// other than a regular file or a link is at `path`, saying so: not_a_file_in_the_way); the
// temporary is then the caller's to remove.
void publish_finished_file(const std::string& temporary, const std::string& path, bool sync);

// "" when `path` is free or names a regular file (or a link to one), else why the finished file
// cannot go there: a folder would take the temporary file inside it (FOLDER/.tmp-PID) and fail
// only at the rename, after all the work; a device, pipe or socket (--out /dev/null) would be
// replaced by the rename, which for a process run as root deletes the device node itself.
std::string not_a_file_in_the_way(const std::string& path);

// "" when a file can be created at `path` now (tried with an empty temporary, removed at once),
// else "cannot create 'PATH': <the system's reason>". For checking an output path before any work,
// so that a bad one is bad input instead of a failure at the end.
std::string why_not_writable(const std::string& path);

// A file written piece by piece, for one too large to compose in memory (sb-report's CSV tables of
// every sample), with the same promise: PATH.tmp-PID until commit() renames it, removed if never
// committed. Each call throws LibraryError naming `path` with the system's reason.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::string_view bytes);
  void commit(bool sync);

 private:
  [[noreturn]] void fail(int error);
  std::string path_, temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

// A file composed in memory (stream()) and written by commit(): the files that go through it are
// small, and one checked write gives the exact reason when the disk refuses it.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)) {}
  std::ostream& stream() { return out_; }
  // Throws LibraryError naming the file, with the reason, when it cannot be written whole.
  void commit() { write_file_atomically(path_, out_.view(), /*sync=*/false); }

 private:
  std::string path_;
  std::ostringstream out_;
};

}  // namespace sb

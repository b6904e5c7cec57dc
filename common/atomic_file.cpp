#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/check.hpp"

namespace sb {

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), temporary_(path_ + ".tmp-" + std::to_string(::getpid())) {
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temporary_.c_str());
}

void AtomicFileWriter::fail(int error) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temporary_.c_str());
  throw LibraryError("cannot write '" + path_ + "': " + std::strerror(error));
}

void AtomicFileWriter::write(std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
}

void AtomicFileWriter::commit(bool sync) {
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(errno);  // NFS reports some write errors only here
  publish_finished_file(temporary_, path_, sync);  // on failure the destructor removes the temporary
  committed_ = true;
}

void write_file_atomically(const std::string& path, std::string_view bytes, bool sync) {
  AtomicFileWriter file(path);
  file.write(bytes);
  file.commit(sync);
}

namespace {

// Why what `status` describes at `path` may not be replaced by a finished file; "" when nothing is
// there, or a regular file, or a link (which the rename replaces, leaving its target alone).
std::string in_the_way(const std::string& path, std::filesystem::file_status status) {
  if (std::filesystem::is_directory(status)) return "cannot create '" + path + "': " + std::strerror(EISDIR);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status) &&
      !std::filesystem::is_symlink(status))
    return "will not replace '" + path + "': not a regular file (a device, a pipe or a socket)";
  return "";
}

}  // namespace

std::string not_a_file_in_the_way(const std::string& path) {
  std::error_code error;
  return in_the_way(path, std::filesystem::status(path, error));  // a link's target
}

std::string why_not_writable(const std::string& path) {
  if (std::string in_the_way = not_a_file_in_the_way(path); !in_the_way.empty()) return in_the_way;
  const std::string probe = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create '" + path + "': " + std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

void publish_finished_file(const std::string& temporary, const std::string& path, bool sync) {
  if (sync) {  // so that the rename publishes data that is on disk, not only in the page cache
    const int fd = ::open(temporary.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw LibraryError("cannot reopen the finished '" + path + "': " + std::strerror(errno));
    const int rc = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (rc != 0) throw LibraryError("cannot flush to disk '" + path + "': " + std::strerror(error));
  }
  // Checked again here, for the writers that checked nothing before their work: a rename over a
  // device node (as root) would delete it.
  std::error_code error;
  if (std::string why = in_the_way(path, std::filesystem::symlink_status(path, error)); !why.empty())
    throw LibraryError(why);
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw LibraryError("cannot rename the finished '" + path + "': " + std::strerror(errno));
}

}  // namespace sb

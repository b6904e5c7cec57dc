#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/check.hpp"

namespace sb {

void write_file_atomically(const std::string& path, std::string_view bytes, bool sync) {
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  const auto fail = [&](int error) {
    ::unlink(temporary.c_str());
    throw LibraryError("cannot write '" + path + "': " + std::strerror(error));
  };
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      ::close(fd);
      fail(error);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) fail(errno);  // NFS reports some write errors only here
  try {
    publish_finished_file(temporary, path, sync);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
}

std::string folder_in_the_way(const std::string& path) {
  return std::filesystem::is_directory(path) ? "cannot create '" + path + "': " + std::strerror(EISDIR) : "";
}

std::string why_not_writable(const std::string& path) {
  if (std::string folder = folder_in_the_way(path); !folder.empty()) return folder;
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
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw LibraryError("cannot rename the finished '" + path + "': " + std::strerror(errno));
}

}  // namespace sb

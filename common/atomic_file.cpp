#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/check.hpp"

namespace sb {

void write_file_atomically(const std::string& path, std::string_view bytes, bool sync) {
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  const auto fail = [&](const std::string& what, int error) {
    ::unlink(temporary.c_str());
    throw LibraryError(what + " '" + path + "': " + std::strerror(error));
  };
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      ::close(fd);
      fail("cannot write", error);
    }
    done += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    fail("cannot flush to disk", error);
  }
  if (::close(fd) != 0) fail("cannot write", errno);  // NFS reports some write errors only here
  if (std::rename(temporary.c_str(), path.c_str()) != 0) fail("cannot rename the finished", errno);
}

}  // namespace sb

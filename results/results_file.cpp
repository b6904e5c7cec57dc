#include "results/results_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "common/atomic_file.hpp"
#include "common/check.hpp"
#include "common/usage_error.hpp"
#include "results/checksummed_group.hpp"

namespace sb {

ResultsFile::ResultsFile(std::string final_path, Build build, const std::string& tag)
    : final_path_(std::move(final_path)),
      temporary_path_(final_path_ + ".tmp-" + std::to_string(::getpid()) + tag),
      build_(build) {
  // In memory, commit() writes through write_file_atomically's own temporary, FINAL.tmp-PID.
  SB_CHECK(build == Build::on_disk || tag.empty(), "a tagged temporary is for files built on disk");
  h5::silence_error_stack();
  if (const std::string in_the_way = not_a_file_in_the_way(final_path_); !in_the_way.empty())
    throw UsageError(in_the_way);
  // Try the plain open first: it tells a bad path (bad input) from a full disk (a fault).
  const int fd = ::open(temporary_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    const int saved = errno;
    const std::string why = "cannot create '" + final_path_ + "': " + std::strerror(saved);
    if (saved == ENOSPC || saved == EDQUOT || saved == EIO) throw LibraryError(why);
    throw UsageError(why);
  }
  ::close(fd);
  h5::Handle access(SB_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
  if (build_ == Build::in_memory) SB_H5_CHECK(H5Pset_fapl_core(access.get(), 1 << 20, /*backing_store=*/false));
  const hid_t id = H5Fcreate(temporary_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get());
  if (id < 0) {
    // The path took a file, so what failed is writing to it (a full disk): a fault.
    const std::string reason = hdf5_current_reason();
    ::unlink(temporary_path_.c_str());
    throw LibraryError("cannot create '" + final_path_ + "': HDF5: " + reason);
  }
  file_ = h5::Handle(id, H5Fclose);
  root_ = std::make_unique<h5::Node>(
      h5::Handle(SB_H5_CHECK(H5Gopen2(id, "/", H5P_DEFAULT)), H5Gclose));
  root_->set_attr("schema_version", kSchemaVersion);
}

ResultsFile::~ResultsFile() {
  if (file_) discard();
}

void ResultsFile::commit() {
  h5::seal_everything(*root_);  // on failure the destructor discards the file
  root_.reset();
  SB_H5_CHECK(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));  // on failure the destructor discards it
  try {
    if (build_ == Build::in_memory) {
      std::string image(static_cast<size_t>(SB_H5_CHECK(H5Fget_file_image(file_.get(), nullptr, 0))), '\0');
      SB_H5_CHECK(H5Fget_file_image(file_.get(), image.data(), image.size()));
      file_ = h5::Handle();
      write_file_atomically(final_path_, image, /*sync=*/true);  // through temporary_path_, the same name
      return;
    }
    file_ = h5::Handle();  // closes the file
    publish_finished_file(temporary_path_, final_path_, /*sync=*/true);
  } catch (...) {
    file_ = h5::Handle();
    ::unlink(temporary_path_.c_str());  // never a partial file left under either name
    throw;
  }
}

void ResultsFile::discard() {
  root_.reset();
  file_ = h5::Handle();
  ::unlink(temporary_path_.c_str());
}

ResultsReader::ResultsReader(const std::string& path) : path_(path) {
  h5::silence_error_stack();
  if (path.find(".tmp-") != std::string::npos)
    throw UsageError("'" + path + "' is a temporary file of an unfinished run, not a result");
  if (::access(path.c_str(), R_OK) != 0)
    throw UsageError("cannot read '" + path + "': " + std::strerror(errno));
  if (H5Fis_hdf5(path.c_str()) <= 0) throw UsageError("'" + path + "' is not an HDF5 file");
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) throw UsageError("HDF5 cannot open '" + path + "' (truncated or damaged)");
  file_ = h5::Handle(id, H5Fclose);
  // A flipped byte in the superblock or the root group's header opens, then fails here (or at the
  // first read of the root); a caller that reads on would report it as a fault, not as bad input.
  try {
    root_ = std::make_unique<h5::Node>(h5::Handle(SB_H5_CHECK(H5Gopen2(id, "/", H5P_DEFAULT)), H5Gclose));
    if (!root_->has_attr("schema_version"))
      throw UsageError("'" + path + "' is not a scalebench results file (no schema_version)");
    schema_version_ = root_->attr_int("schema_version");
  } catch (const LibraryError& e) {
    throw UsageError("'" + path + "' is damaged: " + e.what());
  }
}

void ResultsReader::verify_content() const {
  std::string damage;
  try {
    damage = h5::verify_everything_sealed(*root_, schema_version_ >= kFirstSealedFileSchemaVersion);
  } catch (const LibraryError& e) {
    damage = e.what();
  }
  if (!damage.empty()) throw UsageError("'" + path_ + "' is damaged: " + damage);
}

}  // namespace sb

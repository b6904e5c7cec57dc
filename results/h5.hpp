#pragma once
// A small RAII layer over the HDF5 C API: handles that close themselves, and the few ways this
// project writes and reads attributes and datasets. Every call is checked (SB_H5_CHECK).
#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/content_checksum.hpp"

namespace sb::h5 {

// The HDF5 library we link is built without thread safety (Debian's reports "Threadsafety: no"),
// so a program that calls it from two threads holds this lock around each use: sb-train, whose
// training thread writes checkpoints while the watchdog's fault handler may save the results.
std::timed_mutex& library_lock();

// An owned hid_t, closed with the matching H5*close when it goes.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& other) noexcept { *this = std::move(other); }
  Handle& operator=(Handle&& other) noexcept {
    std::swap(id_, other.id_);
    std::swap(closer_, other.closer_);
    return *this;
  }
  ~Handle() {
    if (id_ >= 0 && closer_) closer_(id_);
  }
  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// What an attribute or a dataset holds: its elements' kind and its shape.
enum class ValueKind { integer, floating, string, other };

struct ValueShape {
  ValueKind kind = ValueKind::other;
  std::vector<hsize_t> dims;  // empty for a scalar
};

// A group (or a file's root group) to write into and read from.
class Node {
 public:
  explicit Node(Handle handle) : handle_(std::move(handle)) {}
  hid_t id() const { return handle_.get(); }

  Node create_group(const std::string& name) const;
  Node open_group(const std::string& path) const;
  bool has(const std::string& name) const;
  // Names of the links (groups and datasets) directly below, in name order.
  std::vector<std::string> children() const;

  void set_attr(const std::string& name, const std::string& value) const;
  void set_attr(const std::string& name, const char* value) const { set_attr(name, std::string(value)); }
  void set_attr(const std::string& name, int64_t value) const;
  void set_attr(const std::string& name, double value) const;
  void set_attr(const std::string& name, const std::vector<std::string>& values) const;
  bool has_attr(const std::string& name) const;
  std::vector<std::string> attr_names() const;
  std::string attr_string(const std::string& name) const;
  int64_t attr_int(const std::string& name) const;
  double attr_double(const std::string& name) const;
  std::vector<std::string> attr_strings(const std::string& name) const;

  // Datasets of doubles, int64 or uint64 with the given shape (row-major; empty dims = 1-D).
  void write(const std::string& name, const std::vector<double>& data,
             std::vector<hsize_t> dims = {}) const;
  void write(const std::string& name, const std::vector<int64_t>& data,
             std::vector<hsize_t> dims = {}) const;
  void write(const std::string& name, const std::vector<uint64_t>& data,
             std::vector<hsize_t> dims = {}) const;
  void write(const std::string& name, const std::vector<float>& data, std::vector<hsize_t> dims = {}) const;
  // Reads a numeric dataset of any stored type, converted by HDF5.
  std::vector<float> read_floats(const std::string& name, std::vector<hsize_t>* dims = nullptr) const;
  std::vector<double> read_doubles(const std::string& name, std::vector<hsize_t>* dims = nullptr) const;
  std::vector<int64_t> read_ints(const std::string& name, std::vector<hsize_t>* dims = nullptr) const;

  // What a value holds, for a reader that walks a file by what it finds (sb-report's CSV tables):
  // its element kind and its shape (empty: a scalar).
  ValueShape attr_shape(const std::string& name) const;
  ValueShape dataset_shape(const std::string& name) const;
  // Whether the child `name` is a group (not a dataset).
  bool is_group(const std::string& name) const;

  // Reads every group, attribute and dataset at and below this group, and adds each to `sum` under
  // its path below this group, its kind, element type and shape, so that the same bytes under
  // another name, type or shape do not match. Values are summed as read, not as laid out on disk:
  // a copy repacked by h5repack (chunked, compressed) sums the same. This group's own attribute `skip` is left
  // out (where the sum itself is kept). A damaged file (a flipped byte in a heap or an object
  // header, a cut-short dataset) fails here, once, where the caller can name the file, rather than
  // halfway through using it. Throws LibraryError.
  void sum_content(ContentChecksum& sum, std::string_view skip = {}) const;

 private:
  Handle handle_;
};

// Turns HDF5's automatic error-stack printing off for this process: failures are reported once,
// through SB_H5_CHECK or the caller's own message.
void silence_error_stack();

}  // namespace sb::h5

#pragma once
// A group whose every attribute and dataset, as written or as read, is added to one
// ContentChecksum under its path below the group it started from (`parameters/conv1.weight`).
// A writer stores the sum beside the content (seal); a reader that read the same pieces compares
// its own sum with the stored one (verify_seal), so that damage HDF5 cannot see (a bit flipped in
// a value) is found. Only what goes through this class is covered: a reader must read every
// piece the writer wrote, or the sums differ.
#include <string>
#include <utility>
#include <vector>

#include "common/content_checksum.hpp"
#include "results/h5.hpp"

namespace sb::h5 {

class ChecksummedGroup {
 public:
  ChecksummedGroup(Node node, ContentChecksum& sum, std::string path = "")
      : node_(std::move(node)), sum_(&sum), path_(std::move(path)) {}

  ChecksummedGroup create_group(const std::string& name) const;
  ChecksummedGroup open_group(const std::string& name) const;
  // The group itself, for what is not summed: its children's names, the sum's own attribute.
  const Node& node() const { return node_; }
  bool has(const std::string& name) const { return node_.has(name); }
  bool has_attr(const std::string& name) const { return node_.has_attr(name); }

  void set_attr(const std::string& name, const std::string& value) const;
  void set_attr(const std::string& name, int64_t value) const;
  void set_attr(const std::string& name, double value) const;
  std::string attr_string(const std::string& name) const;
  int64_t attr_int(const std::string& name) const;
  double attr_double(const std::string& name) const;

  void write(const std::string& name, const std::vector<float>& data, std::vector<hsize_t> dims = {}) const;
  void write(const std::string& name, const std::vector<double>& data) const;
  std::vector<float> read_floats(const std::string& name, std::vector<hsize_t>* dims = nullptr) const;
  std::vector<double> read_doubles(const std::string& name) const;

 private:
  std::string below(const std::string& name) const { return path_.empty() ? name : path_ + "/" + name; }

  Node node_;
  ContentChecksum* sum_;
  std::string path_;
};

// The attribute that holds a writer's sum, as 16 hex digits.
inline constexpr const char* kContentChecksumAttr = "content_checksum";

// Stores `sum` on `node` (after everything it covers was written).
void seal(const Node& node, const ContentChecksum& sum);
// Compares the sum stored on `node` with `sum`, what its reader read: "" when they agree, otherwise
// what is wrong. A file without a sum is accepted unless `required` (a file of a schema version
// that always stores one, whose sum's name was itself damaged).
std::string verify_seal(const Node& node, const ContentChecksum& sum, bool required);

// A whole file's seal: the sum of everything at and below `root` (Node::sum_content),
// read back from the file, so it covers what any writer put there without going through this
// class. Stored on `root` when the file is complete; verified by reading the whole file again.
void seal_everything(const Node& root);
std::string verify_everything_sealed(const Node& root, bool required);

}  // namespace sb::h5

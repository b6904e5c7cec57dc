#include "results/checksummed_group.hpp"

namespace sb::h5 {

ChecksummedGroup ChecksummedGroup::create_group(const std::string& name) const {
  return ChecksummedGroup(node_.create_group(name), *sum_, below(name));
}

ChecksummedGroup ChecksummedGroup::open_group(const std::string& name) const {
  return ChecksummedGroup(node_.open_group(name), *sum_, below(name));
}

// Each value is summed as its type's bytes, so an attribute read back as another type (an int
// read as a double) does not match: the reader reads what the writer wrote.
void ChecksummedGroup::set_attr(const std::string& name, const std::string& value) const {
  node_.set_attr(name, value);
  sum_->add_text(below(name), value);
}

void ChecksummedGroup::set_attr(const std::string& name, int64_t value) const {
  node_.set_attr(name, value);
  sum_->add_int(below(name), value);
}

void ChecksummedGroup::set_attr(const std::string& name, double value) const {
  node_.set_attr(name, value);
  sum_->add_double(below(name), value);
}

std::string ChecksummedGroup::attr_string(const std::string& name) const {
  std::string value = node_.attr_string(name);
  sum_->add_text(below(name), value);
  return value;
}

int64_t ChecksummedGroup::attr_int(const std::string& name) const {
  const int64_t value = node_.attr_int(name);
  sum_->add_int(below(name), value);
  return value;
}

double ChecksummedGroup::attr_double(const std::string& name) const {
  const double value = node_.attr_double(name);
  sum_->add_double(below(name), value);
  return value;
}

void ChecksummedGroup::write(const std::string& name, const std::vector<float>& data, std::vector<hsize_t> dims) const {
  node_.write(name, data, std::move(dims));
  sum_->add_array(below(name), data);
}

void ChecksummedGroup::write(const std::string& name, const std::vector<double>& data) const {
  node_.write(name, data);
  sum_->add_array(below(name), data);
}

std::vector<float> ChecksummedGroup::read_floats(const std::string& name, std::vector<hsize_t>* dims) const {
  std::vector<float> data = node_.read_floats(name, dims);
  sum_->add_array(below(name), data);
  return data;
}

std::vector<double> ChecksummedGroup::read_doubles(const std::string& name) const {
  std::vector<double> data = node_.read_doubles(name);
  sum_->add_array(below(name), data);
  return data;
}

void seal(const Node& node, const ContentChecksum& sum) { node.set_attr(kContentChecksumAttr, sum.hex()); }

std::string verify_seal(const Node& node, const ContentChecksum& sum, bool required) {
  if (!node.has_attr(kContentChecksumAttr)) return required ? std::string("its checksum is missing") : "";
  const std::string stored = node.attr_string(kContentChecksumAttr);
  if (stored == sum.hex()) return "";
  return "its content does not match its checksum (stored " + stored + ", read " + sum.hex() + ")";
}

namespace {
ContentChecksum sum_of_everything(const Node& root) {
  ContentChecksum sum;
  root.sum_content(sum, kContentChecksumAttr);
  return sum;
}
}  // namespace

void seal_everything(const Node& root) { seal(root, sum_of_everything(root)); }

std::string verify_everything_sealed(const Node& root, bool required) {
  return verify_seal(root, sum_of_everything(root), required);
}

}  // namespace sb::h5

#include "results/h5.hpp"

#include <algorithm>
#include <limits>

#include "common/check.hpp"

namespace sb::h5 {
namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw LibraryError(message);
}

Handle string_type(size_t length) {
  // Fixed-length UTF-8 strings, NUL-padded: readable by h5dump, h5py and every HDF5 version.
  Handle type(SB_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  SB_H5_CHECK(H5Tset_size(type.get(), length > 0 ? length : 1));
  SB_H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD));
  SB_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

Handle scalar_space() { return Handle(SB_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose); }

Handle simple_space(const std::vector<hsize_t>& dims) {
  return Handle(SB_H5_CHECK(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)),
                H5Sclose);
}

void replace_attr(hid_t node, const std::string& name) {
  if (SB_H5_CHECK(H5Aexists(node, name.c_str())) > 0) SB_H5_CHECK(H5Adelete(node, name.c_str()));
}

void write_attr(hid_t node, const std::string& name, hid_t type, hid_t space, const void* data) {
  replace_attr(node, name);
  Handle attr(SB_H5_CHECK(H5Acreate2(node, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT)),
              H5Aclose);
  SB_H5_CHECK(H5Awrite(attr.get(), type, data));
}

template <class T>
void write_dataset(hid_t node, const std::string& name, hid_t type, const std::vector<T>& data,
                   std::vector<hsize_t> dims) {
  if (dims.empty()) dims = {data.size()};
  hsize_t total = 1;
  for (hsize_t d : dims) total *= d;
  require(total == data.size(), "dataset '" + name + "': shape does not match its data");
  Handle space = simple_space(dims);
  Handle set(SB_H5_CHECK(H5Dcreate2(node, name.c_str(), type, space.get(), H5P_DEFAULT,
                                    H5P_DEFAULT, H5P_DEFAULT)),
             H5Dclose);
  if (total > 0) SB_H5_CHECK(H5Dwrite(set.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()));
}

// The most elements a dataset's stored bytes hold. Contiguous and compact data is stored as it is;
// chunked data (a file repacked by h5repack, compressed or not) holds at most its written chunks'
// elements, whatever they were compressed to. A compressed file had been refused as damaged.
hsize_t elements_stored(hid_t set, size_t element) {
  Handle create(SB_H5_CHECK(H5Dget_create_plist(set)), H5Pclose);
  if (H5Pget_layout(create.get()) != H5D_CHUNKED) return H5Dget_storage_size(set) / element;
  hsize_t chunk[H5S_MAX_RANK];
  const int rank = SB_H5_CHECK(H5Pget_chunk(create.get(), H5S_MAX_RANK, chunk));
  hsize_t chunks = 0;
  Handle space(SB_H5_CHECK(H5Dget_space(set)), H5Sclose);
  SB_H5_CHECK(H5Dget_num_chunks(set, space.get(), &chunks));
  hsize_t most = chunks;
  for (int d = 0; d < rank; ++d)  // saturating: a damaged chunk shape must not wrap to a small bound
    most = chunk[d] != 0 && most > std::numeric_limits<hsize_t>::max() / chunk[d] ? std::numeric_limits<hsize_t>::max()
                                                                                     : most * chunk[d];
  return most;
}

// Damage found before allocating for it: a shape (`count` elements) claiming more than the file
// holds (`most`, from elements_stored or an attribute's stored bytes).
void require_held(hsize_t count, hsize_t most, const std::string& what) {
  require(count <= most, what + ": its shape claims more elements than the file holds (a damaged file)");
}

template <class T>
std::vector<T> read_dataset(hid_t node, const std::string& name, hid_t type,
                            std::vector<hsize_t>* dims_out) {
  Handle set(SB_H5_CHECK(H5Dopen2(node, name.c_str(), H5P_DEFAULT)), H5Dclose);
  Handle space(SB_H5_CHECK(H5Dget_space(set.get())), H5Sclose);
  const int rank = SB_H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  SB_H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  hsize_t total = 1;
  for (hsize_t d : dims) total *= d;
  // Every dataset here is written whole, so its elements are all in the file: a shape that claims
  // more than the file holds is damage, found before allocating for it.
  Handle stored(SB_H5_CHECK(H5Dget_type(set.get())), H5Tclose);
  const size_t element = H5Tget_size(stored.get());
  require(element > 0, "dataset '" + name + "': its elements have no size (a damaged file)");
  require_held(total, elements_stored(set.get(), element), "dataset '" + name + "'");
  std::vector<T> data(total);
  if (total > 0) SB_H5_CHECK(H5Dread(set.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()));
  if (dims_out) *dims_out = dims;
  return data;
}

Handle open_attr(hid_t node, const std::string& name) {
  return Handle(SB_H5_CHECK(H5Aopen(node, name.c_str(), H5P_DEFAULT)), H5Aclose);
}

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

herr_t collect_object_type(hid_t node, const char* name, const H5L_info_t*, void* out) {
  H5O_info_t info;
  if (H5Oget_info_by_name2(node, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return -1;
  static_cast<std::vector<std::pair<std::string, H5O_type_t>>*>(out)->emplace_back(name, info.type);
  return 0;
}

herr_t collect_attr_name(hid_t, const char* name, const H5A_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

// Deeper than any file scalebench writes (a merged campaign's deepest groups are eight down,
// /runs/<program>/<ranks>/<labels>/<run>/allreduce/<impl>/out_of_place): a damaged link that
// points back up would otherwise recurse until the stack ran out.
constexpr int kDeepestGroup = 32;

// The memory type a stored element is read as. Only what scalebench writes is accepted: integers,
// floats and fixed-length strings, whose bytes in memory are the values (variable-length data would
// be read as pointers).
Handle memory_type(hid_t stored, const std::string& what) {
  const H5T_class_t kind = H5Tget_class(stored);
  require(kind == H5T_INTEGER || kind == H5T_FLOAT || (kind == H5T_STRING && H5Tis_variable_str(stored) == 0),
          what + " is of a type scalebench does not write");
  return Handle(SB_H5_CHECK(H5Tget_native_type(stored, H5T_DIR_ASCEND)), H5Tclose);
}

// How a piece is named in the sum: its path, a NUL (which no HDF5 name holds), its kind ('G' group,
// 'A' attribute, 'D' dataset) and, for values, the element's class and size and the shape.
std::string piece_name(const std::string& path, char kind, hid_t type = -1, hid_t space = -1) {
  std::string name = path + '\0' + kind;
  if (type < 0) return name;
  name += 'c' + std::to_string(H5Tget_class(type)) + 's' + std::to_string(H5Tget_size(type)) + '[';
  const int rank = SB_H5_CHECK(H5Sget_simple_extent_ndims(space));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  SB_H5_CHECK(H5Sget_simple_extent_dims(space, dims.data(), nullptr));
  for (hsize_t d : dims) name += std::to_string(d) + ',';
  return name + ']';
}

// A memory type's element size, at least 1: a damaged type of size 0 must not divide the bounds
// below by zero.
size_t element_bytes(hid_t type) { return std::max<size_t>(H5Tget_size(type), 1); }

// The bytes of `count` elements of `type`, after checking that the file holds that many (`most`
// elements): a damaged shape claiming more is found before allocating for it.
std::vector<std::byte> buffer_for(hid_t space, hid_t type, hsize_t most, const std::string& what) {
  const hssize_t count = SB_H5_CHECK(H5Sget_simple_extent_npoints(space));
  require_held(static_cast<hsize_t>(count), most, what);
  return std::vector<std::byte>(static_cast<size_t>(count) * H5Tget_size(type));
}

void sum_attribute(hid_t node, const std::string& path, const std::string& name, ContentChecksum& sum) {
  const std::string what = "attribute '" + path + (path.empty() ? "" : "/") + name + "'";
  Handle attr = open_attr(node, name);
  Handle stored(SB_H5_CHECK(H5Aget_type(attr.get())), H5Tclose);
  Handle type = memory_type(stored.get(), what);
  Handle space(SB_H5_CHECK(H5Aget_space(attr.get())), H5Sclose);
  // The native type of a stored integer, float or fixed-length string has the stored element's
  // size, so the bytes stored bound the count as they do a dataset's.
  std::vector<std::byte> bytes =
      buffer_for(space.get(), type.get(), H5Aget_storage_size(attr.get()) / element_bytes(type.get()), what);
  if (!bytes.empty()) SB_H5_CHECK(H5Aread(attr.get(), type.get(), bytes.data()));
  sum.add_bytes(piece_name(path, 'A', type.get(), space.get()) + name, bytes);
}

void sum_dataset(hid_t node, const std::string& path, const std::string& name, ContentChecksum& sum) {
  const std::string what = "dataset '" + path + "'";
  Handle set(SB_H5_CHECK(H5Dopen2(node, name.c_str(), H5P_DEFAULT)), H5Dclose);
  Handle stored(SB_H5_CHECK(H5Dget_type(set.get())), H5Tclose);
  Handle type = memory_type(stored.get(), what);
  Handle space(SB_H5_CHECK(H5Dget_space(set.get())), H5Sclose);
  // Every dataset here is written whole, so all its elements are in the file.
  std::vector<std::byte> bytes =
      buffer_for(space.get(), type.get(), elements_stored(set.get(), element_bytes(type.get())), what);
  if (!bytes.empty()) SB_H5_CHECK(H5Dread(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()));
  sum.add_bytes(piece_name(path, 'D', type.get(), space.get()), bytes);
}

void sum_group(const Node& group, const std::string& path, ContentChecksum& sum, std::string_view skip, int depth) {
  require(depth <= kDeepestGroup, "groups nested more than " + std::to_string(kDeepestGroup) + " deep (a damaged file)");
  sum.add_bytes(piece_name(path, 'G'), {});
  for (const std::string& name : group.attr_names())
    if (name != skip) sum_attribute(group.id(), path, name, sum);
  std::vector<std::pair<std::string, H5O_type_t>> objects;
  hsize_t index = 0;
  SB_H5_CHECK(H5Literate(group.id(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_object_type, &objects));
  for (const auto& [name, type] : objects) {
    const std::string below = path.empty() ? name : path + "/" + name;
    if (type == H5O_TYPE_GROUP) sum_group(group.open_group(name), below, sum, {}, depth + 1);
    else if (type == H5O_TYPE_DATASET) sum_dataset(group.id(), below, name, sum);
    else throw LibraryError("'" + below + "' is neither a group nor a dataset");
  }
}

// HDF5 closes the files still open at exit, from an atexit handler. A file whose close failed (a
// full disk: the flush on close could not write) is left half-closed, and that handler then
// crashes on it (seen with 1.10.8), turning a clean "cannot write" into a segfault. Every file
// here is closed, or deliberately dropped, before exit, so the handler has nothing to do: HDF5 is
// told not to install it, before its first call.
const bool kNoHdf5AtExit = [] {
  H5dont_atexit();
  return true;
}();

}  // namespace

std::timed_mutex& library_lock() {
  static std::timed_mutex lock;
  return lock;
}

void silence_error_stack() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

Node Node::create_group(const std::string& name) const {
  return Node(Handle(SB_H5_CHECK(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT,
                                            H5P_DEFAULT)),
                     H5Gclose));
}

Node Node::open_group(const std::string& path) const {
  return Node(Handle(SB_H5_CHECK(H5Gopen2(id(), path.c_str(), H5P_DEFAULT)), H5Gclose));
}

bool Node::has(const std::string& name) const {
  return SB_H5_CHECK(H5Lexists(id(), name.c_str(), H5P_DEFAULT)) > 0;
}

std::vector<std::string> Node::children() const {
  std::vector<std::string> names;
  hsize_t index = 0;
  SB_H5_CHECK(H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_name, &names));
  return names;
}

namespace {
ValueShape shape_of(hid_t type, hid_t space) {
  ValueShape shape;
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: shape.kind = ValueKind::integer; break;
    case H5T_FLOAT: shape.kind = ValueKind::floating; break;
    case H5T_STRING: shape.kind = H5Tis_variable_str(type) == 0 ? ValueKind::string : ValueKind::other; break;
    default: shape.kind = ValueKind::other;
  }
  const int rank = SB_H5_CHECK(H5Sget_simple_extent_ndims(space));
  shape.dims.resize(static_cast<size_t>(rank));
  SB_H5_CHECK(H5Sget_simple_extent_dims(space, shape.dims.data(), nullptr));
  return shape;
}
}  // namespace

ValueShape Node::attr_shape(const std::string& name) const {
  Handle attr = open_attr(id(), name);
  Handle type(SB_H5_CHECK(H5Aget_type(attr.get())), H5Tclose);
  Handle space(SB_H5_CHECK(H5Aget_space(attr.get())), H5Sclose);
  return shape_of(type.get(), space.get());
}

ValueShape Node::dataset_shape(const std::string& name) const {
  Handle set(SB_H5_CHECK(H5Dopen2(id(), name.c_str(), H5P_DEFAULT)), H5Dclose);
  Handle type(SB_H5_CHECK(H5Dget_type(set.get())), H5Tclose);
  Handle space(SB_H5_CHECK(H5Dget_space(set.get())), H5Sclose);
  return shape_of(type.get(), space.get());
}

bool Node::is_group(const std::string& name) const {
  H5O_info_t info;
  SB_H5_CHECK(H5Oget_info_by_name2(id(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT));
  return info.type == H5O_TYPE_GROUP;
}

void Node::sum_content(ContentChecksum& sum, std::string_view skip) const { sum_group(*this, "", sum, skip, 0); }

void Node::set_attr(const std::string& name, const std::string& value) const {
  Handle type = string_type(value.size());
  write_attr(id(), name, type.get(), scalar_space().get(), value.data());
}

void Node::set_attr(const std::string& name, int64_t value) const {
  write_attr(id(), name, H5T_NATIVE_INT64, scalar_space().get(), &value);
}

void Node::set_attr(const std::string& name, double value) const {
  write_attr(id(), name, H5T_NATIVE_DOUBLE, scalar_space().get(), &value);
}

void Node::set_attr(const std::string& name, const std::vector<std::string>& values) const {
  size_t width = 1;
  for (const std::string& v : values) width = std::max(width, v.size());
  std::string packed(width * values.size(), '\0');
  for (size_t i = 0; i < values.size(); ++i) packed.replace(i * width, values[i].size(), values[i]);
  Handle type = string_type(width);
  Handle space = simple_space({values.size()});
  write_attr(id(), name, type.get(), space.get(), packed.data());
}

bool Node::has_attr(const std::string& name) const {
  return SB_H5_CHECK(H5Aexists(id(), name.c_str())) > 0;
}

std::vector<std::string> Node::attr_names() const {
  std::vector<std::string> names;
  hsize_t index = 0;
  SB_H5_CHECK(H5Aiterate2(id(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_attr_name, &names));
  return names;
}

std::string Node::attr_string(const std::string& name) const {
  std::vector<std::string> values = attr_strings(name);
  return values.empty() ? std::string() : values.front();
}

std::vector<std::string> Node::attr_strings(const std::string& name) const {
  Handle attr = open_attr(id(), name);
  Handle stored(SB_H5_CHECK(H5Aget_type(attr.get())), H5Tclose);
  require(H5Tget_class(stored.get()) == H5T_STRING, "attribute '" + name + "' is not a string");
  require(H5Tis_variable_str(stored.get()) == 0, "attribute '" + name + "' is a variable-length string");
  const size_t width = H5Tget_size(stored.get());
  Handle space(SB_H5_CHECK(H5Aget_space(attr.get())), H5Sclose);
  const hssize_t count = SB_H5_CHECK(H5Sget_simple_extent_npoints(space.get()));
  std::string packed(width * static_cast<size_t>(count), '\0');
  Handle type = string_type(width);
  SB_H5_CHECK(H5Aread(attr.get(), type.get(), packed.data()));
  std::vector<std::string> values;
  for (hssize_t i = 0; i < count; ++i) {
    std::string value = packed.substr(static_cast<size_t>(i) * width, width);
    values.push_back(value.substr(0, value.find('\0')));
  }
  return values;
}

int64_t Node::attr_int(const std::string& name) const {
  int64_t value = 0;
  SB_H5_CHECK(H5Aread(open_attr(id(), name).get(), H5T_NATIVE_INT64, &value));
  return value;
}

double Node::attr_double(const std::string& name) const {
  double value = 0;
  SB_H5_CHECK(H5Aread(open_attr(id(), name).get(), H5T_NATIVE_DOUBLE, &value));
  return value;
}

void Node::write(const std::string& name, const std::vector<float>& data, std::vector<hsize_t> dims) const {
  write_dataset(id(), name, H5T_NATIVE_FLOAT, data, std::move(dims));
}

std::vector<float> Node::read_floats(const std::string& name, std::vector<hsize_t>* dims) const {
  return read_dataset<float>(id(), name, H5T_NATIVE_FLOAT, dims);
}

void Node::write(const std::string& name, const std::vector<double>& data,
                 std::vector<hsize_t> dims) const {
  write_dataset(id(), name, H5T_NATIVE_DOUBLE, data, std::move(dims));
}
void Node::write(const std::string& name, const std::vector<int64_t>& data,
                 std::vector<hsize_t> dims) const {
  write_dataset(id(), name, H5T_NATIVE_INT64, data, std::move(dims));
}
void Node::write(const std::string& name, const std::vector<uint64_t>& data,
                 std::vector<hsize_t> dims) const {
  write_dataset(id(), name, H5T_NATIVE_UINT64, data, std::move(dims));
}

std::vector<double> Node::read_doubles(const std::string& name, std::vector<hsize_t>* dims) const {
  return read_dataset<double>(id(), name, H5T_NATIVE_DOUBLE, dims);
}
std::vector<int64_t> Node::read_ints(const std::string& name, std::vector<hsize_t>* dims) const {
  return read_dataset<int64_t>(id(), name, H5T_NATIVE_INT64, dims);
}

}  // namespace sb::h5

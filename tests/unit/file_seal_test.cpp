// The whole-file seal: every committed results file carries a content_checksum on its root over
// everything in it, and a reader that reads the file whole finds a value changed since, which HDF5
// itself reads without complaint. What the sum sees (names, kinds, types, shapes) is tested on two
// files built side by side that differ in one way each.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "common/check.hpp"
#include "common/usage_error.hpp"
#include "results/checksummed_group.hpp"
#include "results/results_file.hpp"
#include "tests/unit/temp_dir.hpp"

namespace sb {
namespace {

class FileSeal : public testing::TempDirTest {
 protected:
  // A small run: root attributes of each kind, a labels group, datasets of each type.
  void write_run(const std::string& name) {
    ResultsFile out(path(name));
    const h5::Node& root = out.root();
    root.set_attr("program", "sb-allreduce");
    root.set_attr("ranks", int64_t{4});
    root.set_attr("hosts", std::vector<std::string>{"node-a", "node-b"});
    root.create_group("labels").set_attr("interconnect", "infiniband-hdr");
    const h5::Node impl = root.create_group("allreduce").create_group("ring@mpi");
    impl.write("size_bytes", std::vector<uint64_t>{1024, 4096});
    impl.set_attr("memcpy_GBps", 37.203125);
    impl.create_group("out_of_place").write("busbw_GBps", std::vector<double>{1.2345678901234567, 9.875});
    out.commit();
  }

  std::string read_bytes(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  // Flips the lowest bit of the one place the file stores `pattern`.
  void flip_stored(const std::string& name, const std::string& pattern) {
    std::string bytes = read_bytes(name);
    const size_t at = bytes.find(pattern);
    ASSERT_NE(at, std::string::npos);
    ASSERT_EQ(bytes.find(pattern, at + 1), std::string::npos) << "stored more than once";
    bytes[at] = static_cast<char>(bytes[at] ^ 1);
    std::ofstream(path(name), std::ios::binary | std::ios::trunc) << bytes;
  }

  // What verify_content() says of the file: "" when it accepts it.
  std::string refusal(const std::string& name) const {
    try {
      ResultsReader(path(name)).verify_content();
      return "";
    } catch (const UsageError& e) {
      return e.what();
    }
  }

  // Opens a committed file for an edit through HDF5 itself, as a tool other than ours would.
  void edit(const std::string& name, const std::function<void(hid_t root)>& change) {
    const hid_t file = H5Fopen(path(name).c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t root = H5Gopen2(file, "/", H5P_DEFAULT);
    change(root);
    H5Gclose(root);
    H5Fclose(file);
  }

  // The sum of everything in an in-memory file built by `build`.
  static std::string sum_of(const std::function<void(const h5::Node&)>& build) {
    const hid_t access = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(access, 1 << 16, /*backing_store=*/false);
    const hid_t file = H5Fcreate("sum-only.h5", H5F_ACC_TRUNC, H5P_DEFAULT, access);
    H5Pclose(access);
    std::string hex;
    {
      const h5::Node root(h5::Handle(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose));
      build(root);
      ContentChecksum sum;
      root.sum_content(sum, h5::kContentChecksumAttr);
      hex = sum.hex();
    }
    H5Fclose(file);
    return hex;
  }
};

std::string bytes_of(double value) {
  std::string bytes(sizeof value, '\0');
  std::memcpy(bytes.data(), &value, sizeof value);
  return bytes;
}

TEST_F(FileSeal, ACommittedFileIsSealedAndReadsWhole) {
  write_run("run.h5");
  const ResultsReader reader(path("run.h5"));
  EXPECT_EQ(reader.root().attr_string(h5::kContentChecksumAttr).size(), 16u);
  EXPECT_NO_THROW(reader.verify_content());
}

// HDF5 checks none of a file's raw data: each of these flips reads back as a value.
TEST_F(FileSeal, ABitFlippedInADatasetOrAnAttributeIsDamage) {
  write_run("run.h5");
  const std::string whole = read_bytes("run.h5");
  for (const std::string& stored : {bytes_of(1.2345678901234567), bytes_of(37.203125), std::string("infiniband-hdr"),
                                    std::string("node-b")}) {
    SCOPED_TRACE(stored);
    std::ofstream(path("run.h5"), std::ios::binary | std::ios::trunc) << whole;
    flip_stored("run.h5", stored);
    const ResultsReader flipped(path("run.h5"));  // HDF5 opens it as a whole file
    EXPECT_NE(refusal("run.h5").find("is damaged: its content does not match its checksum"), std::string::npos);
  }
}

// A file of the schema that always has a seal, without one, is damaged (the seal's own name was,
// or a tool other than ours edited it); one from before seals were stored is only read whole.
TEST_F(FileSeal, AMissingSealIsDamageOnlyWhereTheSchemaAlwaysHasOne) {
  write_run("run.h5");
  edit("run.h5", [](hid_t root) { EXPECT_GE(H5Adelete(root, h5::kContentChecksumAttr), 0); });
  EXPECT_NE(refusal("run.h5").find("is damaged: its checksum is missing"), std::string::npos);

  edit("run.h5", [](hid_t root) {
    const int64_t before_seals = kFirstSealedFileSchemaVersion - 1;
    const hid_t attr = H5Aopen(root, "schema_version", H5P_DEFAULT);
    EXPECT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &before_seals), 0);
    H5Aclose(attr);
  });
  EXPECT_EQ(refusal("run.h5"), "");
}

// An edit through HDF5 that leaves a well-formed file (a value rewritten, a dataset added) no
// longer matches the seal either: the sum is of the content, whichever way it changed.
TEST_F(FileSeal, AnyEditAfterTheSealIsFound) {
  write_run("run.h5");
  edit("run.h5", [](hid_t root) {
    const int64_t more = 8;
    const hid_t attr = H5Aopen(root, "ranks", H5P_DEFAULT);
    EXPECT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &more), 0);
    H5Aclose(attr);
  });
  EXPECT_NE(refusal("run.h5").find("does not match its checksum"), std::string::npos);

  write_run("run.h5");
  edit("run.h5", [](hid_t root) {
    const hid_t group = H5Gcreate2(root, "extra", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(group, 0);
    H5Gclose(group);
  });
  EXPECT_NE(refusal("run.h5").find("does not match its checksum"), std::string::npos);
}

// A compressed, chunked dataset (what h5repack -f GZIP makes of a file) holds fewer bytes than its
// elements: it had been refused as a shape claiming more than the file holds. The seal is of the
// values, so it still matches.
TEST_F(FileSeal, ACompressedDatasetReadsAndMatchesTheSeal) {
  const std::vector<double> values(1000, 0.25);  // compresses to far fewer than 8000 bytes
  {
    ResultsFile out(path("packed.h5"));
    const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t dims[] = {values.size()}, chunk[] = {100};
    ASSERT_GE(H5Pset_chunk(create, 1, chunk), 0);
    ASSERT_GE(H5Pset_deflate(create, 9), 0);
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t set = H5Dcreate2(out.root().id(), "busbw_GBps", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, create, H5P_DEFAULT);
    ASSERT_GE(set, 0);
    ASSERT_GE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    ASSERT_LT(H5Dget_storage_size(set), values.size() * sizeof(double)) << "not compressed: the test tests nothing";
    H5Dclose(set), H5Sclose(space), H5Pclose(create);
    out.commit();
  }
  EXPECT_EQ(refusal("packed.h5"), "");
  EXPECT_EQ(ResultsReader(path("packed.h5")).root().read_doubles("busbw_GBps"), values);
}

// The same bytes under another name, kind, type or shape are other content.
TEST_F(FileSeal, TheSumSeesNamesKindsTypesAndShapes) {
  const std::vector<double> six{1, 2, 3, 4, 5, 6};
  const std::string base = sum_of([&](const h5::Node& r) { r.write("x", six, {2, 3}); });
  EXPECT_EQ(base, sum_of([&](const h5::Node& r) { r.write("x", six, {2, 3}); })) << "not deterministic";
  EXPECT_NE(base, sum_of([&](const h5::Node& r) { r.write("x", six, {3, 2}); }));
  EXPECT_NE(base, sum_of([&](const h5::Node& r) { r.write("y", six, {2, 3}); }));
  EXPECT_NE(base, sum_of([&](const h5::Node& r) { r.create_group("g").write("x", six, {2, 3}); }));
  EXPECT_NE(base, sum_of([&](const h5::Node& r) {
    r.write("x", six, {2, 3});
    r.create_group("empty");
  }));
  // An int64 and a double of the same bytes.
  const std::string as_int = sum_of([](const h5::Node& r) { r.set_attr("a", int64_t{4607182418800017408}); });
  const std::string as_double = sum_of([](const h5::Node& r) { r.set_attr("a", 1.0); });
  EXPECT_NE(as_int, as_double);
  // An attribute and a dataset of the same name and values.
  EXPECT_NE(sum_of([](const h5::Node& r) { r.write("a", std::vector<double>{1.0}, {1}); }),
            sum_of([](const h5::Node& r) { r.set_attr("a", 1.0); }));
  // The attribute the seal is kept in is left out at the top only.
  const std::string plain = sum_of([](const h5::Node& r) { r.set_attr("a", 1.0); });
  EXPECT_EQ(plain, sum_of([](const h5::Node& r) {
    r.set_attr("a", 1.0);
    r.set_attr(h5::kContentChecksumAttr, "0123456789abcdef");
  }));
  EXPECT_NE(plain, sum_of([](const h5::Node& r) {
    r.set_attr("a", 1.0);
    r.create_group("g").set_attr(h5::kContentChecksumAttr, "0123456789abcdef");
  }));
}

}  // namespace
}  // namespace sb

#pragma once
// A checksum of a file's content as named pieces (its attributes and arrays), which a reader
// recomputes from what it read. HDF5 checks none of a file's raw data, and a flipped bit in a
// value is no error to it: a checkpoint whose epoch_loss_sum had become 1024.0 was resumed as if
// whole. The pieces' hashes are summed, so a reader may take them in another order than the
// writer, and any change within one 8-byte word of one piece changes the checksum (each step of
// the hash is a bijection). Not cryptographic: it finds damage, not forgery.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

class ContentChecksum {
 public:
  void add_bytes(std::string_view name, std::span<const std::byte> bytes);
  void add_text(std::string_view name, std::string_view text) { add_bytes(name, std::as_bytes(std::span(text))); }
  void add_int(std::string_view name, int64_t value) { add_bytes(name, std::as_bytes(std::span(&value, 1))); }
  void add_double(std::string_view name, double value) { add_bytes(name, std::as_bytes(std::span(&value, 1))); }
  template <class T>
  void add_array(std::string_view name, const std::vector<T>& values) {
    add_bytes(name, std::as_bytes(std::span(values)));
  }

  uint64_t value() const { return sum_; }
  // 16 lower-case hex digits: how a file stores it, as a string attribute h5dump shows legibly.
  std::string hex() const;

 private:
  uint64_t sum_ = 0;
};

// The hash of one piece, seeded; exposed for its tests.
uint64_t hash_bytes(std::span<const std::byte> bytes, uint64_t seed);

}  // namespace sb

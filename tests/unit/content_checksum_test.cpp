// ContentChecksum: any change within one word of one piece is found (each step of the hash is a
// bijection), the pieces' order is not part of it, and names are.
#include "common/content_checksum.hpp"

#include <gtest/gtest.h>

#include <span>
#include <vector>

namespace sb {
namespace {

uint64_t sum_of(const std::vector<float>& values) {
  ContentChecksum sum;
  sum.add_array("weights", values);
  return sum.value();
}

// Every single-bit flip of a 67-float array (a tail that is not a whole 32-byte block) is found.
TEST(ContentChecksum, EveryFlippedBitOfAnArrayChangesIt) {
  std::vector<float> values(67);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * static_cast<float>(i) - 0.3f;
  const uint64_t whole = sum_of(values);
  for (size_t byte = 0; byte < values.size() * sizeof(float); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<float> damaged = values;
      reinterpret_cast<unsigned char*>(damaged.data())[byte] ^= static_cast<unsigned char>(1u << bit);
      ASSERT_NE(sum_of(damaged), whole) << "byte " << byte << " bit " << bit;
    }
}

TEST(ContentChecksum, OneValueChangedInAnyPieceChangesIt) {
  ContentChecksum a, b;
  a.add_double("epoch_loss_sum", 1243.98);
  a.add_int("step", 4);
  b.add_double("epoch_loss_sum", 1024.0);  // what one flipped byte made of it in a checkpoint
  b.add_int("step", 4);
  EXPECT_NE(a.value(), b.value());
}

TEST(ContentChecksum, TheOrderOfThePiecesDoesNotMatter) {
  ContentChecksum written, read;
  written.add_text("model", "resnet20");
  written.add_int("seed", 1);
  written.add_array("conv1.weight", std::vector<float>{0.5f, -0.25f});
  read.add_array("conv1.weight", std::vector<float>{0.5f, -0.25f});
  read.add_int("seed", 1);
  read.add_text("model", "resnet20");
  EXPECT_EQ(written.value(), read.value());
  EXPECT_EQ(written.hex(), read.hex());
  EXPECT_EQ(written.hex().size(), 16u);
}

// Values swapped between two pieces, a piece renamed, a trailing zero byte, a piece left out.
TEST(ContentChecksum, NamesLengthsAndMissingPiecesCount) {
  ContentChecksum base;
  base.add_int("epoch", 3);
  base.add_int("step", 7);
  ContentChecksum swapped;
  swapped.add_int("epoch", 7);
  swapped.add_int("step", 3);
  EXPECT_NE(base.value(), swapped.value());
  ContentChecksum renamed;
  renamed.add_int("epochs", 3);
  renamed.add_int("step", 7);
  EXPECT_NE(base.value(), renamed.value());
  ContentChecksum missing;
  missing.add_int("epoch", 3);
  EXPECT_NE(base.value(), missing.value());
  const char ab[] = {'a', 'b', '\0'};
  EXPECT_NE(hash_bytes(std::as_bytes(std::span(ab, 2)), 0), hash_bytes(std::as_bytes(std::span(ab, 3)), 0));
}

}  // namespace
}  // namespace sb

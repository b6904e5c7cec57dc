// The host emulation of CUDA-graph recording (models/recording_backend.hpp) keeps the semantics
// the trainer's --cuda-graph logic is tested against: recorded ops run only on replay, read their
// tensors and host spans as they are then, refuse what a GPU capture refuses, and fail once a
// tensor they hold has been freed.
#include "models/recording_backend.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "models/reference_backend.hpp"

namespace sb::models {
namespace {

TEST(RecordingBackend, RunsRecordedOpsOnlyOnReplayOnWhatTheyHoldThen) {
  RecordingBackend backend(std::make_unique<ReferenceBackend>());
  Tensor x = backend.allocate({1, 4, 1, 1}), y = backend.allocate({1, 4, 1, 1});
  backend.write(x, std::vector<float>{1, -2, 3, -4});
  backend.relu_forward(x, y);  // not capturing: runs at once
  EXPECT_EQ(read_all(backend, y), (std::vector<float>{1, 0, 3, 0}));

  backend.begin_capture();
  backend.scale(x, 2.0f);
  backend.relu_forward(x, y);
  backend.end_capture();
  EXPECT_EQ(read_all(backend, x), (std::vector<float>{1, -2, 3, -4})) << "capturing ran an op";
  backend.replay();
  EXPECT_EQ(read_all(backend, y), (std::vector<float>{2, 0, 6, 0}));
  backend.write(x, std::vector<float>{-1, 1, -1, 1});  // a replay reads the tensors as they are now
  backend.replay();
  EXPECT_EQ(read_all(backend, y), (std::vector<float>{0, 2, 0, 2}));
}

TEST(RecordingBackend, ReadsHostSpansByAddressAtEachReplay) {
  RecordingBackend backend(std::make_unique<ReferenceBackend>());
  Tensor logits = backend.allocate({2, 3, 1, 1}), dlogits = backend.allocate({2, 3, 1, 1});
  Tensor loss = backend.allocate({1, 1, 1, 1});
  backend.write(logits, std::vector<float>{5, 0, 0, 0, 5, 0});
  std::vector<int32_t> labels = {0, 1};  // what the logits favour: a small loss
  backend.begin_capture();
  backend.softmax_cross_entropy(logits, labels, 0.0f, dlogits, loss);
  backend.end_capture();
  backend.replay();
  const double right = backend.read_scalar(loss);
  labels = {2, 2};  // refilled in place, as the trainer refills its pinned block
  backend.replay();
  EXPECT_LT(right, 0.1);
  EXPECT_GT(backend.read_scalar(loss), 4.0);
}

TEST(RecordingBackend, RefusesWhatACaptureCannotHoldAndDropsAFailedOne) {
  RecordingBackend backend(std::make_unique<ReferenceBackend>());
  Tensor x = backend.allocate({1, 2, 1, 1}), scalar = backend.allocate({1, 1, 1, 1});
  backend.begin_capture();
  EXPECT_THROW(backend.allocate({1, 2, 1, 1}), std::logic_error);
  EXPECT_THROW(backend.sum_of_squares(x), std::logic_error);
  EXPECT_THROW(backend.read_scalar(scalar), std::logic_error);
  EXPECT_THROW(backend.synchronize(), std::logic_error);
  backend.fill(x, 3.0f);
  backend.end_capture(false);
  EXPECT_THROW(backend.replay(), std::logic_error) << "a dropped capture left a recording";
  EXPECT_EQ(read_all(backend, x), (std::vector<float>{0, 0}));
}

TEST(RecordingBackend, AReplayAfterItsTensorWasFreedFails) {
  RecordingBackend backend(std::make_unique<ReferenceBackend>());
  Tensor kept = backend.allocate({1, 2, 1, 1});
  auto reshaped = std::make_unique<Tensor>(backend.allocate({1, 2, 1, 1}));
  backend.begin_capture();
  backend.add(kept, kept, *reshaped);
  backend.end_capture();
  backend.replay();
  *reshaped = backend.allocate({1, 3, 1, 1});  // as ensure_shape reallocates: the recorded storage is gone
  EXPECT_THROW(backend.replay(), std::logic_error);
}

}  // namespace
}  // namespace sb::models

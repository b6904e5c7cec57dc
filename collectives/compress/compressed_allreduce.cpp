#include "collectives/compress/compressed_allreduce.hpp"

#include <algorithm>
#include <climits>

#include "collectives/mpi_types.hpp"
#include "common/check.hpp"

namespace sb {

CompressedAllreduce::CompressedAllreduce(std::unique_ptr<Compressor> compressor, bool error_feedback, MPI_Comm comm)
    : compressor_(std::move(compressor)), error_feedback_(error_feedback && !compressor_->lossless()), comm_(comm) {
  SB_MPI_CHECK(MPI_Comm_size(comm_, &nranks_));
}

// This rank's payload is made: sent() decodes it on request.
void CompressedAllreduce::payload_made(size_t count, uint64_t step) {
  count_ = count;
  step_ = step;
  sent_decoded_ = false;
}

void CompressedAllreduce::allreduce_payload(size_t bytes) {
  const DataType type = compressor_->payload_type();
  SB_CHECK(bytes <= static_cast<size_t>(INT_MAX) * size_of(type), "compressed allreduce: payload over MPI's count");
  received_.resize(bytes);
  SB_MPI_CHECK(MPI_Allreduce(payload_.data(), received_.data(), static_cast<int>(bytes / size_of(type)), mpi_datatype(type),
                             mpi_op(type, RedOp::sum), comm_));
}

// Multi-round compressors (PowerSGD): each round's payload is allreduced before the next is made;
// the residual is known only once the last round's own payload is (it decodes with the aggregate
// of the first).
void CompressedAllreduce::run_rounds(const float* input, float* gradient, size_t count, uint64_t step) {
  payload_.resize(compressor_->round_payload_bytes(count, 0));
  compressor_->compress(input, count, step, payload_.data());
  allreduce_payload(payload_.size());
  for (int round = 1; round < compressor_->rounds(); ++round) {
    std::vector<unsigned char> next(compressor_->round_payload_bytes(count, round));
    compressor_->next_round(input, count, round, received_.data(), next.data());
    payload_.swap(next);
    allreduce_payload(payload_.size());
  }
  payload_made(count, step);
  // The residual (the corrected gradient, `input`) keeps what the last round's payload missed.
  if (error_feedback_) compressor_->decompress_add(payload_.data(), count, step, -1.0f, residual_.data());
  compressor_->aggregate(received_.data(), count, step, nranks_, gradient);
}

void CompressedAllreduce::run(float* gradient, size_t count, uint64_t step) {
  if (error_feedback_) residual_.resize(count, 0.0f);
  if (compressor_->rounds() > 1) {
    if (!error_feedback_) return run_rounds(gradient, gradient, count, step);
    // The residual becomes the corrected gradient, compressed in its place.
    for (size_t i = 0; i < count; ++i) residual_[i] += gradient[i];
    return run_rounds(residual_.data(), gradient, count, step);
  }
  const size_t bytes = compressor_->payload_bytes(count);
  // none: the gradient summed in place, then averaged as none decodes it. Copying it into a payload
  // and summing that into another buffer had cost 0.4-0.6x MPI_Allreduce at 4-16 MiB (two ranks
  // on this VM): each buffer a large gradient passes through is a pass at DRAM speed. The other
  // payloads keep their out-of-place sum: in place, Open MPI 4.1 was 10-20% slower on 0.5-2 MiB.
  if (compressor_->payload_is_the_values() && !keep_sent_) {
    SB_CHECK(count <= static_cast<size_t>(INT_MAX), "compressed allreduce: gradient over MPI's count");
    SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, gradient, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm_));
    const float average = 1.0f / static_cast<float>(nranks_);
    for (size_t i = 0; i < count; ++i) gradient[i] *= average;
    return;
  }
  SB_CHECK(bytes * static_cast<size_t>(nranks_) <= INT_MAX, "compressed allreduce: payloads over 2 GiB");
  payload_.resize(bytes);
  if (error_feedback_) {
    compressor_->compress_with_feedback(residual_.data(), gradient, count, step, payload_.data());
  } else {
    compressor_->compress(gradient, count, step, payload_.data());
  }
  payload_made(count, step);

  // The collective leaves this rank's payload as it is, so that sent() can still decode it.
  if (compressor_->carrier() == Carrier::allreduce) {
    allreduce_payload(bytes);
  } else {
    received_.resize(bytes * static_cast<size_t>(nranks_));
    SB_MPI_CHECK(MPI_Allgather(payload_.data(), static_cast<int>(bytes), MPI_BYTE, received_.data(),
                               static_cast<int>(bytes), MPI_BYTE, comm_));
  }
  compressor_->aggregate(received_.data(), count, step, nranks_, gradient);
}

const std::vector<float>& CompressedAllreduce::sent() const {
  SB_CHECK(keep_sent_ || !compressor_->payload_is_the_values(),
           "CompressedAllreduce::sent() of none without keep_sent(): the gradient was summed in place");
  if (!sent_decoded_) {
    sent_.assign(count_, 0.0f);
    compressor_->decompress_add(payload_.data(), count_, step_, 1.0f, sent_.data());
    sent_decoded_ = true;
  }
  return sent_;
}

}  // namespace sb

#include "collectives/compress/compressed_allreduce.hpp"

#include <algorithm>
#include <climits>

#include "collectives/mpi_types.hpp"
#include "common/check.hpp"

namespace sb {

CompressedAllreduce::CompressedAllreduce(std::unique_ptr<Compressor> compressor, bool error_feedback, MPI_Comm comm)
    : compressor_(std::move(compressor)), error_feedback_(error_feedback), comm_(comm) {
  SB_MPI_CHECK(MPI_Comm_size(comm_, &nranks_));
}

void CompressedAllreduce::run(float* gradient, size_t count, uint64_t step) {
  const float* input = gradient;
  if (error_feedback_) {
    residual_.resize(count, 0.0f);
    corrected_.resize(count);
    for (size_t i = 0; i < count; ++i) corrected_[i] = gradient[i] + residual_[i];
    input = corrected_.data();
  }
  const size_t bytes = compressor_->payload_bytes(count);
  SB_CHECK(bytes * static_cast<size_t>(nranks_) <= INT_MAX, "compressed allreduce: payloads over 2 GiB");
  payload_.resize(bytes);
  compressor_->compress(input, count, step, payload_.data());
  count_ = count;
  step_ = step;
  sent_decoded_ = false;
  if (error_feedback_) {
    const std::vector<float>& decoded = sent();
    for (size_t i = 0; i < count; ++i) residual_[i] = corrected_[i] - decoded[i];
  }

  // The collective leaves this rank's payload as it is, so that sent() can still decode it.
  std::fill(gradient, gradient + count, 0.0f);
  if (compressor_->carrier() == Carrier::allreduce) {
    const DataType type = compressor_->payload_type();
    received_.resize(bytes);
    SB_MPI_CHECK(MPI_Allreduce(payload_.data(), received_.data(), static_cast<int>(compressor_->payload_elements(count)),
                               mpi_datatype(type), mpi_op(type, RedOp::sum), comm_));
    compressor_->decompress_add(received_.data(), count, step, gradient);
    compressor_->combine(received_.data(), count, nranks_, gradient);
  } else {
    received_.resize(bytes * static_cast<size_t>(nranks_));
    SB_MPI_CHECK(MPI_Allgather(payload_.data(), static_cast<int>(bytes), MPI_BYTE, received_.data(),
                               static_cast<int>(bytes), MPI_BYTE, comm_));
    for (int r = 0; r < nranks_; ++r)
      compressor_->decompress_add(received_.data() + static_cast<size_t>(r) * bytes, count, step, gradient);
    compressor_->combine(received_.data(), count, nranks_, gradient);
  }
}

const std::vector<float>& CompressedAllreduce::sent() const {
  if (!sent_decoded_) {
    sent_.assign(count_, 0.0f);
    compressor_->decompress_add(payload_.data(), count_, step_, sent_.data());
    sent_decoded_ = true;
  }
  return sent_;
}

}  // namespace sb

#pragma once
// A compressed allreduce on host buffers: compress -> collective -> decompress -> average, with
// optional error feedback (Seide et al. 2014; Karimireddy et al. 2019): what compression left out
// of this step's gradient is kept and added to the next step's, so that nothing is lost for good,
// only delayed. One object per tensor (or fused bucket): it owns that tensor's residual.
#include <mpi.h>

#include <memory>
#include <vector>

#include "collectives/compress/compressor.hpp"

namespace sb {

class CompressedAllreduce {
 public:
  CompressedAllreduce(std::unique_ptr<Compressor> compressor, bool error_feedback, MPI_Comm comm);

  // Collective. gradient <- the average over ranks of their decoded payloads (the compressor's
  // combine: signSGD's majority vote instead of the average); with error feedback each rank's
  // payload encodes gradient + residual, and the residual becomes what the payload missed. A
  // lossless compressor (none) misses nothing, and runs without it. `step` must be the same on
  // every rank (random-k draws its indices from it).
  void run(float* gradient, size_t count, uint64_t step);

  const Compressor& compressor() const { return *compressor_; }
  // Keep this rank's payload of each step, for sent(). Only `none` needs it: by default it sums the
  // gradient in place, with no payload, as MPI_Allreduce would.
  void keep_sent() { keep_sent_ = true; }
  // This rank's last payload, decoded (on first request; for none, keep_sent() first); and the
  // residual carried to the next step (empty without error feedback).
  const std::vector<float>& sent() const;
  const std::vector<float>& residual() const { return residual_; }
  // A checkpoint's residual (empty: none yet), for a resumed run; the compressor's own carried
  // state goes through compressor().
  void restore_residual(std::vector<float> residual) { residual_ = std::move(residual); }
  Compressor& compressor() { return *compressor_; }

 private:
  // This rank's (last) payload is in payload_: what sent() decodes.
  void payload_made(size_t count, uint64_t step);
  void allreduce_payload(size_t bytes);  // payload_ -> received_, summed over ranks
  void run_rounds(const float* input, float* gradient, size_t count, uint64_t step);

  std::unique_ptr<Compressor> compressor_;
  bool error_feedback_;
  bool keep_sent_ = false;
  MPI_Comm comm_;
  int nranks_ = 1;
  std::vector<float> residual_;  // between steps what was missed; within one, the corrected gradient
  std::vector<unsigned char> payload_, received_;  // this rank's payload, kept; the collective's result
  size_t count_ = 0;
  uint64_t step_ = 0;
  mutable std::vector<float> sent_;
  mutable bool sent_decoded_ = false;
};

}  // namespace sb

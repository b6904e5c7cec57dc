#pragma once
// Gradient compression: each compressor is a small object behind this one interface, in the
// spirit of the allreduce implementations. It encodes a rank's fp32 gradient into a payload of a
// size fixed by the count (so that ranks exchange payloads with plain collectives), says which
// collective carries the payload, and decodes a payload back, adding it into a gradient.
//
// Carriers: payloads that can be summed as they are (fp16, bf16, random-k with indices every
// rank draws from the same seed, PowerSGD's factors) go through an allreduce of `payload_type`
// elements; the others
// (top-k, threshold, sign, scaled sign, 1-bit, QSGD, TernGrad), whose encodings do not add up, through an allgather,
// after which every rank decodes every rank's payload.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/dtype.hpp"

namespace sb {

enum class Carrier { allreduce, allgather };

// One tensor of a fused gradient buffer: `count` values row by row, `rows` rows as PowerSGD
// views it (a convolution's K x CRS, torch's view(shape[0], -1)); 1 for a vector (a bias, a
// batch-norm parameter); 0 when the shape is not known (viewed near-square).
struct TensorView {
  size_t count = 0;
  size_t rows = 0;
  bool operator==(const TensorView&) const = default;
};

struct CompressorParams {
  double ratio = 0.01;  // top-k, threshold, random-k: fraction of the values sent, in (0, 1]
  int levels = 16;      // QSGD: quantisation levels s, 1..127
  size_t bucket = 512;  // QSGD: values that share a norm (0: one norm for the whole tensor)
  int rank = 4;         // PowerSGD: rank of the approximation, >= 1
  uint64_t seed = 42;   // shared by all ranks: random-k's choice of indices
  uint64_t stream = 0;  // this rank's own random stream (stochastic rounding): set to the rank
  // The tensors the values are, in order (their counts add up to the count given): PowerSGD
  // compresses each matrix on its own and sends vectors as they are; TernGrad, and QSGD with
  // bucket 0, scale each tensor on its own. Empty: one tensor of unknown shape.
  std::vector<TensorView> tensors;
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  virtual std::string_view name() const = 0;
  virtual Carrier carrier() const = 0;
  // For an allreduce carrier: the element type the payload is summed as.
  virtual DataType payload_type() const { return DataType::float32; }
  // Decodes to exactly what it encoded (none): error feedback would carry a residual of zeros
  // and cost two passes over the gradient a step, so the compressed allreduces skip it.
  virtual bool lossless() const { return false; }
  // The payload is the values themselves, fp32 (none): the compressed allreduce sums the gradient
  // in place and copies nothing.
  virtual bool payload_is_the_values() const { return false; }
  virtual size_t payload_bytes(size_t count) const = 0;
  // Encodes `values` into `payload` (payload_bytes(count) of them). `step` varies the random
  // choices from one call to the next, the same way on every rank.
  virtual void compress(const float* values, size_t count, uint64_t step, unsigned char* payload) = 0;
  // out[i] += weight x decoded value i. For an allreduce carrier the payload may be a sum of
  // payloads. Error feedback subtracts what was sent from the residual with weight -1 (an exact
  // negation: the same bits as a subtraction), in place and, for the sparse payloads, touching k
  // values instead of a whole decoded copy.
  virtual void decompress_add(const unsigned char* payload, size_t count, uint64_t step, float weight,
                              float* out) const = 0;
  // Error feedback's step in one call: residual += gradient; payload = the residual encoded;
  // residual -= the payload decoded (what it missed stays). By default those three calls; the
  // 16-bit compressors do all three on 8 values at a time, one pass over memory instead of three,
  // with the same bits. Single-round compressors only.
  virtual void compress_with_feedback(float* residual, const float* gradient, size_t count, uint64_t step,
                                      unsigned char* payload);
  // out[i] = weight x decoded value i: by default zeros, then decompress_add. The dense payloads
  // (none, fp16, bf16) decode in one pass instead of two; the aggregates start with it.
  virtual void decompress(const unsigned char* payload, size_t count, uint64_t step, float weight, float* out) const;
  // Compressors whose later payloads depend on the aggregate of earlier ones (PowerSGD: Q = M^T P
  // needs the summed P) run several rounds, each an allreduce: compress() makes round 0's payload,
  // next_round() round r's from round r-1's aggregate; decompress_add() decodes the last round's.
  // payload_bytes() is then the sum over rounds (what goes on the wire). Allreduce carriers only.
  virtual int rounds() const { return 1; }
  virtual size_t round_payload_bytes(size_t count, int /*round*/) const { return payload_bytes(count); }
  virtual void next_round(const float* /*values*/, size_t /*count*/, int /*round*/, const unsigned char* /*aggregate*/,
                          unsigned char* /*payload*/) {}
  // out = the aggregate of what the collective delivered (`received`: the summed payload of an
  // allreduce carrier, the last round's for several rounds, or every rank's payload one after
  // another): by default the average of the decoded payloads, the summed one decoded with weight
  // 1 / nranks, the gathered ones summed and then scaled. Overridden where the aggregate is not
  // the average (signSGD's majority vote, which decodes nothing) or leaves state (PowerSGD).
  virtual void aggregate(const unsigned char* received, size_t count, uint64_t step, int nranks, float* out);
  // What a compressor carries from one step to the next besides error feedback's residual
  // (PowerSGD's warm-start Q), for checkpoints: empty for the others. restore_carried() takes
  // back what carried() gave, so that a resumed run goes on as if it had not stopped.
  virtual std::vector<float> carried() const { return {}; }
  virtual void restore_carried(std::vector<float> /*state*/) {}
};

// The compressors by name: none, fp16, bf16, topk, threshold, randomk, sign, efsign, onebit, qsgd,
// terngrad, powersgd. Throws
// UsageError for an unknown name or a parameter out of range.
std::unique_ptr<Compressor> make_compressor(std::string_view name, const CompressorParams& params);
const std::vector<std::string_view>& compressor_names();

// Every round of `compressor` on this rank alone (each round's aggregate is its own payload): the
// last round's payload, which decompress_add decodes to what this rank would send. For measuring a
// compressor's speed and error without a collective. `payload` gets the last round's bytes.
void compress_alone(Compressor& compressor, const float* values, size_t count, uint64_t step,
                    std::vector<unsigned char>& payload);

// The k of top-k and random-k: ratio * count rounded, at least 1 (0 for an empty gradient).
size_t sparse_k(double ratio, size_t count);

}  // namespace sb

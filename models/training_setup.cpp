#include "models/training_setup.hpp"

#include <array>
#include <string>

#include "collectives/buckets/cycle_exchange.hpp"
#include "collectives/buckets/gradient_exchange.hpp"
#include "collectives/schedule_allreduce.hpp"
#include "common/agreed_usage.hpp"
#include "common/check.hpp"
#include "common/mpi_env.hpp"
#include "common/usage_error.hpp"
#if SB_HAVE_CUDA
#include "models/cudnn_backend.hpp"
#include "models/device_gradient_exchange.hpp"
#endif

namespace sb::models {

std::unique_ptr<Backend> make_training_backend(const TrainConfig& config, MPI_Comm comm) {
  BackendOptions options;
  options.threads = config.threads;
  options.precision = config.precision;
  options.local_rank = local_rank_in(comm);
  options.timed_search = config.cudnn_timed_search;
  std::unique_ptr<Backend> backend;
  // A node may lack what the backend needs (no GPU visible there): every rank ends alike.
  agree_on_usage(comm, [&] { backend = make_backend(config.backend, options); });
  return backend;
}

namespace {

// Rank 0's `values` on every rank: what each rank's own copy (its checksum) is checked against.
template <size_t N>
std::array<uint64_t, N> rank0s(std::array<uint64_t, N> values, MPI_Comm comm) {
  SB_MPI_CHECK(MPI_Bcast(values.data(), static_cast<int>(N), MPI_UINT64_T, 0, comm));
  return values;
}

}  // namespace

void require_same_data_on_every_rank(const DataSplits& data, MPI_Comm comm) {
  const ImageShape shape = data.train->image_shape();
  const std::array<int64_t, 6> mine = {data.train->size(), data.eval->size(), data.train->num_classes(),
                                       shape.channels,      shape.height,      shape.width};
  // Each figure's largest and, negated, its smallest over the ranks, in one allreduce.
  std::array<int64_t, 12> extremes{};
  for (size_t k = 0; k < mine.size(); ++k) extremes[k] = mine[k], extremes[mine.size() + k] = -mine[k];
  SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, extremes.data(), static_cast<int>(extremes.size()), MPI_INT64_T, MPI_MAX,
                             comm));
  static constexpr const char* kWhat[] = {"training images", "evaluation images", "classes",
                                          "channels",        "image height",      "image width"};
  std::string differences;
  for (size_t k = 0; k < mine.size(); ++k) {
    const int64_t most = extremes[k], least = -extremes[mine.size() + k];
    if (most != least)
      differences += std::string(differences.empty() ? "" : ", ") + kWhat[k] + " from " + std::to_string(least) +
                     " to " + std::to_string(most);
  }
  if (!differences.empty())
    throw UsageError("the ranks see different data (" + differences +
                     "): every node must hold the same copy of the data set");
  const std::array<uint64_t, 2> ours = {data.train->fingerprint(), data.eval->fingerprint()};
  const std::array<uint64_t, 2> first = rank0s(ours, comm);
  agree_on_usage(comm, [&] {
    if (ours != first)
      throw UsageError("its copy of the data set is not rank 0's (as many images and classes, but " +
                       std::string(ours[0] != first[0] ? "training" : "evaluation") +
                       " images or labels that differ): every node must hold the same copy of the data set");
  });
}

void require_same_checkpoint_on_every_rank(const std::string& path, uint64_t content, MPI_Comm comm) {
  const uint64_t first = rank0s(std::array<uint64_t, 1>{content}, comm)[0];
  agree_on_usage(comm, [&] {
    if (content != first)
      throw UsageError("its copy of checkpoint '" + path +
                       "' is not rank 0's: keep checkpoints where every node reads the same files");
  });
}

std::unique_ptr<GradientAverager> make_gradient_exchange(const TrainConfig& config, Backend& backend,
                                                         const std::vector<Parameter*>& parameters, MPI_Comm comm) {
  std::vector<GradientTensor> tensors;
  for (const Parameter* p : parameters)
    tensors.push_back({p->name, static_cast<size_t>(p->grad.count()), static_cast<size_t>(p->grad.shape().n)});
#if SB_HAVE_CUDA
  if (auto* gpu = dynamic_cast<CudnnBackend*>(&backend)) {
    SB_CHECK(config.bucket_strategy != BucketStrategy::cycle, "the cycle loop runs on the host exchange only");
    BucketPlan plan = plan_buckets(tensors, config.bucket_strategy, config.bucket_mb);
    std::vector<gpu::Elements> gradients;
    for (const Parameter* p : parameters) gradients.push_back(gpu->device_elements(p->grad));
    // --compressor fp16|bf16 narrows the buckets (fp32 training); other compressors take fp32
    // buckets; without one they are of the compute type.
    DeviceExchangeOptions options;
    options.compressor = config.exchange.compressor;
    options.params = config.exchange.compressor_params;
    options.overlap = config.exchange.overlap;
    // --algo nccl is ncclAllReduce; a schedule's name runs it on the nccl transport.
    const AllreduceImplInfo* algo = find_allreduce_impl(config.exchange.algorithm);
    options.algorithm = algo ? algo->algorithm : nullptr;
    options.error_feedback = config.exchange.error_feedback && options.compressor != "none";
    options.bucket_type = options.compressor == "fp16"   ? gpu::ElementType::f16
                          : options.compressor == "bf16" ? gpu::ElementType::bf16
                          : options.compressor == "none" ? gpu->compute_type()
                                                         : gpu::ElementType::f32;
    ImplConfig impl = config.exchange.impl;
    impl.type = options.bucket_type == gpu::ElementType::f16    ? DataType::float16
                : options.bucket_type == gpu::ElementType::bf16 ? DataType::bfloat16
                                                                : DataType::float32;
    options.algorithm_params = algorithm_params(impl);
    return std::make_unique<DeviceGradientExchange>(comm, std::move(plan), std::move(gradients), gpu->stream(), options);
  }
#endif
  std::vector<float*> gradients;
  for (const Parameter* p : parameters) {
    gradients.push_back(backend.host_fp32(p->grad));
    if (!gradients.back())
      throw UsageError("the " + backend.name() + " backend keeps no fp32 host tensors to reduce over ranks");
  }
  if (config.bucket_strategy == BucketStrategy::cycle)
    return std::make_unique<CycleExchange>(comm, config.exchange, tensors, config.cycle_ms * 1e-3, config.bucket_mb,
                                           std::move(gradients));
  return std::make_unique<GradientExchange>(comm, config.exchange,
                                            plan_buckets(tensors, config.bucket_strategy, config.bucket_mb),
                                            std::move(gradients));
}

bool exchange_calls_mpi_from_its_own_thread(const TrainConfig& config) {
  return config.backend != "cudnn" && config.exchange.overlap && config.exchange.progress == Progress::thread;
}

}  // namespace sb::models

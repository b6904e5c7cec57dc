// The gradient exchange at 1..5 ranks: for every bucket strategy, overlapped or not, every rank
// ends with the average of all ranks' gradients (integer-valued, so exactly), whatever order
// backward reports the tensors in.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "collectives/buckets/gradient_exchange.hpp"

namespace sb {
namespace {

TEST(GradientExchange, EveryRankGetsTheAverageOfEveryTensor) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  // Many equal small tensors (like BN vectors) and a few large ones.
  std::vector<GradientTensor> tensors;
  const size_t sizes[] = {432, 16, 16, 2304, 16, 16, 2304, 16, 16, 4608, 32, 32, 9216, 32, 32, 640, 10};
  for (size_t i = 0; i < std::size(sizes); ++i) tensors.push_back({std::string("t").append(std::to_string(i)), sizes[i]});
  for (BucketStrategy strategy :
       {BucketStrategy::per_tensor, BucketStrategy::fixed, BucketStrategy::ddp, BucketStrategy::partition}) {
    for (bool overlap : {true, false}) {
      ExchangeConfig config;
      config.overlap = overlap;
      std::vector<std::vector<float>> grads(tensors.size());
      std::vector<float*> pointers;
      for (size_t k = 0; k < tensors.size(); ++k) {
        grads[k].resize(tensors[k].count);
        pointers.push_back(grads[k].data());
      }
      GradientExchange exchange(MPI_COMM_WORLD, config, plan_buckets(tensors, strategy, 0.01, 1000), pointers);
      for (int step = 0; step < 3; ++step) {
        // Rank r's element i of tensor k: nranks * (r + 1) * (k + i + step), so the average is exact.
        for (size_t k = 0; k < tensors.size(); ++k)
          for (size_t i = 0; i < grads[k].size(); ++i)
            grads[k][i] = static_cast<float>(nranks * (rank + 1) * static_cast<int>((k + i + step) % 97));
        exchange.begin_step();
        for (size_t k = tensors.size(); k-- > 0;) exchange.tensor_ready(k);
        exchange.finish();
        const int rank_sum = nranks * (nranks + 1) / 2;
        size_t wrong = 0;
        for (size_t k = 0; k < tensors.size(); ++k)
          for (size_t i = 0; i < grads[k].size(); ++i)
            wrong += grads[k][i] != static_cast<float>(rank_sum * static_cast<int>((k + i + step) % 97));
        EXPECT_EQ(wrong, 0u) << bucket_strategy_name(strategy) << (overlap ? " overlapped" : " sequential") << " step "
                             << step;
      }
    }
  }
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

// Compressed buckets: fp16 carries small integers exactly, so the averages are exact too; and
// top-k at ratio 1 sends everything (every value is in the top k).
TEST(GradientExchange, CompressedBucketsAverageExactlyWhereTheCodeIsExact) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  std::vector<GradientTensor> tensors = {{"a", 300}, {"b", 16}, {"c", 1000}, {"d", 10}};
  for (const char* compressor : {"fp16", "topk"}) {
    ExchangeConfig config;
    config.compressor = compressor;
    config.compressor_params.ratio = 1.0;
    std::vector<std::vector<float>> grads(tensors.size());
    std::vector<float*> pointers;
    for (size_t k = 0; k < tensors.size(); ++k) {
      grads[k].resize(tensors[k].count);
      pointers.push_back(grads[k].data());
    }
    GradientExchange exchange(MPI_COMM_WORLD, config, plan_buckets(tensors, BucketStrategy::ddp, 0.001), pointers);
    for (int step = 0; step < 2; ++step) {
      for (size_t k = 0; k < tensors.size(); ++k)
        for (size_t i = 0; i < grads[k].size(); ++i)
          grads[k][i] = static_cast<float>(nranks * (rank + 1) * static_cast<int>(1 + (k + i + step) % 13));
      exchange.begin_step();
      for (size_t k = tensors.size(); k-- > 0;) exchange.tensor_ready(k);
      exchange.finish();
      const int rank_sum = nranks * (nranks + 1) / 2;
      size_t wrong = 0;
      for (size_t k = 0; k < tensors.size(); ++k)
        for (size_t i = 0; i < grads[k].size(); ++i)
          wrong += grads[k][i] != static_cast<float>(rank_sum * static_cast<int>(1 + (k + i + step) % 13));
      EXPECT_EQ(wrong, 0u) << compressor << " step " << step;
    }
  }
}

}  // namespace
}  // namespace sb

#include "bench/allreduce/options.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "collectives/allreduce_impl.hpp"
#include "collectives/baselines/baselines.hpp"
#include "common/usage_error.hpp"

namespace sb {
namespace {

std::optional<AllreduceOptions> parse(std::initializer_list<const char*> args) {
  std::vector<std::string> words = {"sb-allreduce"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  return parse_allreduce_options(static_cast<int>(argv.size()), argv.data(), false);
}

TEST(AllreduceOptions, DefaultsAreNcclTests) {
  const AllreduceOptions o = *parse({});
  EXPECT_EQ(o.min_bytes, 32u << 20);
  EXPECT_EQ(o.max_bytes, 32u << 20);
  EXPECT_EQ(o.sizes().size(), 1u);
  EXPECT_EQ(o.type, DataType::float32);
  EXPECT_EQ(o.op, RedOp::sum);
  EXPECT_TRUE(o.check);
  EXPECT_EQ(o.aggregate, TimeAggregate::mean);
  EXPECT_EQ(o.impls, std::vector<std::string>{"mpi"});
}

TEST(AllreduceOptions, ShortAndLongFlags) {
  const AllreduceOptions o = *parse({"-b", "8", "-e", "64M", "-f", "2", "-n", "3", "-w", "0",
                                     "-d", "bfloat16", "-o", "max", "-a", "3", "-c", "0", "-T",
                                     "10", "--label", "interconnect=HDR200", "--label", "x=",
                                     "--out", "/tmp/x.h5"});
  EXPECT_EQ(o.sizes().size(), 24u);
  EXPECT_EQ(o.sizes().back(), 64u << 20);
  EXPECT_EQ(o.iters, 3);
  EXPECT_EQ(o.warmup_iters, 0);
  EXPECT_EQ(o.type, DataType::bfloat16);
  EXPECT_EQ(o.op, RedOp::max);
  EXPECT_EQ(o.aggregate, TimeAggregate::max);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.timeout_seconds, 10);
  EXPECT_EQ(o.labels.at("interconnect"), "HDR200");
  EXPECT_EQ(o.labels.at("x"), "");
  const AllreduceOptions step = *parse({"--minbytes", "1K", "--maxbytes", "4K", "--stepbytes", "1K"});
  EXPECT_EQ(step.sizes(), (std::vector<uint64_t>{1024, 2048, 3072, 4096}));
}

// The CUDA-aware MPI baseline runs only on an MPI that takes device pointers (given one that
// does not, it would crash), and never on the 16-bit types, whose reductions MPI does on the host.
TEST(AllreduceOptions, MpiCudaNeedsACudaAwareMpiAndNo16BitTypes) {
  const AllreduceImplInfo* info = find_allreduce_impl("mpi-cuda");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->algorithm, nullptr);
  EXPECT_EQ(info->memory, Memory::device);  // sb-train and sb-buckets refuse it for host gradients
  ASSERT_TRUE(info->refuses_type);
  EXPECT_NE(info->refuses_type(DataType::float16), "");
  EXPECT_NE(info->refuses_type(DataType::bfloat16), "");
  EXPECT_EQ(info->refuses_type(DataType::float32), "");
  EXPECT_EQ(info->refuses_type(DataType::int8), "");
  const char* before = std::getenv("SB_MPI_CUDA_AWARE");
  const std::string saved = before ? before : "";
  ::setenv("SB_MPI_CUDA_AWARE", "1", 1);
  EXPECT_EQ(mpi_not_cuda_aware(), "");
  ::setenv("SB_MPI_CUDA_AWARE", "0", 1);
  EXPECT_NE(mpi_not_cuda_aware().find("SB_MPI_CUDA_AWARE=0"), std::string::npos) << mpi_not_cuda_aware();
  if (before) ::setenv("SB_MPI_CUDA_AWARE", saved.c_str(), 1);
  else ::unsetenv("SB_MPI_CUDA_AWARE");
#if !SB_HAVE_CUDA
  EXPECT_NE(info->unavailable(WorldLayout{}).find("no CUDA"), std::string::npos);
#endif
}

TEST(AllreduceOptions, ImplLists) {
  EXPECT_EQ(parse({"--impl", "mpi,nccl"})->impls, (std::vector<std::string>{"mpi", "nccl"}));
  const AllreduceOptions all = *parse({"--impl", "all"});
  EXPECT_TRUE(all.impls_from_all);
  std::vector<std::string> every;
  for (const AllreduceImplInfo& info : allreduce_impls()) every.emplace_back(info.name);
  EXPECT_EQ(all.impls, every);
  EXPECT_EQ(parse({"--impl", "mpi,all"})->impls, every);  // named twice, run once
  EXPECT_EQ(parse({"--impl", "ring,rd,rabenseifner"})->impls.size(), 3u);
}

TEST(AllreduceOptions, HelpIsNotAnError) { EXPECT_FALSE(parse({"--help"}).has_value()); }

TEST(AllreduceOptions, BadInputIsAUsageError) {
  const std::vector<std::vector<const char*>> bad = {
      {"--bogus"},
      {"-b", "64M", "-e", "8"},                 // min > max
      {"-b", "6", "-e", "6", "-d", "float"},    // not a multiple of 4
      {"-b", "8", "-e", "24", "-i", "4", "-d", "double"},  // 12 is not a multiple of 8
      {"-b", "0", "-e", "8"},                   // zero count
      {"-b", "2", "-e", "8", "-d", "float"},    // zero count
      {"-b", "-8"},
      {"-f", "1"},
      {"-f", "0"},
      {"-i", "0", "-b", "8", "-e", "16"},
      {"-n", "0"},
      {"-n", "many"},
      {"-w", "-1"},
      {"-a", "4"},
      {"-c", "2"},
      {"-T", "-1"},
      {"-d", "float8"},
      {"-o", "xor"},
      {"--impl", "bogus"},
      {"--label", "novalue"},
      {"--label", "=x"},
      {"-e", "16G"},                            // over 2^31-1 elements
  };
  for (const auto& args : bad) {
    std::vector<std::string> words = {"sb-allreduce"};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    EXPECT_THROW(parse_allreduce_options(static_cast<int>(argv.size()), argv.data(), false), UsageError)
        << words[1] << " " << (words.size() > 2 ? words[2] : "");
  }
}

}  // namespace
}  // namespace sb

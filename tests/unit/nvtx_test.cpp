// NvtxRange as a tool sees it: the test installs a static NVTX injection (the pointer
// InitializeInjectionNvtx2_fnptr, which NVTX documents for tools linked into a program) that
// records each push and pop, so the ranges are checked without Nsight Systems or a GPU. Builds
// without CUDA have no NVTX, and there a range is nothing: the test says so and skips.
#include "common/nvtx.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#if SB_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>

namespace {

std::mutex recorded_mutex;
std::vector<std::string>& recorded() {
  static std::vector<std::string> events;
  return events;
}

int NVTX_API record_push(const char* message) {
  std::lock_guard lock(recorded_mutex);
  recorded().push_back(std::string("push ") + message);
  return 0;
}

int NVTX_API record_pop() {
  std::lock_guard lock(recorded_mutex);
  recorded().push_back("pop");
  return 0;
}

// Called by NVTX at its first use: installs the two callbacks in its core function table.
int NVTX_API initialize_injection(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size)) return 0;
  if (size <= NVTX_CBID_CORE_RangePop) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&record_push);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&record_pop);
  return 1;
}

// Set before main, so before NVTX's first use looks for a tool.
const bool injected = (InitializeInjectionNvtx2_fnptr = &initialize_injection, true);

}  // namespace
#endif

namespace sb {
namespace {

TEST(NvtxRange, AToolSeesEachRangePushedAndPoppedInOrder) {
#if !SB_HAVE_CUDA
  { const NvtxRange range("step 1"); }
  GTEST_SKIP() << "built without CUDA: no NVTX, and a range is nothing";
#else
  ASSERT_TRUE(injected);
  {
    std::lock_guard lock(recorded_mutex);
    recorded().clear();
  }
  {
    const NvtxRange step("step", 7);
    const NvtxRange phase("forward and backward");
  }
  std::lock_guard lock(recorded_mutex);
  EXPECT_EQ(recorded(), (std::vector<std::string>{"push step 7", "push forward and backward", "pop", "pop"}));
#endif
}

}  // namespace
}  // namespace sb

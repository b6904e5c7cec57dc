# scalebench: make | make test | make demo
#   CUDA=auto|0|1    build the GPU parts (auto: when nvcc, NCCL and cuDNN are found under CUDA_HOME)
#   DEBUG=1          -O0 -g, into build-debug/
#   SAN=address|undefined|thread   sanitizer build, into build-<san>/
#   CUDA_ARCH=...    nvcc -gencode flags (default sm_90 and sm_80)
# Programs land in $(BUILD)/bin/sb-*. Header dependencies are tracked (-MMD), and a change of
# flags (CUDA=, DEBUG=, SAN=) rebuilds what it affects.

CUDA ?= auto
DEBUG ?= 0
SAN ?=
CUDA_HOME ?= /usr/local/cuda
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80
VERSION := 0.1.0

# ---- variant and build folder ---------------------------------------------------------------
ifneq ($(SAN),)
  ifeq ($(filter $(SAN),address undefined thread),)
    $(error SAN must be address, undefined or thread, not '$(SAN)')
  endif
  BUILD ?= build-$(SAN)
else ifeq ($(DEBUG),1)
  BUILD ?= build-debug
else
  BUILD ?= build
endif

# ---- CUDA detection --------------------------------------------------------------------------
NVCC := $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
CUDA_FOUND := $(if $(and $(NVCC),$(wildcard $(CUDA_HOME)/include/nccl.h),$(wildcard $(CUDA_HOME)/include/cuda_runtime.h),$(wildcard $(CUDA_HOME)/include/cudnn.h),$(wildcard $(CUDA_HOME)/include/cublas_v2.h)),1,0)
ifeq ($(CUDA),auto)
  HAVE_CUDA := $(CUDA_FOUND)
else ifeq ($(CUDA),1)
  ifeq ($(CUDA_FOUND),0)
    $(error CUDA=1 but nvcc, cuda_runtime.h, nccl.h, cudnn.h or cublas_v2.h was not found under CUDA_HOME=$(CUDA_HOME))
  endif
  HAVE_CUDA := 1
else ifeq ($(CUDA),0)
  HAVE_CUDA := 0
else
  $(error CUDA must be auto, 0 or 1, not '$(CUDA)')
endif

# ---- flags -----------------------------------------------------------------------------------
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS := $(shell pkg-config --libs ompi-c 2>/dev/null)
HDF5_CFLAGS := $(shell pkg-config --cflags hdf5-openmpi 2>/dev/null)
HDF5_LIBS := $(shell pkg-config --libs hdf5-openmpi 2>/dev/null)

CXX := g++
OPT := $(if $(filter 1,$(DEBUG)),-O0 -g,-O3 -g)
SANFLAGS := $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer,)
CPPFLAGS := -I. -I$(BUILD)/gen $(MPI_CFLAGS) $(HDF5_CFLAGS) -DSB_HAVE_CUDA=$(HAVE_CUDA) -DOMPI_SKIP_MPICXX=1
# No fused multiply-add that the source does not write. GCC contracts a * b + c wherever the
# target has FMA: here in the AVX-512 clones of kernels/vector_clones.hpp, and there in some
# loops' scalar tails but not in their vector bodies. A payload's bytes, and error feedback's
# identity (decoding with weight -1 is subtracting the decoding), then depend on the CPU and on
# the count. Off, every clone and every tail rounds each product as the source writes it; and
# nvcc's --fmad=false does the same on the device, so that the element functions shared by CPU
# and GPU (kernels/*.hpp) are the same arithmetic on both, as their CPU tests assume.
FP_CONTRACT := -ffp-contract=off
CXXFLAGS := -std=c++20 $(OPT) $(FP_CONTRACT) $(SANFLAGS) -Wall -Wextra -MMD -MP
LDFLAGS := $(SANFLAGS)
LDLIBS := $(HDF5_LIBS) $(MPI_LIBS) -ldnnl -lturbojpeg -lz -fopenmp -lpthread
ifeq ($(HAVE_CUDA),1)
  CPPFLAGS += -I$(CUDA_HOME)/include
  LDFLAGS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64
  LDLIBS += -lcudnn -lcublas -lnccl -lcudart
  NVCCFLAGS := -std=c++20 $(OPT) $(CUDA_ARCH) --fmad=false -Xcompiler -Wall,-Wextra,$(FP_CONTRACT) -MMD -MP
endif

# ---- sources ---------------------------------------------------------------------------------
# The library: every .cpp under these folders. Files that need CUDA end in _cuda.cpp (host code
# calling CUDA/NCCL) or _cuda.cu (kernels); their CPU-only stand-ins end in _nocuda.cpp.
LIB_DIRS := common kernels collectives collectives/algorithms collectives/baselines collectives/transports \
            collectives/compress collectives/buckets results results/report models models/data sim
LIB_ALL := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.cpp))
ifeq ($(HAVE_CUDA),1)
  LIB_SRC := $(filter-out %_nocuda.cpp,$(LIB_ALL)) $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*_cuda.cu))
else
  LIB_SRC := $(filter-out %_cuda.cpp,$(LIB_ALL))
endif
LIB_OBJ := $(patsubst %,$(BUILD)/obj/%.o,$(LIB_SRC))
LIB := $(BUILD)/lib/libscalebench.a

# Programs: bench/<name>/*.cpp -> $(BUILD)/bin/sb-<name>.
PROGRAMS := $(notdir $(patsubst %/,%,$(dir $(wildcard bench/*/main.cpp))))
PROGRAM_BINS := $(patsubst %,$(BUILD)/bin/sb-%,$(PROGRAMS))

UNIT_SRC := $(wildcard tests/unit/*.cpp)
MPI_TEST_SRC := $(wildcard tests/mpi/*.cpp)
TEST_BINS := $(BUILD)/bin/sb-unit-tests $(BUILD)/bin/sb-mpi-tests

.PHONY: all deps test demo bench-allreduce bench-train-cpu clean gpu-check gpu-bundle FORCE
all: $(PROGRAM_BINS) $(TEST_BINS)

deps:
	@scripts/install-deps

# Both set-up targets install what is missing first, then build in a fresh make (so that the
# flags above are read again once pkg-config and the libraries are there).
test: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@tests/run $(BUILD)

demo: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@scripts/demo $(BUILD)

# The host allreduce comparison (several minutes): memcpy, MPI_Allreduce and every schedule on
# the mpi and shm transports at 2 and 4 ranks, one table at the end.
bench-allreduce: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@scripts/bench-allreduce $(BUILD)

# The CPU training comparison (several minutes; needs PyTorch and torchvision for python3):
# sb-train's ResNet-50 step against torchvision's on the same cores, the median of 3 pair ratios.
bench-train-cpu: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@scripts/bench-train-cpu $(BUILD)

gpu-check:
	@scripts/gpu-check

# The CUDA build's programs and the libraries a bare CUDA machine lacks, for gpu-check --prebuilt.
gpu-bundle:
	@scripts/gpu-bundle

clean:
	rm -rf build build-debug build-address build-undefined build-thread

# ---- rules -----------------------------------------------------------------------------------
# A stamp that changes whenever the flags do, so that objects rebuild after CUDA=, DEBUG=, SAN=.
FLAGS_STAMP := $(BUILD)/gen/flags
FLAGS_TEXT := $(CXX) $(CPPFLAGS) $(CXXFLAGS) $(NVCCFLAGS) $(LDFLAGS) $(LDLIBS)
$(FLAGS_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(FLAGS_TEXT)' | cmp -s - $@ || echo '$(FLAGS_TEXT)' > $@

# The build's version and commit, rewritten only when they change.
BUILD_INFO := $(BUILD)/gen/sb_build_info.h
GIT_COMMIT = $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
$(BUILD_INFO): FORCE
	@mkdir -p $(@D)
	@printf '#define SB_VERSION "%s"\n#define SB_GIT_COMMIT "%s"\n' '$(VERSION)' '$(GIT_COMMIT)' | cmp -s - $@ \
	  || printf '#define SB_VERSION "%s"\n#define SB_GIT_COMMIT "%s"\n' '$(VERSION)' '$(GIT_COMMIT)' > $@
$(BUILD)/obj/results/run_metadata.cpp.o: $(BUILD_INFO)

$(BUILD)/obj/%.cpp.o: %.cpp $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CXX   $<"
	@$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  NVCC  $<"
	@$(NVCC) $(CPPFLAGS) $(NVCCFLAGS) -c $< -o $@

# The conversion loops compute every case and select one (kernels/float16.hpp), and the
# quantisers' loops select by sign; GCC vectorises that only when it may evaluate the unselected
# float operations, i.e. without FP traps, which nothing here enables. Values are unchanged: this
# is not -ffast-math.
$(BUILD)/obj/kernels/convert_cpu.cpp.o: CXXFLAGS += -fno-trapping-math
$(BUILD)/obj/collectives/compress/quantised_compressors.cpp.o: CXXFLAGS += -fno-trapping-math
$(BUILD)/obj/collectives/compress/dense_compressors.cpp.o: CXXFLAGS += -fno-trapping-math
$(BUILD)/obj/kernels/quantise_cpu.cpp.o: CXXFLAGS += -fno-trapping-math

# The model code's own loops (element-wise ops, layout changes) share oneDNN's OpenMP pool.
$(BUILD)/obj/models/%.cpp.o: CXXFLAGS += -fopenmp

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	@echo "  AR    $@"
	@rm -f $@ && ar rcs $@ $^

# A program's own extra libraries, by program name.
LDLIBS_micro := -lbenchmark

define program_rule
$(BUILD)/bin/sb-$(1): $(patsubst %,$(BUILD)/obj/%.o,$(wildcard bench/$(1)/*.cpp)) $(LIB)
	@mkdir -p $$(@D)
	@echo "  LINK  $$@"
	@$(CXX) $(LDFLAGS) $$^ $(LDLIBS) $(LDLIBS_$(1)) -o $$@
endef
$(foreach p,$(PROGRAMS),$(eval $(call program_rule,$(p))))

# The programs' sources, less their main(), are linked into the tests too (not sb-micro's: they
# register benchmarks, and need Google Benchmark).
BENCH_LIB_OBJ := $(patsubst %,$(BUILD)/obj/%.o,$(filter-out %/main.cpp bench/micro/%,$(wildcard bench/*/*.cpp)))

$(BUILD)/bin/sb-unit-tests: $(patsubst %,$(BUILD)/obj/%.o,$(UNIT_SRC)) $(BENCH_LIB_OBJ) $(LIB)
	@mkdir -p $(@D)
	@echo "  LINK  $@"
	@$(CXX) $(LDFLAGS) $^ $(LDLIBS) -lgtest -lgtest_main -o $@

$(BUILD)/bin/sb-mpi-tests: $(patsubst %,$(BUILD)/obj/%.o,$(MPI_TEST_SRC)) $(BENCH_LIB_OBJ) $(LIB)
	@mkdir -p $(@D)
	@echo "  LINK  $@"
	@$(CXX) $(LDFLAGS) $^ $(LDLIBS) -lgtest -o $@

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

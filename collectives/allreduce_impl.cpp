#include "collectives/allreduce_impl.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace sb {

void* AllreduceImpl::allocate(size_t bytes) {
  // Page-aligned, as pinned or registered memory would be; at least one page so that a
  // zero-byte request still gives a distinct pointer.
  constexpr size_t kAlign = 4096;
  const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* buffer = std::aligned_alloc(kAlign, rounded ? rounded : kAlign);
  if (!buffer) throw std::bad_alloc();
  return buffer;
}

void AllreduceImpl::release(void* buffer) { std::free(buffer); }

std::string_view name_of(Transport transport) {
  switch (transport) {
    case Transport::mpi: return "mpi";
    case Transport::shm: return "shm";
    case Transport::nccl: return "nccl";
  }
  return "?";
}

void AllreduceImpl::upload(void* buffer, const void* host, size_t bytes) {
  std::memcpy(buffer, host, bytes);
}

void AllreduceImpl::download(void* host, const void* buffer, size_t bytes) {
  std::memcpy(host, buffer, bytes);
}

}  // namespace sb

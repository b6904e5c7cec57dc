#include "collectives/allreduce_impl.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/text_fields.hpp"
#include "common/usage_error.hpp"

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

std::vector<Transport> parse_transports(const std::string& text) {
  std::vector<Transport> transports;
  for (const std::string& name : split_list(text)) {
    const auto* known = std::find_if(std::begin(kAllTransports), std::end(kAllTransports),
                                     [&](Transport t) { return name_of(t) == name; });
    if (known == std::end(kAllTransports))
      throw UsageError("--transport: unknown transport '" + name + "' (mpi, shm, nccl)");
    if (std::find(transports.begin(), transports.end(), *known) != transports.end())
      throw UsageError("--transport: '" + name + "' given twice");
    transports.push_back(*known);
  }
  return transports;
}

void AllreduceImpl::upload(void* buffer, const void* host, size_t bytes) {
  std::memcpy(buffer, host, bytes);
}

void AllreduceImpl::download(void* host, const void* buffer, size_t bytes) {
  std::memcpy(host, buffer, bytes);
}

}  // namespace sb

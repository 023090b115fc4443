// A counting global operator new/delete for sparsecomm_growth: the bytes this rank's C++
// heap holds now and at most since the last reset. Under SMPI every simulated rank has its
// own copy of the program's globals (dlopen privatization, ../shared/simgrid/NOTES.md), so
// the counters are per rank there too; with Open MPI a rank is a process. Sizes come from
// malloc_usable_size (the bytes malloc really reserved), so no header is added to blocks.
// Allocations inside libstdc++'s own compiled code, MPI's (SMPI's) internal buffers and
// the over-aligned operator new are not counted: it measures the C++ containers of the
// library code linked into this program, which is where its set-up structures live.
#include <cstddef>
#include <cstdlib>
#include <new>

#include "alloc_count.hpp"

// glibc's; declared here because <malloc.h> clashes with SMPI's malloc macros (smpi_helpers.h).
extern "C" std::size_t malloc_usable_size(void* p) noexcept;

namespace {
sparsecomm::apps::AllocCounter g_counter;

void* counted_alloc(std::size_t n) {
  void* p = (std::malloc)(n ? n : 1);  // parentheses: glibc's, not SMPI's malloc macro (smpi_helpers.h)
  if (!p) throw std::bad_alloc();
  g_counter.current += static_cast<long long>(malloc_usable_size(p));
  if (g_counter.current > g_counter.peak) g_counter.peak = g_counter.current;
  return p;
}
void counted_free(void* p) noexcept {
  if (!p) return;
  g_counter.current -= static_cast<long long>(malloc_usable_size(p));
  (std::free)(p);
}
}  // namespace

extern "C" sparsecomm::apps::AllocCounter* sparsecomm_growth_alloc_counter() { return &g_counter; }

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }

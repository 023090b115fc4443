#pragma once
// The counters of the counting allocator of sparsecomm_growth (alloc_count.cpp).
namespace sparsecomm::apps {
struct AllocCounter {
  long long current = 0;  ///< bytes held now
  long long peak = 0;     ///< most bytes held since the last reset
};
}  // namespace sparsecomm::apps
/// The counters, where the program links alloc_count.cpp (the stand-alone sparsecomm_growth);
/// null in the CLI, which keeps the default allocator.
extern "C" __attribute__((weak)) sparsecomm::apps::AllocCounter* sparsecomm_growth_alloc_counter();

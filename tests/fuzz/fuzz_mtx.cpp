// libFuzzer target over the Matrix Market parser's in-memory entry point (parse_mtx_text):
// any byte string must either parse into entries that respect the declared size, or raise
// InputError. Anything else (a crash, a sanitizer report, another exception type, an entry
// out of range, more entries than the size line bounds) is a finding. No MPI is called.
//
//   scripts/fuzz.sh [seconds] mtx  builds with clang -fsanitize=fuzzer,address,undefined and runs
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto d = sparsecomm::parse_mtx_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    // What the parser promises: 0-based entries inside the declared dimensions, and no more
    // than the announced count (twice it with symmetric storage expanded).
    const auto& h = d.header;
    if (h.rows < 0 || h.cols < 0) std::abort();
    for (const auto& e : d.entries)
      if (e.row < 0 || e.row >= h.rows || e.col < 0 || e.col >= h.cols) std::abort();
    // The bound read_matrix_market checks before rank 0 parses (mtx_entry_bound)
    if (static_cast<double>(d.entries.size()) > sparsecomm::mtx_entry_bound(h)) std::abort();
  } catch (const sparsecomm::InputError&) {
    // Malformed input: the expected answer.
  }
  return 0;
}

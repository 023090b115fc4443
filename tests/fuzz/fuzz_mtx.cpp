// libFuzzer target over the Matrix Market parser, through the three ways text reaches it: in
// memory (parse_mtx_text), a plain file and a gzip-compressed file (parse_mtx, zlib's
// reader and the 1 MB chunked line reader). The input's length picks the way (length mod
// 3: mutations reach all three), so every file and its buffer stay the same bytes.
//
// What the parser promises: any byte string either parses into entries that respect the
// declared size and the size line's bound, or raises InputError; and the file paths give
// exactly what the in-memory parse gives (the same entries, or an error too). Anything else
// (a crash, a sanitizer report, another exception type, an entry out of range, a difference)
// is a finding. No MPI is called.
//
//   scripts/fuzz.sh [seconds] mtx  builds with clang -fsanitize=fuzzer,address,undefined and runs
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"

namespace {

using sparsecomm::MtxData;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_mtx: %s\n", what);
  std::abort();
}

// Parses with `parse`; false on InputError (the expected answer to a malformed text).
template <class Parse>
bool parsed(Parse parse, MtxData* out) {
  try {
    *out = parse();
    return true;
  } catch (const sparsecomm::InputError&) {
    return false;
  }
}

void check(const MtxData& d) {
  const auto& h = d.header;
  if (h.rows < 0 || h.cols < 0) finding("negative dimensions");
  for (const auto& e : d.entries)
    if (e.row < 0 || e.row >= h.rows || e.col < 0 || e.col >= h.cols) finding("an entry outside the matrix");
  // The bound read_matrix_market checks before rank 0 parses (mtx_entry_bound)
  if (static_cast<double>(d.entries.size()) > sparsecomm::mtx_entry_bound(h)) finding("more entries than the bound");
}

bool same(const MtxData& a, const MtxData& b) {
  if (a.header.rows != b.header.rows || a.header.cols != b.header.cols || a.entries.size() != b.entries.size())
    return false;
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const auto &x = a.entries[i], &y = b.entries[i];
    if (x.row != y.row || x.col != y.col || !(x.val == y.val)) return false;
  }
  return true;
}

// Writes the bytes to a file of this process, gzip-compressed or not; its path.
std::string write_file(std::string_view text, bool gzip) {
  const std::string path =
      "/tmp/sparsecomm_fuzz_mtx." + std::to_string(getpid()) + (gzip ? ".mtx.gz" : ".mtx");
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb1");
    if (!f || (!text.empty() && gzwrite(f, text.data(), static_cast<unsigned>(text.size())) <= 0)) finding("gzwrite");
    gzclose(f);
  } else {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size()) finding("fwrite");
    std::fclose(f);
  }
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  MtxData mem;
  const bool ok = parsed([&] { return sparsecomm::parse_mtx_text(text, "fuzz"); }, &mem);
  if (ok) check(mem);
  const int way = static_cast<int>(size % 3);  // 0: memory only; 1: a plain file; 2: gzip
  if (way == 0) return 0;
  const std::string path = write_file(text, way == 2);
  MtxData file;
  const bool file_ok = parsed([&] { return sparsecomm::parse_mtx(path); }, &file);
  std::remove(path.c_str());
  if (file_ok != ok) finding(ok ? "the file failed where the buffer parsed" : "the file parsed where the buffer failed");
  if (ok && !same(mem, file)) finding("the file's entries differ from the buffer's");
  return 0;
}

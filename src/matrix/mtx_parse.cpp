// The Matrix Market parser proper: local, no MPI (the fuzz target in tests/fuzz links this
// file alone). read_matrix_market() in mtx_reader.cpp distributes what it returns.
#include "sparsecomm/matrix/mtx_reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <utility>

#include "sparsecomm/core/error.hpp"

namespace sparsecomm {
namespace {

constexpr const char* kBannerExample = "\"%%MatrixMarket matrix coordinate real general\"";
// The longest line read: a Matrix Market line holds at most four numbers, or a comment; a
// longer one (a corrupt or hostile file: a 2 MB gzip can hold a 2 GiB line) is an error
// before the buffer grows past twice this.
constexpr size_t kMaxLine = size_t{1} << 20;

// Reads a file line by line through zlib. gzread passes uncompressed files through
// unchanged, so ".mtx" and ".mtx.gz" share this one path. Lines are returned as views
// into an internal buffer that is refilled in large chunks (no per-token iostreams: a
// 20 MB file has ~700K lines and istream >> costs several times the whole parse).
class LineReader {
 public:
  LineReader(const std::string& path, size_t chunk) : path_(path), buf_(chunk) {
    std::error_code ec;
    // zlib would open a directory and only fail on the first read with a vague message.
    if (std::filesystem::is_directory(path, ec))
      throw InputError(path + ": cannot read: is a directory, not a Matrix Market file");
    errno = 0;
    gz_ = gzopen(path.c_str(), "rb");
    if (!gz_) {
      const int err = errno;
      throw InputError(path + ": cannot open file: " + (err ? std::strerror(err) : "zlib could not allocate its state"));
    }
    gzbuffer(gz_, 256 * 1024);
  }
  /// Lines of a text held in memory (parse_mtx_text; the fuzz target): no file, no zlib.
  LineReader(std::string_view text, const std::string& name) : path_(name), buf_(text.begin(), text.end()) {
    end_ = buf_.size();
    eof_ = true;
  }
  ~LineReader() {
    if (gz_) gzclose(gz_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  /// Next line without its end-of-line characters; false at end of file. The view is
  /// valid until the next call.
  bool next(std::string_view& line) {
    for (;;) {
      const char* base = buf_.data();
      // Nothing buffered: no memchr on (possibly null, for empty text) base + 0. Found by
      // the fuzzer (tests/fuzz/regressions/empty.input): UBSan rejects a zero offset on null.
      const void* nl = begin_ < end_ ? std::memchr(base + begin_, '\n', end_ - begin_) : nullptr;
      if (nl) {
        const size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - base);
        line = std::string_view(base + begin_, pos - begin_);
        begin_ = pos + 1;
        return finish(line);
      }
      if (eof_) {
        if (begin_ == end_) return false;
        line = std::string_view(base + begin_, end_ - begin_);  // last line without '\n'
        begin_ = end_;
        return finish(line);
      }
      fill();
    }
  }

  /// 1-based number of the line last returned by next() (0 before the first).
  int64_t line_number() const { return line_; }

 private:
  bool finish(std::string_view& line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF files
    ++line_;
    return true;
  }

  void fill() {
    // Keep the unfinished line, grow only when one line fills the whole buffer.
    if (begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ == buf_.size()) {
      if (end_ >= kMaxLine)
        throw InputError(path_ + ":" + std::to_string(line_ + 1) + ": a line longer than " + std::to_string(kMaxLine) +
                         " bytes: not a Matrix Market line (a corrupt file?)");
      buf_.resize(buf_.size() * 2);
    }
    const size_t want = std::min<size_t>(buf_.size() - end_, static_cast<size_t>(INT_MAX));
    const int n = gzread(gz_, buf_.data() + end_, static_cast<unsigned>(want));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(gz_, &code);
      throw InputError(path_ + ":" + std::to_string(line_ + 1) + ": cannot read file (" +
                       (code == Z_ERRNO ? std::strerror(errno) : (msg ? msg : "zlib error")) + ")");
    }
    if (n == 0) {
      // gzread returns 0 at end of file, and also on a truncated gzip stream: tell them apart.
      int code = 0;
      const char* msg = gzerror(gz_, &code);
      if (code != Z_OK && code != Z_STREAM_END)
        throw InputError(path_ + ":" + std::to_string(line_ + 1) + ": cannot read file (" +
                         (msg ? msg : "zlib error") + ")");
      eof_ = true;
    }
    end_ += static_cast<size_t>(n);
  }

  std::string path_;
  gzFile gz_ = nullptr;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  int64_t line_ = 0;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Splits `line` at whitespace into at most `max` views; returns the total number of
// tokens (which may exceed `max`, so that "extra token" errors can be reported).
size_t split(std::string_view line, std::string_view* tok, size_t max) {
  size_t n = 0, i = 0;
  const size_t len = line.size();
  while (i < len) {
    while (i < len && is_space(line[i])) ++i;
    if (i == len) break;
    const size_t b = i;
    while (i < len && !is_space(line[i])) ++i;
    if (n < max) tok[n] = line.substr(b, i - b);
    ++n;
  }
  return n;
}

// Blank lines and '%' comment lines may appear anywhere after the banner.
bool skippable(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && is_space(line[i])) ++i;
  return i == line.size() || line[i] == '%';
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// A token as shown in an error message: quoted, shortened, control bytes masked (the
// "file" may be binary).
std::string show(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string r = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    r += (c >= 32 && c < 127) ? static_cast<char>(c) : '?';
  }
  if (s.size() > kMax) r += "...";
  return r + "'";
}

enum class NumStatus { ok, bad, range, nonfinite };

// An integer token: ok, bad (not an integer) or range (an integer beyond 64 bits).
NumStatus parse_int(std::string_view t, int64_t& v) {
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);  // from_chars rejects a leading '+'
  if (t.empty()) return NumStatus::bad;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (p != t.data() + t.size()) return NumStatus::bad;
  return ec == std::errc::result_out_of_range ? NumStatus::range : ec == std::errc() ? NumStatus::ok : NumStatus::bad;
}

NumStatus parse_real(std::string_view t, double& v) {
  if (t.size() > 1 && t[0] == '+' && t[1] != '-') t.remove_prefix(1);
  if (t.empty()) return NumStatus::bad;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
  if (p != t.data() + t.size()) return NumStatus::bad;
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports underflow and overflow alike; an underflow (1e-400) is a
    // legitimate zero, an overflow (1e400) is not a double. strtod tells them apart.
    v = std::strtod(std::string(t).c_str(), nullptr);
    return std::isinf(v) ? NumStatus::range : NumStatus::ok;
  }
  if (ec != std::errc()) return NumStatus::bad;
  return std::isfinite(v) ? NumStatus::ok : NumStatus::nonfinite;  // from_chars accepts "nan", "inf"
}

enum class Sym { general, symmetric, skew };

// One pass over one file: banner, size line, then (optionally) the entries.
class MtxParser {
 public:
  // The header only needs the first few KB; a whole-file parse reads 1 MB at a time.
  MtxParser(const std::string& path, size_t chunk) : path_(path), in_(path, chunk) {}
  MtxParser(std::string_view text, const std::string& name) : path_(name), in_(text, name) {}

  MtxHeader parse_header() {
    std::string_view line;
    if (!in_.next(line)) fail(1, std::string("empty file; expected the banner ") + kBannerExample);
    std::string_view tok[5];
    const size_t n = split(line, tok, 5);
    if (n == 0 || lower(tok[0]) != "%%matrixmarket")
      fail(1, std::string("missing Matrix Market banner: expected a first line like ") + kBannerExample +
                  ", found " + show(line));
    if (n != 5)
      fail(1, "malformed banner: expected 5 words like " + std::string(kBannerExample) + ", found " +
                  std::to_string(n));
    if (lower(tok[1]) != "matrix") fail(1, "unsupported object " + show(tok[1]) + " (only 'matrix' is supported)");
    h_.format = lower(tok[2]);
    h_.field = lower(tok[3]);
    h_.symmetry = lower(tok[4]);
    if (h_.format != "coordinate" && h_.format != "array")
      fail(1, "unknown format " + show(tok[2]) + " (expected coordinate or array)");
    if (h_.field == "complex") fail(1, "complex matrices are not supported (field 'complex')");
    if (h_.field != "real" && h_.field != "integer" && h_.field != "pattern")
      fail(1, "unknown field " + show(tok[3]) + " (expected real, integer or pattern)");
    if (h_.symmetry == "general") sym_ = Sym::general;
    // For real data a Hermitian matrix is a symmetric one (conj(a) = a).
    else if (h_.symmetry == "symmetric" || h_.symmetry == "hermitian") sym_ = Sym::symmetric;
    else if (h_.symmetry == "skew-symmetric") sym_ = Sym::skew;
    else fail(1, "unknown symmetry " + show(tok[4]) + " (expected general, symmetric, skew-symmetric or hermitian)");
    if (h_.format == "array" && h_.field == "pattern")
      fail(1, "field 'pattern' is not allowed with the array format (an array stores every value)");

    // Size line: the first line after the banner that is neither blank nor a comment.
    bool have_size = false;
    while (!have_size && in_.next(line)) have_size = !skippable(line);
    if (!have_size) fail(in_.line_number(), "missing size line (end of file after the banner)");
    size_line_ = in_.line_number();
    const bool coord = h_.format == "coordinate";
    const size_t want = coord ? 3 : 2;
    std::string_view st[3];
    const size_t m = split(line, st, 3);
    if (m != want)
      fail(size_line_, "size line must have " + std::to_string(want) + " numbers (" +
                           (coord ? "rows columns entries" : "rows columns") + ") for the " + h_.format +
                           " format, found " + std::to_string(m) + " words");
    int64_t v[3] = {0, 0, 0};
    const char* what[3] = {"rows", "columns", "entries"};
    for (size_t i = 0; i < want; ++i) {
      const NumStatus ns = parse_int(st[i], v[i]);
      if (ns == NumStatus::range)
        fail(size_line_, "size line: number of " + std::string(what[i]) + " " + show(st[i]) +
                             " is too large (more than 2^63 - 1)");
      if (ns != NumStatus::ok)
        fail(size_line_, "size line: number of " + std::string(what[i]) + " " + show(st[i]) + " is not an integer");
      if (v[i] < 0)
        fail(size_line_, "size line: negative number of " + std::string(what[i]) + " (" + std::to_string(v[i]) + ")");
    }
    h_.rows = v[0];
    h_.cols = v[1];
    if (sym_ != Sym::general && h_.rows != h_.cols)
      fail(size_line_, "a " + h_.symmetry + " matrix must be square, but the size line says " +
                           std::to_string(h_.rows) + " x " + std::to_string(h_.cols));
    if (coord) {
      h_.stored = v[2];
    } else {
      if (h_.rows > 0 && h_.cols > INT64_MAX / h_.rows)
        fail(size_line_, "array of " + std::to_string(h_.rows) + " x " + std::to_string(h_.cols) + " is too large");
      h_.stored = h_.rows * h_.cols;
    }
    return h_;
  }

  std::vector<Triplet<double>> parse_entries() {
    return h_.format == "coordinate" ? parse_coordinate() : parse_array();
  }

 private:
  [[noreturn]] void fail(int64_t line, const std::string& what) const {
    throw InputError(path_ + ":" + std::to_string(line) + ": " + what);
  }

  // Reserve for what the size line announces, but not blindly: a corrupt count must
  // produce "expected N entries, found M", not std::bad_alloc.
  static size_t reserve_for(int64_t announced, bool mirrored) {
    const int64_t cap = int64_t{1} << 24;
    const int64_t n = std::min(announced, cap);
    return static_cast<size_t>(mirrored ? 2 * n : n);
  }

  double value(std::string_view t, int64_t line) const {
    if (h_.field == "integer") {
      int64_t iv = 0;
      const NumStatus s = parse_int(t, iv);
      if (s == NumStatus::range) fail(line, "value " + show(t) + " is too large for a 64-bit integer");
      if (s != NumStatus::ok) fail(line, "value " + show(t) + " is not an integer (field is 'integer')");
      return static_cast<double>(iv);
    }
    double v = 0;
    const NumStatus s = parse_real(t, v);
    if (s == NumStatus::range) fail(line, "value " + show(t) + " is out of range for a double");
    if (s == NumStatus::nonfinite)
      fail(line, "value " + show(t) +
                     " is not finite: NaN and infinite entries are rejected in files (a matrix that holds "
                     "them cannot be verified against a reference; build it from your own arrays if you must)");
    if (s != NumStatus::ok) fail(line, "value " + show(t) + " is not a number");
    return v;
  }

  // Appends entry (i, j, v) (0-based) and its mirror image for symmetric storage (the
  // coordinate parser has already rejected entries above the diagonal there).
  void emit(std::vector<Triplet<double>>& out, int64_t i, int64_t j, double v) const {
    out.push_back({i, j, v});
    if (i == j) return;  // a symmetric diagonal entry is stored once
    if (sym_ == Sym::symmetric) out.push_back({j, i, v});
    else if (sym_ == Sym::skew) out.push_back({j, i, -v});
  }

  void check_index(int64_t line, std::string_view t, const char* what, int64_t n, int64_t& idx) const {
    const NumStatus s = parse_int(t, idx);
    if (s == NumStatus::range)
      fail(line, std::string(what) + " index " + show(t) + " is too large (the matrix has " + std::to_string(n) + " " +
                     what + "s)");
    if (s != NumStatus::ok) fail(line, std::string(what) + " index " + show(t) + " is not an integer");
    if (idx < 1 || idx > n)
      fail(line, std::string(what) + " index " + std::to_string(idx) + " out of range: the matrix has " +
                     std::to_string(n) + " " + what + "s (indices are 1-based)");
  }

  [[noreturn]] void too_few(int64_t expected, int64_t found) const {
    fail(std::max<int64_t>(1, in_.line_number()), "expected " + std::to_string(expected) + " entries, found " +
                                                      std::to_string(found) + " (end of file)");
  }

  std::vector<Triplet<double>> parse_coordinate() {
    std::vector<Triplet<double>> out;
    out.reserve(reserve_for(h_.stored, sym_ != Sym::general));
    const bool pattern = h_.field == "pattern";
    const size_t need = pattern ? 2 : 3;
    int64_t found = 0;
    std::string_view line, tok[3];
    while (in_.next(line)) {
      if (skippable(line)) continue;
      const int64_t ln = in_.line_number();
      if (found == h_.stored)
        fail(ln, "more entries than announced: the size line (line " + std::to_string(size_line_) + ") says " +
                     std::to_string(h_.stored));
      const size_t n = split(line, tok, 3);
      if (n < 2) fail(ln, "an entry needs a row and a column index, found " + show(line));
      int64_t r = 0, c = 0;
      check_index(ln, tok[0], "row", h_.rows, r);
      check_index(ln, tok[1], "column", h_.cols, c);
      if (n < need) fail(ln, "missing value after the indices (field is '" + h_.field + "')");
      if (n > need) {
        std::string_view extra[4];
        split(line, extra, 4);
        fail(ln, "unexpected extra token " + show(extra[need]) + " (a " + h_.field + " entry has " +
                     std::to_string(need) + " numbers)");
      }
      const double v = pattern ? 1.0 : value(tok[2], ln);
      // Symmetric storage keeps the lower triangle; an entry above it is an error rather
      // than mirrored: a file that stores both (i, j) and (j, i) would otherwise get each
      // value silently doubled (duplicates are summed).
      if (sym_ != Sym::general && c > r)
        fail(ln, "entry (" + std::to_string(r) + ", " + std::to_string(c) + ") is above the diagonal, but a " +
                     h_.symmetry + " file stores only the lower triangle (row >= column); store (" +
                     std::to_string(c) + ", " + std::to_string(r) + ") instead, or declare the matrix 'general'");
      if (sym_ == Sym::skew && r == c)
        fail(ln, "diagonal entry (" + std::to_string(r) + ", " + std::to_string(c) +
                     ") in a skew-symmetric matrix (its diagonal is zero and must not be stored)");
      emit(out, r - 1, c - 1, v);
      ++found;
    }
    if (found < h_.stored) too_few(h_.stored, found);
    return out;
  }

  // Column-major values; symmetric storage keeps the lower triangle (skew: strictly lower).
  std::vector<Triplet<double>> parse_array() {
    std::vector<Triplet<double>> out;
    const int64_t n = h_.rows;
    int64_t expected = h_.stored;
    if (sym_ == Sym::symmetric) expected = n * (n + 1) / 2;
    else if (sym_ == Sym::skew) expected = n > 0 ? n * (n - 1) / 2 : 0;
    out.reserve(reserve_for(expected, sym_ != Sym::general));
    const int64_t first_row_offset = sym_ == Sym::skew ? 1 : 0;
    int64_t i = sym_ == Sym::general ? 0 : first_row_offset, j = 0;  // position of the next value
    int64_t found = 0;
    std::string_view line, tok[2];
    while (in_.next(line)) {
      if (skippable(line)) continue;
      const int64_t ln = in_.line_number();
      if (found == expected)
        fail(ln, "more entries than announced: the size line (line " + std::to_string(size_line_) + ") implies " +
                     std::to_string(expected) + " values for a " + h_.symmetry + " " + std::to_string(h_.rows) +
                     " x " + std::to_string(h_.cols) + " array");
      const size_t m = split(line, tok, 2);
      if (m > 1) fail(ln, "unexpected extra token " + show(tok[1]) + " (the array format has one value per line)");
      const double v = value(tok[0], ln);
      if (v != 0.0) emit(out, i, j, v);  // a dense format: zeros are not entries
      ++found;
      if (++i == h_.rows) {
        ++j;
        i = sym_ == Sym::general ? 0 : j + first_row_offset;
      }
    }
    if (found < expected) too_few(expected, found);
    return out;
  }

  std::string path_;
  LineReader in_;
  MtxHeader h_;
  Sym sym_ = Sym::general;
  int64_t size_line_ = 0;
};

}  // namespace

MtxHeader read_mtx_header(const std::string& path) {
  MtxParser p(path, 16 * 1024);
  return p.parse_header();
}

MtxData parse_mtx(const std::string& path, const std::function<void(const MtxHeader&)>& before_entries) {
  MtxParser p(path, 1 << 20);
  MtxData d;
  d.header = p.parse_header();
  if (before_entries) before_entries(d.header);
  d.entries = p.parse_entries();
  return d;
}

double mtx_entry_bound(const MtxHeader& h) {
  const bool general = h.symmetry == "general";
  if (h.format == "coordinate") return static_cast<double>(h.stored) * (general ? 1 : 2);
  // Array: every value of a general array, both triangles of a symmetric one.
  return static_cast<double>(h.rows) * static_cast<double>(h.cols);
}

MtxData parse_mtx_text(std::string_view text, const std::string& name) {
  MtxParser p(text, name);
  MtxData d;
  d.header = p.parse_header();
  d.entries = p.parse_entries();
  return d;
}

}  // namespace sparsecomm

// Matrix and graph generators (see generators.hpp).
//
// Rank independence is the design constraint behind every choice here: each rank builds
// only the rows it owns under RowPartition::balanced(n, P) (or, for R-MAT, a slice of edge
// indices), and every random choice comes from a counter-based stream keyed by a global id
// (row or edge index) and the seed. A sequential RNG shared across rows would make the
// result depend on how rows are split over ranks; keyed streams make it a pure function of
// (seed, global id), so 1 rank and 8 ranks produce bit-identical matrices.
#include "sparsecomm/matrix/generators.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "core/memory.hpp"
#include "core/parse.hpp"

namespace sparsecomm::gen {

namespace {

// ---------------------------------------------------------------------------------------
// Counter-based random numbers.
//
// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014): its finalizer is a strong 64-bit bijective mixer, so hashing
// (seed, domain, key) through it gives independent-looking starting states for every
// global id, and stepping the state by the golden-ratio increment gives a short stream
// per key. Streams are only a few draws long (one row's edges, one edge's levels), so the
// chance that two keyed streams overlap is negligible.
// ---------------------------------------------------------------------------------------
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Domains keep the streams of different generators (and of different uses inside one
// generator) apart even when seeds and keys coincide.
enum class Domain : uint64_t { erdos_renyi = 1, rmat_edge = 2, rmat_permute = 3 };

class KeyedRng {
 public:
  KeyedRng(uint64_t seed, Domain domain, uint64_t key)
      : state_(mix64(mix64(seed + kGolden * static_cast<uint64_t>(domain)) ^ mix64(key + kGolden))) {}
  uint64_t next() {
    state_ += kGolden;
    return mix64(state_);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// ---------------------------------------------------------------------------------------
// Argument checks.
// ---------------------------------------------------------------------------------------

/// Hash of the arguments, compared across ranks: a generator called with different
/// arguments on different ranks would otherwise build mismatched partitions and fail
/// somewhere much harder to understand (or hang).
class ArgHash {
 public:
  ArgHash& add(uint64_t v) {
    h_ = mix64(h_ ^ (v + kGolden));
    return *this;
  }
  ArgHash& add(int64_t v) { return add(static_cast<uint64_t>(v)); }
  ArgHash& add(int v) { return add(static_cast<uint64_t>(static_cast<int64_t>(v))); }
  ArgHash& add(bool v) { return add(static_cast<uint64_t>(v ? 1 : 0)); }
  ArgHash& add(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0x5eed5eed5eed5eedULL;
};

/// Collective. Throws the same InputError on every rank if any rank's `local_error` is
/// non-empty or if the argument hashes differ. The common (valid) path costs one
/// allreduce: the error flag and max(h), max(~h) = ~min(h) travel together.
void agree_args(MPI_Comm comm, const char* generator, const std::string& local_error, const ArgHash& args) {
  uint64_t local[3] = {local_error.empty() ? 0ULL : 1ULL, args.value(), ~args.value()};
  uint64_t global[3];
  SPC_MPI(MPI_Allreduce(local, global, 3, MPI_UINT64_T, MPI_MAX, comm));
  if (global[0] != 0) agree(comm, local_error);  // throws on every rank
  if (global[1] != ~global[2])
    throw InputError(std::string(generator) + ": arguments differ across ranks (every rank must pass the same ones)");
}

/// n = a*b*... with overflow detection; the limit leaves headroom for index arithmetic.
bool checked_product(std::initializer_list<int64_t> factors, int64_t* out) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t n = 1;
  for (int64_t f : factors) {
    if (f <= 0) return false;
    if (n > kLimit / f) return false;
    n *= f;
  }
  *out = n;
  return true;
}

/// Collective. The entries this rank is about to generate, against the memory of its node,
/// before any is allocated: the triplets and the CSR built from them (values, column ids
/// and the row pointers of `local_rows`). A clear error on every rank, with the bytes, where
/// a blind reserve would end in std::bad_alloc or the OOM killer.
void require_entries(MPI_Comm comm, const std::string& what, double local_entries, int64_t local_rows) {
  const double bytes = local_entries * static_cast<double>(sizeof(Triplet<double>) + sizeof(double) + sizeof(int32_t)) +
                       static_cast<double>(local_rows + 1) * static_cast<double>(sizeof(int64_t));
  require_estimated_memory(comm, bytes, what,
                 "a smaller matrix, or more nodes");
}

/// Rows [begin, end) this rank owns under the balanced partition of n rows.
struct OwnedRows {
  RowPartition part;
  int64_t begin, end;
};
OwnedRows owned_rows(MPI_Comm comm, int64_t n) {
  OwnedRows r{RowPartition::balanced(n, comm_size(comm)), 0, 0};
  const int me = comm_rank(comm);
  r.begin = r.part.begin(me);
  r.end = r.part.end(me);
  return r;
}

// ---------------------------------------------------------------------------------------
// Stencils on structured grids.
// ---------------------------------------------------------------------------------------

struct StencilPoint {
  int dx, dy, dz;
  double val;
};

/// Applies a constant-coefficient stencil on an nx*ny*nz grid with Dirichlet boundary
/// (points outside the grid are dropped) and natural ordering x + nx*(y + ny*z).
DistCsr<double> build_stencil(MPI_Comm comm, int64_t nx, int64_t ny, int64_t nz,
                              const std::vector<StencilPoint>& stencil) {
  const int64_t n = nx * ny * nz;  // already checked by the caller
  OwnedRows own = owned_rows(comm, n);
  require_entries(comm,
                  "a " + std::to_string(nx) + " x " + std::to_string(ny) + " x " + std::to_string(nz) + " grid's " +
                      std::to_string(stencil.size()) + "-point stencil matrix",
                  static_cast<double>(own.end - own.begin) * static_cast<double>(stencil.size()), own.end - own.begin);
  std::vector<Triplet<double>> entries;
  entries.reserve(static_cast<size_t>(own.end - own.begin) * stencil.size());
  for (int64_t row = own.begin; row < own.end; ++row) {
    const int64_t x = row % nx, y = (row / nx) % ny, z = row / (nx * ny);
    for (const auto& s : stencil) {
      const int64_t cx = x + s.dx, cy = y + s.dy, cz = z + s.dz;
      if (cx < 0 || cx >= nx || cy < 0 || cy >= ny || cz < 0 || cz >= nz) continue;
      entries.push_back({row, cx + nx * (cy + ny * cz), s.val});
    }
  }
  // Stencil points are distinct, so `sum` never merges anything; were that ever broken,
  // summing would show up as a wrong value in the exact-value tests instead of hiding.
  return DistCsr<double>::from_triplets(comm, own.part, own.part, std::move(entries), Duplicates::sum);
}

/// The process grid of a weak-scaled generator: `nparts` factored into `dims` sides as
/// nearly equal as possible (largest prime factors first, each onto the currently smallest
/// side; the same rule as MPI_Dims_create, computed locally so every rank gets the same
/// grid without a call). Sides in decreasing order, unused ones 1.
std::array<int64_t, 3> process_grid(int nparts, int dims) {
  std::vector<int64_t> primes;
  int64_t rest = nparts;
  for (int64_t f = 2; f * f <= rest; ++f)
    while (rest % f == 0) primes.push_back(f), rest /= f;
  if (rest > 1) primes.push_back(rest);
  std::array<int64_t, 3> side{1, 1, 1};
  for (auto it = primes.rbegin(); it != primes.rend(); ++it)
    *std::min_element(side.begin(), side.begin() + dims) *= *it;
  std::sort(side.begin(), side.begin() + dims, std::greater<>());
  return side;
}

/// A stencil on a grid of P blocks of bx*by*bz points, one block per rank, as a real code
/// partitions it (Hypre's GenerateLaplacian27pt / GenerateRotate7pt over a process grid):
/// the global grid is (PX*bx) x (PY*by) x (PZ*bz) with the process grid of process_grid(),
/// rank r = px + PX*(py + PY*pz) owns block (px, py, pz), and its rows are numbered
/// contiguously, lexicographically inside the block (row = r*b + lx + bx*(ly + by*lz)), so
/// the row partition is P equal blocks and the halo is the block's faces, edges and corners.
/// Dirichlet boundary, like build_stencil.
DistCsr<double> build_block_stencil(MPI_Comm comm, int64_t bx, int64_t by, int64_t bz, int dims,
                                    const std::vector<StencilPoint>& stencil) {
  const int nparts = comm_size(comm), me = comm_rank(comm);
  const auto pg = process_grid(nparts, dims);
  const int64_t b = bx * by * bz;  // checked by the caller against 2^62 / P
  const RowPartition part = RowPartition::balanced(b * nparts, nparts);
  require_entries(comm,
                  "a weak-scaled " + std::to_string(stencil.size()) + "-point stencil of " + std::to_string(bx) + " x " +
                      std::to_string(by) + " x " + std::to_string(bz) + " points per rank",
                  static_cast<double>(b) * static_cast<double>(stencil.size()), b);
  const int64_t px = me % pg[0], py = (me / pg[0]) % pg[1], pz = me / (pg[0] * pg[1]);
  const int64_t nx = pg[0] * bx, ny = pg[1] * by, nz = pg[2] * bz;
  auto gid = [&](int64_t x, int64_t y, int64_t z) {
    const int64_t owner = x / bx + pg[0] * (y / by + pg[1] * (z / bz));
    return owner * b + x % bx + bx * (y % by + by * (z % bz));
  };
  std::vector<Triplet<double>> entries;
  entries.reserve(static_cast<size_t>(b) * stencil.size());
  for (int64_t lz = 0; lz < bz; ++lz)
    for (int64_t ly = 0; ly < by; ++ly)
      for (int64_t lx = 0; lx < bx; ++lx) {
        const int64_t x = px * bx + lx, y = py * by + ly, z = pz * bz + lz;
        const int64_t row = gid(x, y, z);
        for (const auto& s : stencil) {
          const int64_t cx = x + s.dx, cy = y + s.dy, cz = z + s.dz;
          if (cx < 0 || cx >= nx || cy < 0 || cy >= ny || cz < 0 || cz >= nz) continue;
          entries.push_back({row, gid(cx, cy, cz), s.val});
        }
      }
  return DistCsr<double>::from_triplets(comm, part, part, std::move(entries), Duplicates::sum);
}

/// Constant Laplacian stencil: the center is (points - 1), every other point -1, so that
/// rows away from the boundary sum to zero.
std::vector<StencilPoint> laplacian_stencil(int dims, bool full) {
  std::vector<StencilPoint> st;
  const int zr = dims == 3 ? 1 : 0;
  for (int dz = -zr; dz <= zr; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int manhattan = std::abs(dx) + std::abs(dy) + std::abs(dz);
        if (!full && manhattan > 1) continue;
        st.push_back({dx, dy, dz, -1.0});
      }
  const double center = static_cast<double>(st.size()) - 1.0;
  for (auto& s : st)
    if (s.dx == 0 && s.dy == 0 && s.dz == 0) s.val = center;
  return st;
}

/// The 7-point rotated anisotropic diffusion stencil.
std::vector<StencilPoint> rotate_stencil(double angle_deg, double eps) {
  // Diffusion with anisotropy eps rotated by `angle`, discretized as in Hypre's
  // GenerateRotate7pt (par_rotate_7pt.c). The expressions and their evaluation order
  // follow Hypre's so that the values agree to the last bit, not just to rounding.
  const double pi = 4.0 * std::atan(1.0);
  const double x = pi * angle_deg / 180.0;
  const double s = std::sin(x), c = std::cos(x);
  const double ac = -(c * c + eps * s * s), bc = 2.0 * (1.0 - eps) * s * c, cc = -(s * s + eps * c * c);
  const double center = -2 * (2 * ac + bc + 2 * cc);
  const double east_west = 2 * ac + bc, north_south = bc + 2 * cc;
  const double diagonal = -bc;  // only the (-1,-1)/(+1,+1) diagonal: the stencil has 7 points
  return {
      {-1, -1, 0, diagonal}, {0, -1, 0, north_south}, {-1, 0, 0, east_west}, {0, 0, 0, center},
      {1, 0, 0, east_west},  {0, 1, 0, north_south},  {1, 1, 0, diagonal}};
}

// ---------------------------------------------------------------------------------------
// R-MAT vertex relabeling.
//
// A relabeling that is identical on every rank without a table: a keyed bijection on
// scale-bit integers, in the spirit of the Graph500 reference code's "scramble" (odd
// multipliers mod 2^scale interleaved with bit reversal). Each step is invertible on
// [0, 2^scale): multiplication by an odd number and addition mod 2^scale, reversal of the
// low `scale` bits, and x ^= x >> k (k >= 1). Multiplication only carries entropy from low
// to high bits; the reversal sends it back down, so a few rounds mix all bits. Unlike a
// Fisher-Yates table this needs O(1) memory per rank and works up to scale 40.
// ---------------------------------------------------------------------------------------
class VertexScramble {
 public:
  VertexScramble(uint64_t seed, int scale) : scale_(scale), mask_((uint64_t{1} << scale) - 1) {
    KeyedRng rng(seed, Domain::rmat_permute, static_cast<uint64_t>(scale));
    for (auto& r : rounds_) {
      r.mul = rng.next() | 1;  // odd: invertible mod 2^scale
      r.add = rng.next();
    }
  }
  uint64_t operator()(uint64_t v) const {
    for (const auto& r : rounds_) {
      v = (v * r.mul + r.add) & mask_;
      v = reverse_low_bits(v);
      v ^= v >> ((scale_ + 1) / 2);
    }
    return v;
  }

 private:
  uint64_t reverse_low_bits(uint64_t v) const {
    uint64_t r = 0;
    for (int i = 0; i < scale_; ++i, v >>= 1) r = (r << 1) | (v & 1);
    return r;
  }
  struct Round {
    uint64_t mul, add;
  };
  int scale_;
  uint64_t mask_;
  std::array<Round, 4> rounds_{};
};

// ---------------------------------------------------------------------------------------
// Spec parsing.
// ---------------------------------------------------------------------------------------

const char* const kValidSpecs =
    "valid forms: lap2d:NX,NY | lap2d9:NX,NY | lap3d:NX,NY,NZ | lap3d27:NX,NY,NZ | "
    "rotate:NX,NY[,ANGLE_DEG[,EPS]] | lap3dw:BX,BY,BZ | lap3d27w:BX,BY,BZ | "
    "rotatew:BX,BY[,ANGLE_DEG[,EPS]] (w: per rank) | er:N,DENSITY[,SEED] | moore:DIMS,RADIUS,SIDE | "
    "rmat:SCALE[,EDGE_FACTOR[,SEED]]";

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

template <class Int>
Int parse_int(const std::string& field, const char* what) {
  Int v{};
  const char* first = field.data();
  const char* last = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (field.empty() || ec != std::errc() || ptr != last)
    throw InputError(std::string(what) + " '" + field + "' is not an integer in range");
  return v;
}

double parse_double(const std::string& field, const char* what) {
  double v = 0;
  if (!sparsecomm::parse_double(field, v))  // whole field, finite (core/parse.hpp)
    throw InputError(std::string(what) + " '" + field + "' is not a finite number");
  return v;
}

struct Spec {
  std::string name;
  std::vector<std::string> fields;
};

Spec split_spec(const std::string& spec) {
  Spec s;
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) throw InputError("missing ':' after the generator name");
  s.name = trim(spec.substr(0, colon));
  std::string rest = spec.substr(colon + 1);
  size_t pos = 0;
  while (true) {
    const size_t comma = rest.find(',', pos);
    s.fields.push_back(trim(rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return s;
}

void expect_fields(const Spec& s, size_t lo, size_t hi) {
  if (s.fields.size() < lo || s.fields.size() > hi) {
    std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    throw InputError("'" + s.name + "' takes " + want + " comma-separated arguments, got " +
                     std::to_string(s.fields.size()));
  }
}

/// A parsed spec: its generator with the arguments bound.
using Generate = std::function<DistCsr<double>(MPI_Comm)>;

/// The grid sides NX, NY[, NZ] of a stencil spec: its first `dims` fields.
std::array<int64_t, 3> sides(const Spec& s, size_t dims) {
  const char* const name[] = {"NX", "NY", "NZ"};
  std::array<int64_t, 3> n{};
  for (size_t d = 0; d < dims; ++d) n[d] = parse_int<int64_t>(s.fields[d], name[d]);
  return n;
}

/// Local. The generator of `spec`; InputError for a malformed one.
Generate parse_spec(const std::string& spec) {
  const Spec s = split_spec(spec);
  if (s.name == "lap2d" || s.name == "lap2d9") {
    expect_fields(s, 2, 2);
    const auto n = sides(s, 2);
    const int points = s.name == "lap2d" ? 5 : 9;
    return [=](MPI_Comm c) { return laplacian_2d(c, n[0], n[1], points); };
  }
  // A name ending in 'w' (lap3dw, lap3d27w, rotatew): the same arguments as block sides
  // per rank (weak scaling).
  const bool weak = !s.name.empty() && s.name.back() == 'w';
  if (s.name == "lap3d" || s.name == "lap3d27" || s.name == "lap3dw" || s.name == "lap3d27w") {
    expect_fields(s, 3, 3);
    const auto n = sides(s, 3);
    const int points = s.name.compare(0, 7, "lap3d27") == 0 ? 27 : 7;
    if (weak) return [=](MPI_Comm c) { return laplacian_3d_blocks(c, n[0], n[1], n[2], points); };
    return [=](MPI_Comm c) { return laplacian_3d(c, n[0], n[1], n[2], points); };
  }
  if (s.name == "rotate" || s.name == "rotatew") {
    expect_fields(s, 2, 4);
    const auto n = sides(s, 2);
    const double angle = s.fields.size() > 2 ? parse_double(s.fields[2], "ANGLE_DEG") : 45.0;
    const double eps = s.fields.size() > 3 ? parse_double(s.fields[3], "EPS") : 0.001;
    if (weak) return [=](MPI_Comm c) { return rotated_anisotropic_2d_blocks(c, n[0], n[1], angle, eps); };
    return [=](MPI_Comm c) { return rotated_anisotropic_2d(c, n[0], n[1], angle, eps); };
  }
  if (s.name == "er") {
    expect_fields(s, 2, 3);
    const auto n = parse_int<int64_t>(s.fields[0], "N");
    const double density = parse_double(s.fields[1], "DENSITY");
    const uint64_t seed = s.fields.size() > 2 ? parse_int<uint64_t>(s.fields[2], "SEED") : 1;
    return [=](MPI_Comm c) { return erdos_renyi(c, n, density, seed); };
  }
  if (s.name == "moore") {
    expect_fields(s, 3, 3);
    const int dims = parse_int<int>(s.fields[0], "DIMS"), radius = parse_int<int>(s.fields[1], "RADIUS");
    const auto side = parse_int<int64_t>(s.fields[2], "SIDE");
    return [=](MPI_Comm c) { return moore(c, dims, radius, side); };
  }
  if (s.name == "rmat") {
    expect_fields(s, 1, 3);
    RmatParams rp;
    rp.scale = parse_int<int>(s.fields[0], "SCALE");
    if (s.fields.size() > 1) rp.edge_factor = parse_int<int>(s.fields[1], "EDGE_FACTOR");
    if (s.fields.size() > 2) rp.seed = parse_int<uint64_t>(s.fields[2], "SEED");
    return [rp](MPI_Comm c) { return rmat(c, rp); };
  }
  throw InputError("unknown generator '" + s.name + "'");
}

/// Collective argument checks of a weak-scaled generator: positive block sides, and a
/// global grid (block times P) below 2^62 points.
void agree_block_args(MPI_Comm comm, const char* generator, std::initializer_list<int64_t> block, ArgHash h,
                      std::string err) {
  int64_t b = 0, n = 0;
  if (!err.empty()) err = std::string(generator) + ": " + err;
  else if (!checked_product(block, &b) || !checked_product({b, static_cast<int64_t>(comm_size(comm))}, &n))
    err = std::string(generator) + ": block sides must be positive and the whole grid (block x ranks) below 2^62 points";
  for (int64_t v : block) h.add(v);
  agree_args(comm, generator, err, h);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Public generators.
// ---------------------------------------------------------------------------------------

DistCsr<double> laplacian_2d(MPI_Comm comm, int64_t nx, int64_t ny, int points) {
  std::string err;
  int64_t n = 0;
  if (points != 5 && points != 9)
    err = "laplacian_2d: points must be 5 or 9, got " + std::to_string(points);
  else if (!checked_product({nx, ny}, &n))
    err = "laplacian_2d: grid " + std::to_string(nx) + " x " + std::to_string(ny) +
          " must have positive sides and fewer than 2^62 points";
  agree_args(comm, "laplacian_2d", err, ArgHash().add(nx).add(ny).add(points));
  return build_stencil(comm, nx, ny, 1, laplacian_stencil(2, points == 9));
}

DistCsr<double> laplacian_3d(MPI_Comm comm, int64_t nx, int64_t ny, int64_t nz, int points) {
  std::string err;
  int64_t n = 0;
  if (points != 7 && points != 27)
    err = "laplacian_3d: points must be 7 or 27, got " + std::to_string(points);
  else if (!checked_product({nx, ny, nz}, &n))
    err = "laplacian_3d: grid " + std::to_string(nx) + " x " + std::to_string(ny) + " x " + std::to_string(nz) +
          " must have positive sides and fewer than 2^62 points";
  agree_args(comm, "laplacian_3d", err, ArgHash().add(nx).add(ny).add(nz).add(points));
  return build_stencil(comm, nx, ny, nz, laplacian_stencil(3, points == 27));
}

DistCsr<double> rotated_anisotropic_2d(MPI_Comm comm, int64_t nx, int64_t ny, double angle_deg, double eps) {
  std::string err;
  int64_t n = 0;
  if (!checked_product({nx, ny}, &n))
    err = "rotated_anisotropic_2d: grid " + std::to_string(nx) + " x " + std::to_string(ny) +
          " must have positive sides and fewer than 2^62 points";
  else if (!std::isfinite(angle_deg) || !std::isfinite(eps))
    err = "rotated_anisotropic_2d: angle and eps must be finite numbers";
  agree_args(comm, "rotated_anisotropic_2d", err, ArgHash().add(nx).add(ny).add(angle_deg).add(eps));

  return build_stencil(comm, nx, ny, 1, rotate_stencil(angle_deg, eps));
}

DistCsr<double> laplacian_3d_blocks(MPI_Comm comm, int64_t bx, int64_t by, int64_t bz, int points) {
  agree_block_args(comm, "laplacian_3d_blocks", {bx, by, bz}, ArgHash().add(points),
                   points == 7 || points == 27 ? "" : "points must be 7 or 27, got " + std::to_string(points));
  return build_block_stencil(comm, bx, by, bz, 3, laplacian_stencil(3, points == 27));
}

DistCsr<double> rotated_anisotropic_2d_blocks(MPI_Comm comm, int64_t bx, int64_t by, double angle_deg, double eps) {
  agree_block_args(comm, "rotated_anisotropic_2d_blocks", {bx, by}, ArgHash().add(angle_deg).add(eps),
                   std::isfinite(angle_deg) && std::isfinite(eps) ? "" : "angle and eps must be finite numbers");
  return build_block_stencil(comm, bx, by, 1, 2, rotate_stencil(angle_deg, eps));
}

DistCsr<double> erdos_renyi(MPI_Comm comm, int64_t n, double density, uint64_t seed) {
  std::string err;
  if (n < 0) err = "erdos_renyi: negative number of vertices " + std::to_string(n);
  else if (!(density >= 0.0 && density <= 1.0))  // also rejects NaN
    err = "erdos_renyi: density must be in [0, 1], got " + std::to_string(density);
  agree_args(comm, "erdos_renyi", err, ArgHash().add(n).add(density).add(seed));

  OwnedRows own = owned_rows(comm, n);
  std::vector<Triplet<double>> entries;
  const double expected = density * static_cast<double>(std::max<int64_t>(n - 1, 0));
  require_entries(comm, "erdos_renyi: " + std::to_string(n) + " vertices at density " + std::to_string(density),
                  static_cast<double>(own.end - own.begin) * expected, own.end - own.begin);
  entries.reserve(static_cast<size_t>(static_cast<double>(own.end - own.begin) * (expected * 1.1 + 1.0)));
  const int64_t candidates = n - 1;  // columns j != i, indexed k in [0, n-1)
  const double log_q = std::log1p(-density);
  for (int64_t row = own.begin; row < own.end; ++row) {
    if (density == 0.0) break;
    if (density == 1.0) {
      for (int64_t j = 0; j < n; ++j)
        if (j != row) entries.push_back({row, j, 1.0});
      continue;
    }
    // Geometric skipping (Batagelj & Brandes, "Efficient generation of large random
    // networks", Phys. Rev. E 71, 2005): the gap between successive successes of
    // Bernoulli(p) trials is geometric, floor(log(1-u)/log(1-p)), so a row costs
    // O(its edges) instead of O(n). The stream is keyed by the row, never shared.
    KeyedRng rng(seed, Domain::erdos_renyi, static_cast<uint64_t>(row));
    int64_t k = -1;
    while (true) {
      const double skip = std::floor(std::log1p(-rng.uniform()) / log_q);
      // Compare in floating point first: a huge skip must not overflow the cast.
      if (skip >= static_cast<double>(candidates - 1 - k)) break;
      k += 1 + static_cast<int64_t>(skip);
      entries.push_back({row, k < row ? k : k + 1, 1.0});
    }
  }
  return DistCsr<double>::from_triplets(comm, own.part, own.part, std::move(entries), Duplicates::keep_first);
}

DistCsr<double> moore(MPI_Comm comm, int dims, int radius, int64_t side) {
  std::string err;
  int64_t n = 0;
  if (dims < 1 || dims > 6) err = "moore: dims must be in 1..6, got " + std::to_string(dims);
  else if (radius < 1) err = "moore: radius must be at least 1, got " + std::to_string(radius);
  else if (side < 1) err = "moore: side must be at least 1, got " + std::to_string(side);
  else {
    bool ok = true;
    n = 1;
    for (int d = 0; d < dims && ok; ++d) {
      if (n > (int64_t{1} << 62) / side) ok = false;
      else n *= side;
    }
    if (!ok) err = "moore: side^dims must be below 2^62";
  }
  agree_args(comm, "moore", err, ArgHash().add(dims).add(radius).add(side));

  // Per dimension, the distinct coordinates within distance `radius` on the ring of length
  // `side`. When 2*radius+1 >= side the window wraps onto itself and covers the whole ring;
  // listing each coordinate once is what removes the coinciding offsets, and the
  // neighborhood is the product of the per-dimension sets (Chebyshev distance <= radius in
  // every coordinate), minus the vertex itself.
  const int64_t window = 2 * static_cast<int64_t>(radius) + 1;
  const int64_t per_dim = std::min(window, side);
  OwnedRows own = owned_rows(comm, n);
  int64_t degree_bound = 1;
  for (int d = 0; d < dims; ++d) degree_bound *= per_dim;
  require_entries(comm,
                  "moore: " + std::to_string(dims) + "-d grid of side " + std::to_string(side) + ", radius " +
                      std::to_string(radius),
                  static_cast<double>(own.end - own.begin) * static_cast<double>(degree_bound - 1), own.end - own.begin);
  std::vector<Triplet<double>> entries;
  entries.reserve(static_cast<size_t>((own.end - own.begin) * (degree_bound - 1)));

  std::vector<int64_t> stride(static_cast<size_t>(dims));
  for (int d = 0; d < dims; ++d) stride[d] = d == 0 ? 1 : stride[d - 1] * side;
  // coords[d][t]: the t-th distinct neighbor coordinate in dimension d (times stride[d]).
  std::vector<std::vector<int64_t>> coords(static_cast<size_t>(dims), std::vector<int64_t>(per_dim));
  std::vector<int64_t> idx(static_cast<size_t>(dims));
  for (int64_t v = own.begin; v < own.end; ++v) {
    int64_t rest = v;
    for (int d = 0; d < dims; ++d) {
      const int64_t c = rest % side;
      rest /= side;
      if (window >= side) {
        for (int64_t t = 0; t < side; ++t) coords[d][t] = t * stride[d];
      } else {
        for (int64_t t = 0; t < window; ++t) coords[d][t] = (((c - radius + t) % side + side) % side) * stride[d];
      }
    }
    // Odometer over the product of the per-dimension sets.
    std::fill(idx.begin(), idx.end(), 0);
    while (true) {
      int64_t u = 0;
      for (int d = 0; d < dims; ++d) u += coords[d][idx[d]];
      if (u != v) entries.push_back({v, u, 1.0});
      int d = 0;
      while (d < dims && ++idx[d] == per_dim) idx[d++] = 0;
      if (d == dims) break;
    }
  }
  return DistCsr<double>::from_triplets(comm, own.part, own.part, std::move(entries), Duplicates::keep_first);
}

DistCsr<double> rmat(MPI_Comm comm, const RmatParams& p) {
  std::string err;
  const double sum = p.a + p.b + p.c + p.d;
  if (!(p.a >= 0 && p.b >= 0 && p.c >= 0 && p.d >= 0)) {
    err = "rmat: initiator probabilities a, b, c, d must be non-negative";
  } else if (!(std::fabs(sum - 1.0) <= 1e-9)) {
    std::ostringstream os;
    os.precision(15);  // enough to show a 1e-9 deviation, without binary noise
    os << "rmat: initiator probabilities a + b + c + d must sum to 1, got " << sum;
    err = os.str();
  } else if (p.scale < 1 || p.scale > 40) {
    err = "rmat: scale must be in 1..40, got " + std::to_string(p.scale);
  } else if (p.edge_factor < 1) {
    err = "rmat: edge_factor must be at least 1, got " + std::to_string(p.edge_factor);
  } else if (static_cast<int64_t>(p.edge_factor) > (int64_t{1} << 56) >> p.scale) {
    err = "rmat: edge_factor * 2^scale must be at most 2^56";
  }
  agree_args(comm, "rmat", err,
             ArgHash().add(p.scale).add(p.edge_factor).add(p.a).add(p.b).add(p.c).add(p.d).add(p.seed)
                 .add(p.symmetrize).add(p.remove_self_loops).add(p.permute));

  const int64_t n = int64_t{1} << p.scale;
  const int64_t num_edges = static_cast<int64_t>(p.edge_factor) << p.scale;
  const int nranks = comm_size(comm), me = comm_rank(comm);
  // Edges are generated by index, so any split of [0, num_edges) gives the same edge set;
  // a balanced slice per rank keeps the work even, then entries travel to their row owners.
  const RowPartition edge_slices = RowPartition::balanced(num_edges, nranks);
  const VertexScramble scramble(p.seed, p.scale);
  const double ab = p.a + p.b, abc = p.a + p.b + p.c;
  require_entries(comm, "rmat: scale " + std::to_string(p.scale) + ", edge factor " + std::to_string(p.edge_factor),
                  static_cast<double>(edge_slices.local_size(me)) * (p.symmetrize ? 2.0 : 1.0),
                  RowPartition::balanced(n, nranks).local_size(me));
  std::vector<Triplet<double>> entries;
  entries.reserve(static_cast<size_t>(edge_slices.local_size(me) * (p.symmetrize ? 2 : 1)));
  for (int64_t e = edge_slices.begin(me); e < edge_slices.end(me); ++e) {
    // R-MAT (Chakrabarti, Zhan & Faloutsos, SDM 2004; Graph500 Kronecker generator): at
    // each of `scale` levels pick one quadrant of the adjacency matrix with probabilities
    // a (top-left), b (top-right), c (bottom-left), d (bottom-right), which fixes one bit
    // of the row and one bit of the column. One keyed stream per edge index.
    KeyedRng rng(p.seed, Domain::rmat_edge, static_cast<uint64_t>(e));
    uint64_t u = 0, v = 0;
    for (int level = 0; level < p.scale; ++level) {
      const double r = rng.uniform();
      const uint64_t row_bit = r >= ab ? 1 : 0;
      const uint64_t col_bit = (r >= p.a && r < ab) || r >= abc ? 1 : 0;
      u = (u << 1) | row_bit;
      v = (v << 1) | col_bit;
    }
    if (p.permute) {
      u = scramble(u);
      v = scramble(v);
    }
    if (p.remove_self_loops && u == v) continue;
    const int64_t i = static_cast<int64_t>(u), j = static_cast<int64_t>(v);
    entries.push_back({i, j, 1.0});
    if (p.symmetrize && i != j) entries.push_back({j, i, 1.0});
  }
  const RowPartition part = RowPartition::balanced(n, nranks);
  // A repeated edge is one edge: keep_first, and every value is 1.
  return DistCsr<double>::from_distributed_triplets(comm, part, part, std::move(entries), Duplicates::keep_first);
}

DistCsr<double> from_spec(MPI_Comm comm, const std::string& spec) {
  // Parse locally, agree on the outcome, then call the generator (which agrees again on its
  // own argument checks; those messages get the valid forms appended here).
  Generate generate;
  std::string err;
  try {
    generate = parse_spec(spec);
  } catch (const InputError& e) {
    err = "generator spec '" + spec + "': " + e.what() + "; " + kValidSpecs;
  }
  agree(comm, err);
  try {
    return generate(comm);
  } catch (const InputError& e) {
    // Every rank is here together: the generators agree before throwing.
    throw InputError("generator spec '" + spec + "': " + e.what() + "; " + kValidSpecs);
  }
}

}  // namespace sparsecomm::gen

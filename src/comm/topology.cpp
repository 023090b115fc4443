#include "sparsecomm/comm/topology.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <sstream>

#include "core/hash.hpp"
#include "core/parse.hpp"
#include "sparsecomm/comm/sdde.hpp"

namespace sparsecomm {

namespace {

using detail::splitmix64;

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

Topology Topology::from_destinations(MPI_Comm comm, std::vector<int> destinations, bool allow_self,
                                     const std::string& strategy) {
  const int p = comm_size(comm), me = comm_rank(comm);
  sort_unique(destinations);
  std::string err;
  for (int d : destinations) {
    if (d < 0 || d >= p) err = "Topology: destination rank " + std::to_string(d) + " out of range [0, " + std::to_string(p) + ")";
    else if (d == me && !allow_self) err = "Topology: self-loop at rank " + std::to_string(me) + " (pass allow_self to copy locally)";
  }
  agree(comm, err);
  Sdde sdde(comm, Locality::parse(comm, "flat"));
  SparseMessages<int> out;
  for (int d : destinations) out.add(d, nullptr, 0);  // zero-length: "I send to you"
  auto got = sdde.exchange(out, strategy);
  Topology t;
  t.destinations = std::move(destinations);
  t.sources = got.ranks;  // sorted by the SDDE
  return t;
}

Topology Topology::from_pattern(const Pattern& p) {
  Topology t;
  t.destinations = p.send().ranks;
  t.sources = p.recv().ranks;
  return t;
}

Topology Topology::from_sources(MPI_Comm comm, std::vector<int> sources, const std::string& strategy) {
  sort_unique(sources);
  // Reverse direction: every source learns that it sends to me.
  Sdde sdde(comm, Locality::parse(comm, "flat"));
  SparseMessages<int> out;
  for (int r : sources) out.add(r, nullptr, 0);
  auto got = sdde.exchange(out, strategy);
  Topology t;
  t.sources = std::move(sources);
  t.destinations = got.ranks;
  return t;
}

namespace {

void check_density(double density) {
  if (!(density >= 0.0 && density <= 1.0))
    throw InputError("Topology: Erdős–Rényi density must be in [0, 1], got " + std::to_string(density));
}

// Whether the edge from -> to exists: a hash of the ordered pair, so that either end can
// tell without asking the other.
bool er_edge(int from, int to, double density, uint64_t seed) {
  const uint64_t h =
      splitmix64(seed * 0x100000001b3ull ^ splitmix64((static_cast<uint64_t>(from) << 32) | static_cast<uint32_t>(to)));
  return static_cast<double>(h >> 11) * 0x1.0p-53 < density;
}

// The ranks j with an edge rank -> j (outgoing) or j -> rank, in rank order.
std::vector<int> er_neighbors(int rank, int p, double density, uint64_t seed, bool outgoing) {
  check_density(density);
  std::vector<int> out;
  for (int j = 0; j < p; ++j)
    if (j != rank && (outgoing ? er_edge(rank, j, density, seed) : er_edge(j, rank, density, seed))) out.push_back(j);
  return out;
}

}  // namespace

std::vector<int> erdos_renyi_destinations(int rank, int p, double density, uint64_t seed) {
  return er_neighbors(rank, p, density, seed, true);
}

std::vector<int> erdos_renyi_sources(int rank, int p, double density, uint64_t seed) {
  return er_neighbors(rank, p, density, seed, false);
}

Topology Topology::erdos_renyi(MPI_Comm comm, double density, uint64_t seed) {
  // Both sides from the edge hash: no exchange (at 4,096 simulated ranks the SDDE that
  // from_destinations would run is a cost of its own).
  const int me = comm_rank(comm), p = comm_size(comm);
  Topology t;
  t.destinations = erdos_renyi_destinations(me, p, density, seed);
  t.sources = erdos_renyi_sources(me, p, density, seed);
  return t;
}

std::vector<int> balanced_dims(int p, int ndims) {
  if (p < 1 || ndims < 1) throw InputError("balanced_dims: need p >= 1 and dims >= 1");
  // Prime factors, largest first, each to the currently smallest side: sides as even as
  // this greedy makes them (the same shapes as MPI_Dims_create for the sizes we use, but
  // ours, so that MPI, SMPI and the plan statistics build the same torus).
  std::vector<int> primes;
  for (int n = p, f = 2; n > 1;) {
    if (static_cast<int64_t>(f) * f > n) {
      primes.push_back(n);
      break;
    }
    if (n % f == 0) primes.push_back(f), n /= f;
    else ++f;
  }
  std::sort(primes.rbegin(), primes.rend());
  std::vector<int> side(static_cast<size_t>(ndims), 1);
  for (int f : primes) *std::min_element(side.begin(), side.end()) *= f;
  std::sort(side.rbegin(), side.rend());
  return side;
}

std::vector<int> moore_destinations(int rank, int p, int dims, int radius) {
  if (dims < 1 || dims > 6) throw InputError("Topology: Moore dims must be in 1..6, got " + std::to_string(dims));
  if (radius < 1) throw InputError("Topology: Moore radius must be >= 1, got " + std::to_string(radius));
  const std::vector<int> side = balanced_dims(p, dims);
  // Coordinates: first dimension fastest.
  std::vector<int> c(static_cast<size_t>(dims));
  for (int d = 0, r = rank; d < dims; ++d) c[d] = r % side[d], r /= side[d];
  // Offsets per dimension: -radius..radius, or every residue once where the window wraps
  // around the whole side (else the walk would cost (2 radius + 1)^dims whatever p is).
  std::vector<int> lo(static_cast<size_t>(dims)), hi(static_cast<size_t>(dims));
  for (int d = 0; d < dims; ++d) {
    const bool wraps = 2 * static_cast<int64_t>(radius) + 1 >= side[d];
    lo[d] = wraps ? 0 : -radius, hi[d] = wraps ? side[d] - 1 : radius;
  }
  std::set<int> dest;
  std::vector<int> off(lo);
  while (true) {
    int r = 0, stride = 1;
    for (int d = 0; d < dims; ++d) {
      const int x = ((c[d] + off[d]) % side[d] + side[d]) % side[d];
      r += x * stride;
      stride *= side[d];
    }
    if (r != rank) dest.insert(r);
    int d = 0;
    while (d < dims && off[d] == hi[d]) off[d] = lo[d], ++d;
    if (d == dims) break;
    ++off[d];
  }
  return {dest.begin(), dest.end()};
}

Topology Topology::moore(MPI_Comm comm, int dims, int radius) {
  Topology t;
  t.destinations = moore_destinations(comm_rank(comm), comm_size(comm), dims, radius);
  t.sources = t.destinations;  // symmetric
  return t;
}

namespace {

struct Spec {
  bool er = false;
  double density = 0;
  uint64_t seed = 1;
  int dims = 0, radius = 0;
};

Spec parse_spec(const std::string& spec) {
  const std::string valid = "valid forms: er:<density>[,<seed>], moore:<dims>,<radius>";
  auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  std::vector<std::string> args;
  if (colon != std::string::npos) {
    std::stringstream ss(spec.substr(colon + 1));
    std::string tok;
    while (std::getline(ss, tok, ',')) args.push_back(tok);
  }
  // Whole-token parsing: "moore:2x,2" or "er:0.1,7s" is malformed, not moore:2,2 / er:0.1,7.
  auto malformed = [&]() { return InputError("Topology: malformed spec '" + spec + "'; " + valid); };
  auto integer = [&](const std::string& tok, int64_t lo, int64_t hi) {
    int64_t v = 0;
    if (!parse_int(tok, v) || v < lo || v > hi) throw malformed();
    return v;
  };
  Spec s;
  if (name == "er" && (args.size() == 1 || args.size() == 2)) {
    s.er = true;
    if (!parse_double(args[0], s.density)) throw malformed();
    s.seed = static_cast<uint64_t>(args.size() == 2 ? integer(args[1], 0, INT64_MAX) : 1);
    return s;
  }
  if (name == "moore" && args.size() == 2) {
    s.dims = static_cast<int>(integer(args[0], INT_MIN, INT_MAX));
    s.radius = static_cast<int>(integer(args[1], INT_MIN, INT_MAX));
    return s;
  }
  if ((name == "er" || name == "moore") && colon != std::string::npos) throw malformed();
  throw InputError("Topology: unknown spec '" + spec + "'; " + valid);
}

}  // namespace

std::vector<int> spec_destinations(const std::string& spec, int rank, int p) {
  const Spec s = parse_spec(spec);
  return s.er ? erdos_renyi_destinations(rank, p, s.density, s.seed) : moore_destinations(rank, p, s.dims, s.radius);
}

Topology Topology::parse(MPI_Comm comm, const std::string& spec) {
  // Every rank parses the same spec: an error is thrown on every rank alike. Both sides
  // are computed locally (Moore is symmetric; an ER edge is a hash of its two ends).
  const Spec s = parse_spec(spec);
  return s.er ? erdos_renyi(comm, s.density, s.seed) : moore(comm, s.dims, s.radius);
}

}  // namespace sparsecomm

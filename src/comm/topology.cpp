#include "comm/topology.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <sstream>

#include "comm/hash.hpp"
#include "comm/parse.hpp"
#include "comm/sdde.hpp"

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

Topology Topology::from_matrix_blocks(const DistCsr<double>& a, const std::string& strategy) {
  // I (block row i) need the B rows of every rank owning one of my ghost columns: those
  // ranks are my sources; the destinations follow from the SDDE.
  std::vector<int> need;
  for (int64_t g : a.ghost_ids()) need.push_back(a.col_partition().owner(g));
  sort_unique(need);
  // Reverse direction: the owners of those columns send to me.
  const int p = comm_size(a.comm());
  Sdde sdde(a.comm(), Locality::parse(a.comm(), "flat"));
  SparseMessages<int> out;
  for (int r : need) out.add(r, nullptr, 0);
  auto got = sdde.exchange(out, strategy);
  (void)p;
  Topology t;
  t.sources = need;
  t.destinations = got.ranks;
  return t;
}

std::vector<int> erdos_renyi_destinations(int rank, int p, double density, uint64_t seed) {
  if (!(density >= 0.0 && density <= 1.0))
    throw InputError("Topology: Erdős–Rényi density must be in [0, 1], got " + std::to_string(density));
  std::vector<int> dest;
  for (int j = 0; j < p; ++j) {
    if (j == rank) continue;
    const uint64_t h = splitmix64(seed * 0x100000001b3ull ^ splitmix64((static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(j)));
    if (static_cast<double>(h >> 11) * 0x1.0p-53 < density) dest.push_back(j);
  }
  return dest;
}

Topology Topology::erdos_renyi(MPI_Comm comm, double density, uint64_t seed) {
  return from_destinations(comm, erdos_renyi_destinations(comm_rank(comm), comm_size(comm), density, seed));
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
  std::set<int> dest;
  std::vector<int> off(static_cast<size_t>(dims), -radius);
  while (true) {
    int r = 0, stride = 1;
    for (int d = 0; d < dims; ++d) {
      const int x = ((c[d] + off[d]) % side[d] + side[d]) % side[d];
      r += x * stride;
      stride *= side[d];
    }
    if (r != rank) dest.insert(r);
    int d = 0;
    while (d < dims && off[d] == radius) off[d++] = -radius;
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

std::vector<int> spec_destinations(const std::string& spec, int rank, int p) {
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
  if (name == "er" && (args.size() == 1 || args.size() == 2)) {
    double density = 0;
    if (!parse_double(args[0], density)) throw malformed();
    const int64_t seed = args.size() == 2 ? integer(args[1], 0, INT64_MAX) : 1;
    return erdos_renyi_destinations(rank, p, density, static_cast<uint64_t>(seed));
  }
  if (name == "moore" && args.size() == 2)
    return moore_destinations(rank, p, static_cast<int>(integer(args[0], INT_MIN, INT_MAX)),
                              static_cast<int>(integer(args[1], INT_MIN, INT_MAX)));
  if ((name == "er" || name == "moore") && colon != std::string::npos) throw malformed();
  throw InputError("Topology: unknown spec '" + spec + "'; " + valid);
}

Topology Topology::parse(MPI_Comm comm, const std::string& spec) {
  // Every rank parses the same spec: an error is thrown on every rank alike.
  std::vector<int> dest = spec_destinations(spec, comm_rank(comm), comm_size(comm));
  if (spec.rfind("moore:", 0) == 0) {  // symmetric: no exchange needed
    Topology t;
    t.sources = dest;
    t.destinations = std::move(dest);
    return t;
  }
  return from_destinations(comm, std::move(dest));
}

}  // namespace sparsecomm

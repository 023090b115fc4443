#include "sparsecomm/comm/locality.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <sstream>

#include "core/parse.hpp"

namespace sparsecomm {

namespace {

const char* const kValidSpecs = "valid forms: node, ppn:<k>, cyclic:<n>, list:<r0>,<r1>,..., flat, single";

int parse_number(const std::string& s, const std::string& spec) {
  int64_t v = 0;
  if (!parse_int(s, v) || v < INT_MIN || v > INT_MAX)
    throw InputError("Locality: bad number '" + s + "' in '" + spec + "'; " + kValidSpecs);
  return static_cast<int>(v);
}

}  // namespace

Locality Locality::build(MPI_Comm comm, const std::vector<int>& labels, std::string description, bool split) {
  Locality l;
  l.rank_ = comm_rank(comm);
  auto t = std::make_shared<Tables>();
  const int p = static_cast<int>(labels.size());
  // Renumber labels in order of first appearance, i.e. by each region's lowest rank.
  std::map<int, int> id;
  t->region_of.resize(p);
  for (int r = 0; r < p; ++r) {
    auto it = id.find(labels[r]);
    if (it == id.end()) it = id.emplace(labels[r], static_cast<int>(id.size())).first;
    t->region_of[r] = it->second;
  }
  const int nreg = static_cast<int>(id.size());
  t->region_start.assign(nreg + 1, 0);
  for (int r = 0; r < p; ++r) ++t->region_start[t->region_of[r] + 1];
  for (int g = 0; g < nreg; ++g) t->region_start[g + 1] += t->region_start[g];
  t->members.resize(p);
  t->local_index.resize(p);
  std::vector<int> fill(t->region_start.begin(), t->region_start.end() - 1);
  for (int r = 0; r < p; ++r) {
    const int g = t->region_of[r];
    t->local_index[r] = fill[g] - t->region_start[g];
    t->members[fill[g]++] = r;
  }
  l.t_ = std::move(t);
  if (split) {
    MPI_Comm local = MPI_COMM_NULL;
    SPC_MPI(MPI_Comm_split(comm, l.region(), l.rank_, &local));
    l.local_comm_ = std::make_shared<Comm>(Comm::adopt(local));
  }
  int smin = p, smax = 0;
  for (int g = 0; g < nreg; ++g) smin = std::min(smin, l.region_size(g)), smax = std::max(smax, l.region_size(g));
  std::ostringstream os;
  os << description << " (" << nreg << (nreg == 1 ? " region" : " regions") << ", size ";
  if (smin == smax) os << smin;
  else os << smin << ".." << smax;
  os << ")";
  l.description_ = os.str();
  return l;
}

Locality Locality::detect(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  const int rank = comm_rank(comm);
  SPC_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  Comm owned = Comm::adopt(node);
  // Label = lowest rank of my node, agreed through the node communicator.
  int lowest = rank;
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, owned.get()));
  std::vector<int> labels(comm_size(comm));
  SPC_MPI(MPI_Allgather(&lowest, 1, MPI_INT, labels.data(), 1, MPI_INT, comm));
  return build(comm, labels, "node");
}

bool Locality::one_node(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  SPC_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  const int n = comm_size(node);
  MPI_Comm_free(&node);
  int all = 0;
  SPC_MPI(MPI_Allreduce(&n, &all, 1, MPI_INT, MPI_MIN, comm));
  return all == comm_size(comm);
}

Locality Locality::ppn(MPI_Comm comm, int k) {
  std::string canonical;
  auto labels = layout_labels("ppn:" + std::to_string(k), comm_size(comm), &canonical);
  return build(comm, labels, canonical);
}

Locality Locality::cyclic(MPI_Comm comm, int nregions) {
  std::string canonical;
  auto labels = layout_labels("cyclic:" + std::to_string(nregions), comm_size(comm), &canonical);
  return build(comm, labels, canonical);
}

Locality Locality::from_labels(MPI_Comm comm, const std::vector<int>& labels) {
  const int p = comm_size(comm);
  std::string err;
  if (static_cast<int>(labels.size()) != p)
    err = "Locality: the region list has " + std::to_string(labels.size()) + " entries but the communicator has " +
          std::to_string(p) + " ranks";
  // Every rank must have passed the same list: compare a hash across ranks.
  uint64_t h = 1469598103934665603ull;
  for (int v : labels) h = (h ^ static_cast<uint32_t>(v)) * 1099511628211ull;
  uint64_t hh[2] = {h, ~h}, mx[2];
  SPC_MPI(MPI_Allreduce(hh, mx, 2, MPI_UINT64_T, MPI_MAX, comm));
  if (err.empty() && (mx[0] != h || mx[1] != ~h)) err = "Locality: ranks passed different region lists";
  agree(comm, err);
  std::ostringstream os;
  os << "list";
  return build(comm, labels, os.str());
}

Locality Locality::parse(MPI_Comm comm, const std::string& spec) {
  // Every rank must pass the same spec (otherwise some would wait in MPI_Comm_split).
  const uint64_t h = std::hash<std::string>{}(spec);
  uint64_t hh[2] = {h, ~h}, mx[2];
  SPC_MPI(MPI_Allreduce(hh, mx, 2, MPI_UINT64_T, MPI_MAX, comm));
  agree(comm, mx[0] != h || mx[1] != ~h ? "Locality: ranks passed different region specs ('" + spec + "' here)" : "");
  if (spec == "node" || spec == "detect") return detect(comm);
  if (spec.rfind("list:", 0) == 0) {
    std::vector<int> labels;
    std::stringstream ss(spec.substr(5));
    std::string tok;
    while (std::getline(ss, tok, ',')) labels.push_back(parse_number(tok, spec));
    return from_labels(comm, labels);
  }
  std::string canonical;
  auto labels = layout_labels(spec, comm_size(comm), &canonical);
  if (labels.empty()) throw InputError("Locality: unknown region spec '" + spec + "'; " + kValidSpecs);
  return build(comm, labels, canonical);
}

Locality Locality::single_unsplit(MPI_Comm comm) {
  return build(comm, layout_labels("single", comm_size(comm)), "single", false);
}

std::string region_spec_error(const std::string& spec, int p) {
  try {
    if (spec == "node" || spec == "detect") return "";
    if (spec.rfind("list:", 0) == 0) {
      size_t n = 0;
      std::stringstream ss(spec.substr(5));
      for (std::string tok; std::getline(ss, tok, ',');) parse_number(tok, spec), ++n;
      if (static_cast<int64_t>(n) != p)
        return "Locality: the region list '" + spec + "' has " + std::to_string(n) + " entries but the communicator has " +
               std::to_string(p) + " ranks";
      return "";
    }
    if (layout_labels(spec, p).empty()) return "Locality: unknown region spec '" + spec + "'; " + kValidSpecs;
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::vector<int> layout_labels(const std::string& spec, int p, std::string* canonical) {
  std::vector<int> labels(static_cast<size_t>(std::max(p, 0)));
  std::string name = spec;
  if (spec == "single") {
    for (int r = 0; r < p; ++r) labels[r] = r;
  } else if (spec.rfind("ppn:", 0) == 0) {
    const int k = parse_number(spec.substr(4), spec);
    if (k < 1) throw InputError("Locality: ppn:k needs k >= 1, got " + std::to_string(k));
    for (int r = 0; r < p; ++r) labels[r] = r / k;
    name = "ppn:" + std::to_string(k);
  } else if (spec.rfind("cyclic:", 0) == 0) {
    const int n = parse_number(spec.substr(7), spec);
    if (n < 1) throw InputError("Locality: cyclic:n needs n >= 1, got " + std::to_string(n));
    for (int r = 0; r < p; ++r) labels[r] = r % n;
    name = "cyclic:" + std::to_string(n);
  } else if (spec != "flat") {
    return {};
  }
  if (canonical) *canonical = name;
  return labels;
}

}  // namespace sparsecomm

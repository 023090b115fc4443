#pragma once
// The programs' shared --matrix / --gen / --ordering handling: a SuiteSparse name or path
// through the data search path, a generator spec, or (neither) the largest matrix found,
// which is said on stderr; files may be read reverse Cuthill-McKee ordered
// (matrix/ordering.hpp).
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/core/mpi_util.hpp"

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/data_path.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "sparsecomm/matrix/ordering.hpp"

namespace sparsecomm::apps {

inline DistCsr<double> load_matrix(MPI_Comm comm, const std::string& matrix, const std::string& gen,
                                   const std::string& ordering, std::string* label) {
  MtxReadOptions ro;
  ro.ordering = parse_ordering(ordering);  // the same on every rank: a bad name fails everywhere
  if (!gen.empty() && !matrix.empty())
    throw InputError("--matrix " + matrix + " and --gen " + gen +
                     ": give one of them (a file or a generated matrix), not both");
  if (!gen.empty()) {
    if (ro.ordering != Ordering::natural)
      throw InputError("--ordering " + ordering + " applies to matrix files, not to generated matrices (--gen " +
                       gen + ")");
    *label = gen;
    return gen::from_spec(comm, gen);
  }
  const std::string path = matrix.empty() ? largest_matrix() : find_matrix(matrix);
  if (path.empty()) {
    if (ro.ordering != Ordering::natural)
      throw InputError("--ordering " + ordering + ": no SuiteSparse matrix found to reorder");
    if (comm_rank(comm) == 0)
      std::cerr << "no --matrix given and no SuiteSparse matrix on the data search path: using the generated "
                   "rotated anisotropic diffusion rotate:512,512 (--gen)\n";
    *label = "rotate:512,512 (no SuiteSparse matrix found)";
    return gen::from_spec(comm, "rotate:512,512");
  }
  if (matrix.empty() && comm_rank(comm) == 0)
    std::cerr << "no --matrix given: using the largest matrix on the data search path, " << path
              << " (docs/data.md; --matrix NAME or --gen SPEC to choose)\n";
  *label = path.substr(path.find_last_of('/') + 1) + (ro.ordering == Ordering::natural ? "" : " (" + ordering + ")");
  return read_matrix_market(comm, path, ro);
}

/// Collective. The files of the matrices `names` on the data search path (find_matrix), or
/// nullopt on every rank when any rank misses one: rank 0 has then written `skipped` and the
/// names it did not find to stderr, and the program exits 77, which the tests count as a
/// skip (data not fetched), not as a failure.
inline std::optional<std::vector<std::string>> find_matrices_or_skip(MPI_Comm comm,
                                                                     const std::vector<std::string>& names,
                                                                     const std::string& skipped) {
  std::vector<std::string> paths;
  std::string missing;
  for (const auto& m : names) {
    try {
      paths.push_back(find_matrix(m));
    } catch (const InputError& e) {
      missing += std::string("  ") + e.what() + "\n";
    }
  }
  int found_here = missing.empty() ? 1 : 0, found_all = 0;
  MPI_Allreduce(&found_here, &found_all, 1, MPI_INT, MPI_LAND, comm);
  if (found_all) return paths;
  if (comm_rank(comm) == 0) std::cerr << skipped << missing;
  return std::nullopt;
}

/// What a program that runs on one matrix reads from the common options: the matrix and its
/// label (--matrix, --gen, --ordering: load_matrix) and the region layout (--regions).
struct MatrixOnRegions {
  std::string label;
  DistCsr<double> a;
  Locality loc;
};

/// Collective. The matrix is read before the layout: a run with both wrong reports the matrix.
inline MatrixOnRegions load_matrix_on_regions(MPI_Comm comm, const Options& o) {
  std::string label;
  DistCsr<double> a = load_matrix(comm, o.get("matrix"), o.get("gen"), o.get("ordering"), &label);
  Locality loc = Locality::parse(comm, o.get("regions"));
  return {std::move(label), std::move(a), std::move(loc)};
}

}  // namespace sparsecomm::apps

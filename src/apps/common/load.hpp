#pragma once
// The programs' shared --matrix / --gen / --ordering handling: a SuiteSparse name or path
// through the data search path, a generator spec, or (neither) the largest matrix found,
// which is said on stderr; files may be read reverse Cuthill-McKee ordered
// (matrix/ordering.hpp).
#include <iostream>
#include <string>

#include "common/cli.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/core/mpi_util.hpp"

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/data_path.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "sparsecomm/matrix/ordering.hpp"

namespace sparsecomm::apps {

/// The --ordering option's help text.
inline const char* ordering_help() {
  return "natural (the file's numbering) or rcm (reverse Cuthill-McKee, P A P^T: a banded block pattern); "
         "files only";
}

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

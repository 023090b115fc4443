#pragma once
// The CLI's shared --matrix / --gen handling: a SuiteSparse name or path through the data
// search path, a generator spec, or (neither) the largest matrix found.
#include <string>

#include "matrix/data_path.hpp"
#include "matrix/generators.hpp"
#include "matrix/mtx_reader.hpp"

namespace sparsecomm::apps {

inline DistCsr<double> load_matrix(MPI_Comm comm, const std::string& matrix, const std::string& gen, std::string* label) {
  if (!gen.empty()) {
    *label = gen;
    return gen::from_spec(comm, gen);
  }
  const std::string path = matrix.empty() ? largest_matrix() : find_matrix(matrix);
  if (path.empty()) {
    *label = "rotate:512,512 (no SuiteSparse matrix found)";
    return gen::from_spec(comm, "rotate:512,512");
  }
  *label = path.substr(path.find_last_of('/') + 1);
  return read_matrix_market(comm, path);
}

}  // namespace sparsecomm::apps

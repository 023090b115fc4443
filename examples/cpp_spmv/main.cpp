// SpMV on the user's own CSR arrays through sparsecomm: each rank builds the rows it owns of
// the 2D 5-point Laplacian on an nx x ny grid (rows split in blocks of whole grid lines, in
// rank order) as plain CSR arrays, hands them to the library, and multiplies through a
// backend chosen by the library's model. x_g = g, so every rank can check its rows of
// y = A x on its own.
//
//   mpirun -np 4 ./spmv_own_csr [nx ny backend]
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <sparsecomm/sparsecomm.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t nx = argc > 1 ? std::atoll(argv[1]) : 64, ny = argc > 2 ? std::atoll(argv[2]) : 48;
  const std::string backend = argc > 3 ? argv[3] : "auto";
  int rc = 0;
  try {
    // My grid lines [l0, l1): the user's own distribution.
    const int64_t l0 = ny * rank / size, l1 = ny * (rank + 1) / size;
    std::vector<int64_t> rowptr{0}, cols;
    std::vector<double> vals;
    for (int64_t j = l0; j < l1; ++j)
      for (int64_t i = 0; i < nx; ++i) {
        const int64_t g = j * nx + i;
        auto add = [&](int64_t c, double v) { cols.push_back(c), vals.push_back(v); };
        add(g, 4.0);
        if (i > 0) add(g - 1, -1.0);
        if (i + 1 < nx) add(g + 1, -1.0);
        if (j > 0) add(g - nx, -1.0);
        if (j + 1 < ny) add(g + nx, -1.0);
        rowptr.push_back(static_cast<int64_t>(cols.size()));
      }
    const int32_t nrows = static_cast<int32_t>((l1 - l0) * nx);
    auto A = sparsecomm::DistCsr<double>::from_local_csr(MPI_COMM_WORLD, l0 * nx, nrows, rowptr.data(), cols.data(),
                                                         vals.data());
    sparsecomm::Locality loc = sparsecomm::Locality::parse(MPI_COMM_WORLD, "node");
    sparsecomm::Sdde sdde(MPI_COMM_WORLD, loc);
    sparsecomm::DistSpmv spmv(A, sparsecomm::make_plan(backend, sparsecomm::pattern_from_matrix(A, sdde, "nbx"), loc,
                                                       MPI_COMM_WORLD));
    std::vector<double> x(static_cast<size_t>(nrows) + 1), y(static_cast<size_t>(nrows) + 1);
    for (int32_t k = 0; k < nrows; ++k) x[k] = static_cast<double>(l0 * nx + k);
    for (int it = 0; it < 10; ++it) spmv.apply(x.data(), y.data());
    // y_g = 4g - (neighbors), with x = global id.
    double err = 0;
    for (int32_t k = 0; k < nrows; ++k) {
      const int64_t g = l0 * nx + k, i = g % nx, j = g / nx;
      double want = 4.0 * static_cast<double>(g);
      if (i > 0) want -= static_cast<double>(g - 1);
      if (i + 1 < nx) want -= static_cast<double>(g + 1);
      if (j > 0) want -= static_cast<double>(g - nx);
      if (j + 1 < ny) want -= static_cast<double>(g + nx);
      err = std::fmax(err, std::fabs(y[k] - want));
    }
    double max_err = 0;
    MPI_Allreduce(&err, &max_err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("cpp_spmv: sparsecomm %s, %lld x %lld Laplacian from the user's CSR arrays on %d ranks, backend %s: %s\n",
                  sparsecomm::version(), static_cast<long long>(nx), static_cast<long long>(ny), size,
                  spmv.plan().name().c_str(), max_err == 0 ? "verified" : "WRONG");
    rc = max_err == 0 ? 0 : 3;
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "cpp_spmv: error: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}

// A user's program: it includes only the umbrella header and is compiled with nothing but
// include/ and MPI on its include path (CMakeLists.txt here), so a public header that needs
// an internal one from src/ fails the build. It runs one verified SpMV through every
// registered halo backend: y = A 1 must be each row's sum.
#include <sparsecomm/sparsecomm.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  sparsecomm::apply_environment();  // the library's variables, as a program that wants them reads them
  int bad = 0;
  {
    using namespace sparsecomm;
    MPI_Comm comm = MPI_COMM_WORLD;
    auto a = gen::from_spec(comm, "rotate:12,10");
    Locality loc = Locality::parse(comm, "ppn:2");
    Sdde sdde(comm, loc);
    const Pattern pat = pattern_from_matrix(a, sdde, "nbx");
    std::vector<double> want(static_cast<size_t>(a.local_rows()), 0.0);
    for (const auto& t : a.local_triplets()) want[static_cast<size_t>(t.row - a.row_begin())] += t.val;
    std::vector<double> x(static_cast<size_t>(a.local_cols()) + 1, 1.0), y(want.size() + 1, NAN);
    for (const auto& b : backend_names()) {
      DistSpmv spmv(a, make_plan(b, pat, loc, comm));
      spmv.apply(x.data(), y.data());
      for (size_t i = 0; i < want.size(); ++i)
        if (!(std::abs(y[i] - want[i]) <= 1e-12 * (1 + std::abs(want[i])))) ++bad;  // NaN counts as wrong
      if (comm_rank(comm) == 0) std::printf("%s: done\n", b.c_str());
    }
    bad = static_cast<int>(allreduce_sum(comm, static_cast<int64_t>(bad)));
    if (comm_rank(comm) == 0) std::printf(bad ? "public API: %d wrong values\n" : "public API: verified\n", bad);
  }
  MPI_Finalize();
  return bad ? 3 : 0;
}

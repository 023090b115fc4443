// Blocking level (Buluç and Madduri, SC'11, as CombBLAS runs it): transpose, an
// MPI_Allgatherv of the frontier along the processor column, the local SpMSpV, an
// MPI_Alltoallv of the candidates along the processor row. It calls MPI's dense collectives
// directly on purpose: this variant IS the collective-based baseline the overlapped and
// plan variants are compared with (and the counts change every level, so there is no fixed
// pattern a Plan could be built for once).
#include "bfs2d/level.hpp"

namespace sparsecomm::bfs::detail {

namespace {

class Blocking : public LevelVariant {
 public:
  std::vector<int64_t> level(Ctx& c, const std::vector<int64_t>& frontier) override {
    std::vector<int64_t> L = c.transpose(frontier);
    std::vector<int64_t> F;
    {
      Clock a(&c.t.expand), e(&c.t.exposed);
      const int q = c.grid.pr();
      int n = static_cast<int>(L.size());
      std::vector<int> counts(q), displs(q + 1, 0);
      SPC_MPI(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, c.grid.col_comm()));
      for (int i = 0; i < q; ++i) displs[i + 1] = displs[i] + counts[i];
      F.resize(static_cast<size_t>(displs[q]));
      SPC_MPI(MPI_Allgatherv(L.data(), n, MPI_INT64_T, F.data(), counts.data(), displs.data(), MPI_INT64_T,
                             c.grid.col_comm()));
    }
    return c.compute_and_fold(F, [&](const std::vector<int64_t>& data, const std::vector<int>& counts) {
      return alltoallv(c.grid.row_comm(), data, counts);
    });
  }
};

}  // namespace

std::unique_ptr<LevelVariant> make_blocking() { return std::make_unique<Blocking>(); }

}  // namespace sparsecomm::bfs::detail

#pragma once
// One way to compute y = A x on the same distributed matrix (sparsecomm compare): a
// sparsecomm backend, PETSc's MatMult under one of its scatter types, Hypre's matvec. Set
// up on construction (collective), then apply() many times.
#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm::apps::comparison {

class Variant {
 public:
  virtual ~Variant() = default;
  virtual std::string name() const = 0;
  /// Collective. y = A x once, x_g = sin(g) for global column g.
  virtual void apply() = 0;
  /// My rows of y after apply().
  virtual std::vector<double> local_y() = 0;
  /// Messages sent per rank and product, max over ranks (collective); < 0: not known.
  virtual double messages() { return -1; }
};

/// PETSc's MatMult on a MATMPIAIJ copy of `a` assembled under -sf_type `sf_type`; with
/// `ours` a sparsecomm backend, MatMult's exchange goes through it (petsc::attach: PETSc's
/// local kernels, our exchange). Throws NotImplementedError where the build has no PETSc.
std::unique_ptr<Variant> petsc_variant(const DistCsr<double>& a, const std::string& sf_type,
                                       const std::string& ours = "");
/// hypre_ParCSRMatrixMatvec on a ParCSR copy of `a` (HYPRE_IJMatrix).
std::unique_ptr<Variant> hypre_variant(const DistCsr<double>& a);
/// Which peers this build has (PETSc, Hypre).
bool have_petsc();
bool have_hypre();
/// Initializes / finalizes the peers' libraries around a run (after MPI_Init, before
/// MPI_Finalize; PETSc then leaves MPI alone).
class Peers {
 public:
  Peers();
  ~Peers();
  Peers(const Peers&) = delete;
  Peers& operator=(const Peers&) = delete;
};

}  // namespace sparsecomm::apps::comparison

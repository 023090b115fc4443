#pragma once
// Matrix and graph generators. Every generator is deterministic for a given seed and
// independent of the number of ranks (each rank builds the rows it owns, random choices
// are keyed by global ids with a counter-based generator), so the same matrix comes out
// at 1 rank and at 8 — except the weak-scaled ones (*_blocks), whose grid grows with the
// ranks: a fixed block per rank, for cost-growth studies. All are collective over `comm`
// and return balanced row partitions.
#include <mpi.h>

#include <cstdint>
#include <string>

#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm::gen {

/// 2D Laplacian on an nx-by-ny grid, 5-point (4 on the diagonal, -1 off) or 9-point
/// (8 on the diagonal, -1 for the 8 neighbors). Row id = x + nx*y. Dirichlet boundary.
DistCsr<double> laplacian_2d(MPI_Comm comm, int64_t nx, int64_t ny, int points = 5);
/// 3D Laplacian, 7-point (6 / -1) or 27-point (26 / -1). Row id = x + nx*(y + ny*z).
DistCsr<double> laplacian_3d(MPI_Comm comm, int64_t nx, int64_t ny, int64_t nz, int points = 7);

/// 2D rotated anisotropic diffusion: the same 7-point stencil values and natural
/// (lexicographic) ordering as Hypre's GenerateRotate7pt on one process grid block.
/// `angle_deg` in degrees (default 45), anisotropy `eps` (default 0.001).
DistCsr<double> rotated_anisotropic_2d(MPI_Comm comm, int64_t nx, int64_t ny, double angle_deg = 45.0,
                                       double eps = 0.001);

/// Weak-scaled stencils, partitioned as a real code partitions them (Hypre's
/// GenerateLaplacian27pt and GenerateRotate7pt over a process grid): every rank owns one
/// bx x by (x bz) block of the grid, the P blocks laid out on a near-cubic (near-square)
/// process grid (P factored as MPI_Dims_create does), the rows of a block numbered
/// contiguously per rank, lexicographically inside it. The halo of a rank is its block's
/// faces, edges and corners: at most 26 (3D) or 8 (2D; 6 with the rotated stencil's one
/// diagonal) neighbor ranks, whatever P. Same stencil values as laplacian_3d (7 or 27
/// points) and rotated_anisotropic_2d.
DistCsr<double> laplacian_3d_blocks(MPI_Comm comm, int64_t bx, int64_t by, int64_t bz, int points = 27);
DistCsr<double> rotated_anisotropic_2d_blocks(MPI_Comm comm, int64_t bx, int64_t by, double angle_deg = 45.0,
                                              double eps = 0.001);

/// Erdős–Rényi random directed graph on n vertices: each ordered pair (i, j), i != j, is an
/// edge with probability `density`. Entry (i, j) = 1 for edge i -> j.
DistCsr<double> erdos_renyi(MPI_Comm comm, int64_t n, double density, uint64_t seed = 1);

/// Moore neighborhood graph on a D-dimensional torus of side `side` (side^D vertices):
/// vertex v is adjacent to every vertex within Chebyshev distance `radius` (wrapping),
/// except itself. Symmetric, entries 1.
DistCsr<double> moore(MPI_Comm comm, int dims, int radius, int64_t side);

/// R-MAT / Graph500 Kronecker generator.
struct RmatParams {
  int scale = 10;         ///< 2^scale vertices
  int edge_factor = 16;   ///< edge_factor * 2^scale generated edges
  double a = 0.57, b = 0.19, c = 0.19, d = 0.05;  ///< Graph500 initiator; must sum to 1
  uint64_t seed = 1;
  bool symmetrize = true;         ///< add (j, i) for every (i, j)
  bool remove_self_loops = true;
  bool permute = true;            ///< relabel vertices by a seeded random permutation
};
DistCsr<double> rmat(MPI_Comm comm, const RmatParams& p);

/// Builds a generator from a spec string, e.g. "lap2d:64,64", "lap2d9:32,32",
/// "lap3d:16,16,16", "lap3d27:8,8,8", "rotate:64,64[,angle,eps]", "er:1000,0.01[,seed]",
/// "moore:2,1,16" (dims, radius, side), "rmat:12[,edge_factor,seed]"; weak-scaled, the
/// block per rank: "lap3dw:BX,BY,BZ", "lap3d27w:10,10,10", "rotatew:BX,BY[,angle,eps]".
/// Unknown names or malformed numbers: InputError listing the valid forms.
DistCsr<double> from_spec(MPI_Comm comm, const std::string& spec);

}  // namespace sparsecomm::gen

#pragma once
// Fill- and bandwidth-reducing orderings of a square matrix's rows and columns.
//
// Reverse Cuthill-McKee (Cuthill and McKee, "Reducing the bandwidth of sparse symmetric
// matrices", 1969; the reversal: George, 1971) on the pattern of A + A^T, started in each
// connected component from a pseudo-peripheral vertex found by the level-structure search
// of Gibbs, Poole and Stockmeyer (1976) as simplified by George and Liu (1979). A banded
// ordering makes a block-row distribution's block pattern banded too: each rank then
// talks to a few neighboring ranks instead of to most of them, which is what a sparse code
// that partitions its mesh or graph gets, and what the natural ordering of many
// SuiteSparse files (road networks, circuit and graph matrices) does not give.
#include <cstdint>
#include <string>
#include <vector>

#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm {

enum class Ordering { natural, rcm };

/// "natural" or "rcm"; anything else: InputError listing the valid names.
Ordering parse_ordering(const std::string& name);
std::string ordering_name(Ordering o);

/// The reverse Cuthill-McKee permutation of an n x n pattern: perm[new] = old. Entries may
/// repeat, hold the diagonal or be unsymmetric (the pattern of A + A^T is used). Isolated
/// vertices are components of their own. Deterministic: ties go to the lower index.
/// InputError if an entry lies outside [0, n) x [0, n).
template <class V>
std::vector<int64_t> rcm_permutation(int64_t n, const std::vector<Triplet<V>>& entries);

/// Inverse of a permutation: inv[perm[i]] = i (InputError if perm is not one of [0, n)).
std::vector<int64_t> invert_permutation(const std::vector<int64_t>& perm);

/// Symmetric relabelling P A P^T in place: entry (r, c) becomes (inv[r], inv[c]), where
/// inv = invert_permutation(perm).
template <class V>
void permute_symmetric(std::vector<Triplet<V>>& entries, const std::vector<int64_t>& inv);

/// Half-bandwidth max |r - c| over the entries (0 for an empty or diagonal pattern).
template <class V>
int64_t bandwidth(const std::vector<Triplet<V>>& entries);

}  // namespace sparsecomm

#pragma once
// Small integer hashes shared by the library (internal).
#include <cstdint>

namespace sparsecomm::detail {

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA'14): a counter-based draw, the same value for the same key on every rank.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// MurmurHash3's 64-bit finalizer.
inline uint64_t fmix64(uint64_t x) {
  x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
  x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/// Hash of a directed edge (and its message size). Summed over every rank's outgoing and,
/// separately, incoming edges, the two totals agree exactly when every edge is listed by
/// both ends with the same size: a consistency check without gathering the graph.
/// SplitMix64 rather than fmix64 alone: fmix64(0) = 0 would make the edge 0 -> 0 of size 0
/// (a self-loop of rank 0) weigh nothing in the sums.
inline uint64_t edge_hash(int from, int to, int64_t count = 0) {
  return splitmix64((static_cast<uint64_t>(static_cast<uint32_t>(from)) << 32) ^ static_cast<uint32_t>(to) ^
                (static_cast<uint64_t>(count) * 0x9e3779b97f4a7c15ull));
}

/// Hash of an edge's global ids in order (`n` of them from `ids`); 0 for none. Order
/// matters: the two ends of an edge pair entries by position.
inline uint64_t ids_hash(const int64_t* ids, int64_t n) {
  if (!ids || n <= 0) return 0;
  uint64_t h = 0x243f6a8885a308d3ull;
  for (int64_t k = 0; k < n; ++k) h = splitmix64(h ^ static_cast<uint64_t>(ids[k]));
  return h;
}

}  // namespace sparsecomm::detail

#pragma once
// auto's tuning cache (option tune_cache): the decision a tune=measure plan measured, kept in
// a small text file under a key of the pattern, the layout, the value size and the
// shortlist, so that the next plan over the same exchange (the next launch of a solver)
// builds the winner alone instead of measuring again. tune_cache.cpp explains the key and
// the file.
#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "comm/plan/tune.hpp"

namespace sparsecomm::detail {

/// What a lookup found: the same on every rank (rank 0 read the file and broadcast it),
/// except `key` and `path`, which only rank 0 holds (it alone writes).
struct TuneCacheLookup {
  static constexpr size_t kMiss = static_cast<size_t>(-1);
  bool on = false;       ///< rank 0 names a cache file
  size_t winner = kMiss;  ///< the cached winner's position in the shortlist, or kMiss
  std::vector<double> medians;  ///< per shortlist position: cached seconds, NaN where none
  std::string note;             ///< one line: where the decision came from, or why none
  std::string key, path;        ///< rank 0: the entry's key and the file
};

/// The cache file a tuned plan uses: auto's option tune_cache where given ("none": none),
/// else ModelSettings::defaults().tune_cache ($SPARSECOMM_TUNE_CACHE; "none" likewise); ""
/// for none. Only rank 0's counts (it may name a node-local file).
std::string tune_cache_path(const PlanOptions& o);

/// Collective over `c`: one reduction of the pattern's fingerprint to rank 0 and one
/// broadcast of what rank 0 read from `path` (its own; "" on rank 0: off, nothing read).
/// A missing, unreadable or malformed file, or an entry that does not fit `shortlist`, is a
/// miss with a note, never an error.
TuneCacheLookup tune_cache_lookup(const std::string& path, const std::vector<TuneCandidate>& shortlist,
                                  const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o);

/// Local (rank 0 writes; elsewhere nothing, ""): records `winner` and every candidate's
/// median (NaN: dropped) under at's key, replacing an older entry, by writing a temporary
/// file and renaming it over the cache. Returns a one-line note of what it did.
std::string tune_cache_store(const TuneCacheLookup& at, const std::vector<TuneCandidate>& shortlist, size_t winner,
                             const std::vector<double>& medians);

}  // namespace sparsecomm::detail

#pragma once
// Which region (node, socket, or an emulated group of ranks) every rank is in.
// Regions are numbered 0..R-1 in order of their lowest rank; within a region, ranks are
// ordered by their rank in the parent communicator ("local index"). Nothing here assumes
// block placement or that the region size divides P: every lookup goes through tables.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {

class Locality {
 public:
  Locality() : t_(std::make_shared<const Tables>()) {}

  /// Collective. Real detection: ranks sharing memory (MPI_COMM_TYPE_SHARED) form a region.
  static Locality detect(MPI_Comm comm);
  /// Collective. Whether every rank of `comm` shares one node (MPI_COMM_TYPE_SHARED): then
  /// emulated regions are not the machine's, and every message stays in its memory.
  static bool one_node(MPI_Comm comm);
  /// Collective. Emulation: consecutive blocks of k ranks (the last one may be smaller).
  static Locality ppn(MPI_Comm comm, int k);
  /// Collective. Emulation of round-robin placement: rank r is in region r % nregions.
  static Locality cyclic(MPI_Comm comm, int nregions);
  /// Collective. Every rank passes the same list: region label of each rank (any ints;
  /// renumbered in order of first appearance). A list that differs between ranks or has the
  /// wrong length is an InputError on every rank.
  static Locality from_labels(MPI_Comm comm, const std::vector<int>& label_of_rank);
  /// Collective. Parses "node" (detect), "ppn:k", "cyclic:n", "list:a,b,c,...",
  /// "flat" (one region holding every rank) or "single" (every rank its own region).
  /// Unknown specs: InputError listing the valid forms.
  static Locality parse(MPI_Comm comm, const std::string& spec);
  /// Local. "single" (every rank its own region) without a region communicator
  /// (local_comm() is MPI_COMM_NULL): for a plan that needs none (p2p), built where no
  /// collective may run (the C API's neighborhood inits).
  static Locality single_unsplit(MPI_Comm comm);

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(t_->region_of.size()); }
  int region() const { return t_->region_of[rank_]; }
  int num_regions() const { return static_cast<int>(t_->region_start.size()) - 1; }
  int region_of(int rank) const { return t_->region_of[rank]; }
  /// The region of every rank (region_of(r) at index r).
  const std::vector<int>& regions() const { return t_->region_of; }
  bool same_region(int other_rank) const { return t_->region_of[other_rank] == region(); }
  int region_size(int region) const { return t_->region_start[region + 1] - t_->region_start[region]; }
  /// Global rank of the `local_index`-th member of `region`.
  int member(int region, int local_index) const { return t_->members[t_->region_start[region] + local_index]; }
  /// Index of `rank` inside its own region.
  int local_index_of(int rank) const { return t_->local_index[rank]; }
  int local_rank() const { return t_->local_index[rank_]; }
  int local_size() const { return region_size(region()); }
  /// Communicator of this rank's region, ranks ordered by local index (owned, shared by copies).
  MPI_Comm local_comm() const { return local_comm_ ? local_comm_->get() : MPI_COMM_NULL; }
  /// A short description such as "ppn:4 (3 regions, sizes 4..2)".
  const std::string& describe() const { return description_; }

 private:
  /// `split`: whether to create the region communicator (collective), else none (local).
  static Locality build(MPI_Comm comm, const std::vector<int>& labels, std::string description, bool split = true);
  // The rank-indexed tables: 12 bytes per rank of the communicator (a dense rank map, the
  // one O(P) structure of a Locality), immutable once built and shared by every copy, so
  // the Sdde and each Plan that keep a copy hold a pointer, not another 12 P bytes.
  struct Tables {
    std::vector<int> region_of, local_index, region_start{0}, members;
  };
  int rank_ = 0;
  std::shared_ptr<const Tables> t_;
  std::shared_ptr<Comm> local_comm_;
  std::string description_;
};

/// Local. The region label of each of p ranks for the layouts that need no hosts --
/// "ppn:<k>", "cyclic:<n>", "flat", "single" -- exactly the labels Locality::parse uses
/// (plan_stats.hpp uses them for virtual ranks); `canonical` gets the spec's canonical form.
/// A bad number is an InputError; any other spec ("node", "list:...") gives an empty vector.
std::vector<int> layout_labels(const std::string& spec, int p, std::string* canonical = nullptr);

/// Local. Why `spec` is not a region layout Locality::parse accepts on a communicator of p
/// ranks ("" when it is): for callers that must reject a bad layout before any collective,
/// or where no Locality is built (the PMPI layer on one node).
std::string region_spec_error(const std::string& spec, int p);

}  // namespace sparsecomm

#pragma once
// What the entry points above the plans (the PETSc SF type and MatMult, the Hypre hook, the
// PMPI layer, the C API) run before they exchange: settings from one table of defaults,
// validated against the registry, agreed across ranks, plans cached by key. Each layer
// reads its settings its own way (docs/architecture.md, "Interposition"). Not installed.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::interop {

/// The entry points that build plans for a caller who may name no backend.
enum class EntryPoint { petsc_sf, petsc_mat, hypre_hook, pmpi, capi };

/// The backend an entry point uses where its caller names none: the one table (pipeline.cpp).
const char* default_backend(EntryPoint e);

/// A halo plan's settings as the user gave them (unchecked strings), from the defaults.
struct PlanSettings {
  std::string backend, regions = "node", sdde = "nbx";
  std::string options;  ///< the backend's own options, "key=value,..."
  explicit PlanSettings(EntryPoint e) : backend(default_backend(e)) {}
};

/// How an entry point's messages name its settings; sdde null: not one of its settings.
struct SettingNames {
  const char *backend, *regions, *sdde, *options;
};

/// The settings that must be alike on every rank, named (backend, regions, sdde, options).
std::vector<NamedValue> named(const PlanSettings& s, const SettingNames& n);

/// Local. Throws InputError for an unknown halo backend (the registry's message, with the
/// valid names), an unknown SDDE strategy (where it is a setting), backend options that the
/// backend does not declare or whose values are bad ("<n.options>: ..."), and, when
/// `regions_ranks` > 0, regions that do not fit that many ranks ("<n.regions>: ...").
void validate(const PlanSettings& s, const SettingNames& n, int regions_ranks = 0);

/// Collective over comm: `checks` on this rank (what they throw is its error), then one
/// agreement of every rank's outcome and of `settings` (core agree_settings, `where_set` and
/// `compared` as there): the same error thrown on every rank, or none.
void agree_checked(MPI_Comm comm, const std::function<void()>& checks, const std::vector<NamedValue>& settings = {},
                   const std::string& where_set = "", const std::vector<NamedValue>* compared = nullptr);

/// Prints "<who> [rank r]: error: <error>" (r: this process's rank in comm), flushed.
void report_error(MPI_Comm comm, const char* who, const std::string& error);
/// For the layers that cannot return an error to their caller (LD_PRELOAD): prints "<who>:
/// error: <error>" (exit_on_every_rank: report_error's line) and exits (status 2); with
/// `meet` (every rank is here, after an agreement) no rank exits before all have said it
/// (mpirun then stops the rest).
[[noreturn]] void exit_with(const std::string& who, const std::string& error);
[[noreturn]] void exit_on_every_rank(MPI_Comm comm, const char* who, const std::string& error, bool meet = true);

/// The sparsecomm_* keys of `info` that have a value, in its order (MPI_INFO_NULL: none),
/// through the PMPI_ names (the PMPI layer's own calls must not come back to it). *rc: MPI's
/// code of the first call that failed (the keys read before it are returned), else MPI_SUCCESS.
std::vector<std::pair<std::string, std::string>> sparsecomm_keys(MPI_Info info, int* rc = nullptr);

/// Parsers of one setting's value: one that does not parse leaves *out alone and, if *bad
/// is empty, says so there, to be reported at the layer's first collective (never guessed).
void read_flag(std::string* bad, const std::string& name, const std::string& v, bool* out);
void read_int(std::string* bad, const std::string& name, const std::string& v, int* out);
void read_bytes(std::string* bad, const std::string& name, const std::string& v, int64_t lo, int64_t hi,
                int64_t* out);

/// A layer's plans by key (a Hypre package, a PetscSF's unit and direction, a PMPI call's
/// block size), each with a fingerprint of what it was built from, compared at every use
/// where the key alone could outlive what it names (an address reused). An entry lives
/// until its key is built again (put), dropped (the object it serves goes: drop) or the
/// cache is cleared (the layer resets); `retire` sees each one that goes so (a report).
/// Without a Fingerprint (std::tuple<>, always equal) the key says all.
template <class Key, class Entry, class Fingerprint = std::tuple<>>
class PlanCache {
 public:
  struct Slot {
    Fingerprint fp;
    Entry entry;
  };
  explicit PlanCache(std::function<void(const Entry&)> retire = nullptr) : retire_(std::move(retire)) {}

  /// The entry for `key` if built from *fp (or from anything: null), else null (a stale one stays).
  Entry* find(const Key& key, const Fingerprint* fp = nullptr) {
    auto it = slots_.find(key);
    return it == slots_.end() || (fp && !(it->second.fp == *fp)) ? nullptr : &it->second.entry;
  }
  /// The entry for `key` built from `fp`, made by build() (an Entry) when there is none.
  /// Collective where build() is: every rank asks for the same keys in the same order.
  template <class Build>
  Entry& get(const Key& key, Build&& build, const Fingerprint& fp = {}) {
    Entry* e = find(key, &fp);
    return e ? *e : put(key, build(), fp);
  }
  /// `e` for `key`, built from `fp`, in place of an older entry (retired first).
  Entry& put(const Key& key, Entry e, const Fingerprint& fp = {}) {
    drop(key);
    return slots_.emplace(key, Slot{fp, std::move(e)}).first->second.entry;
  }
  void drop(const Key& key) {
    auto it = slots_.find(key);
    if (it == slots_.end()) return;
    if (retire_) retire_(it->second.entry);
    slots_.erase(it);
  }
  void clear() {
    while (!slots_.empty()) drop(slots_.begin()->first);
  }
  const std::map<Key, Slot>& slots() const { return slots_; }

 private:
  std::map<Key, Slot> slots_;
  std::function<void(const Entry&)> retire_;
};

}  // namespace sparsecomm::interop

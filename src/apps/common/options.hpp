#pragma once
// The options every program shares, declared once: their names, help and defaults are the
// same in every app (`regions` has ONE default, "node": the detected nodes). A program takes
// the ones it uses by name and adds its own:
//
//   Options o(with_common({"matrix", "regions", "reps", "json"}, {{"width", {"1", "vectors"}}},
//                         {{"reps", "500"}}),
//             "usage: ...");
//
// Only how many repetitions (reps, rounds), which matrix, backend or SDDE strategy a program
// runs by default may differ: what a benchmark repeats and on what is its own workload.
#include <mpi.h>

#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::apps {

using OptionTable = std::map<std::string, std::pair<std::string, std::string>>;

inline const OptionTable& common_options() {
  static const OptionTable t = {
      {"matrix", {"", "SuiteSparse name (Group/Name) or path, on the data search path; programs that take several "
                      "read a comma-separated list (default: the largest matrix found)"}},
      {"gen", {"", "generator spec instead of a file, e.g. rotate:512,512 or lap3d27:16,16,16 (gen::from_spec)"}},
      {"ordering", {"natural", "natural (the file's numbering) or rcm (reverse Cuthill-McKee, P A P^T: a banded block "
                               "pattern); files only; programs that run several take a comma-separated list"}},
      {"regions", {"node", "region layout: node (detected; for virtual ranks: one region), ppn:k, cyclic:n, "
                           "list:r0,r1,..., flat, single"}},
      {"backend", {"all", "comma-separated backends, or all (`sparsecomm backends` lists them)"}},
      {"sdde", {kDefaultSdde, "SDDE strategy (personalized, nbx, rma, locality_personalized, locality_nbx); "
                              "programs that compare strategies take a comma-separated list or all"}},
      {"reps", {"100", "timed repetitions"}},
      {"rounds", {"5", "interleaved rounds: each times every variant once; results are medians over rounds"}},
      {"json", {"", "append JSON lines (one record per result) to this file"}},
      {"option", {"", "backend options key=value[,key=value] (e.g. k=4,aware=true for combined); each backend gets "
                      "the keys it declares"}},
  };
  return t;
}

/// The common options `names` (with the program's `defaults` for matrix, backend, sdde,
/// reps or rounds) plus the program's own `own`. A name in `own` that is also common, or a default for
/// regions, is a programming error (std::logic_error): the shared set is declared here only.
inline OptionTable with_common(const std::vector<std::string>& names, OptionTable own = {},
                               const std::map<std::string, std::string>& defaults = {}) {
  for (const auto& [k, v] : own)
    if (common_options().count(k)) throw std::logic_error("option --" + k + " is common: take it by name");
  for (const auto& n : names) {
    auto it = common_options().find(n);
    if (it == common_options().end()) throw std::logic_error("--" + n + " is not a common option");
    own[n] = it->second;
  }
  for (const auto& [k, v] : defaults) {
    if (k != "matrix" && k != "backend" && k != "sdde" && k != "reps" && k != "rounds")
      throw std::logic_error("the default of --" + k + " is the same in every program");
    if (!own.count(k)) throw std::logic_error("a default for --" + k + ", which this program does not take");
    own[k].first = v;
  }
  return own;
}

/// --k, --aware and --theta as the programs that time the combining variants declare them
/// (the group sizes `k` they run by default), added to the program's own options `own`.
inline OptionTable with_combining(OptionTable own, const std::string& k) {
  own["k"] = {k, "group sizes for combined, comma-separated (each >= 2)"};
  own["aware"] = {"both", "combined variants: agnostic, aware or both"};
  own["theta"] = {"4", "combining threshold: minimum common out-neighbors"};
  return own;
}

/// --model of the programs that take auto's model as auto does (ModelParams::resolve).
inline OptionTable::value_type resolved_model_option() {
  return {"model", {"", "model parameter file or builtin (default: $SPARSECOMM_MODEL, else measured in the first "
                        "three launches and cached)"}};
}

/// Parses argv into `o`. False when --help was asked: rank 0 of `comm` has printed the help
/// (once, not once per rank) and the program returns 0 on every rank.
inline bool parse_or_help(MPI_Comm comm, Options& o, int argc, char** argv) {
  if (o.parse(argc, argv)) return true;
  if (comm_rank(comm) == 0) std::cout << o.help();
  return false;
}

/// The combining variants --aware names: agnostic (false), aware (true) or both.
inline std::vector<bool> aware_variants(const std::string& v) {
  if (v == "agnostic") return {false};
  if (v == "aware") return {true};
  if (v == "both") return {false, true};
  throw InputError("--aware expects agnostic, aware or both, got '" + v + "'");
}

}  // namespace sparsecomm::apps

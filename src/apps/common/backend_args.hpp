#pragma once
// --option key=value[,key=value]: backend-owned options (comm/backend_options.hpp) from the
// command line. Each backend a run uses gets the keys it declares; a key that none of them
// declares is an error (a typo must not be silently ignored).
#include <algorithm>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm::apps {

/// The entries of the common option --backend: its comma-separated list, or every
/// registered halo backend for "all".
inline std::vector<std::string> backend_entries(const Options& o) {
  return o.get("backend") == "all" ? backend_names() : split_list(o.get("backend"));
}

/// One --backend entry: `name` or `name:key=value[:key=value...]` (options for this entry
/// only, e.g. aggregated_dedup:window=false beside aggregated_dedup in one run). Returns the
/// backend's name; its own options go into `own`.
inline std::string split_backend_entry(const std::string& entry, BackendOptions& own) {
  const size_t colon = entry.find(':');
  if (colon == std::string::npos) return entry;
  std::string list = entry.substr(colon + 1);
  for (auto& c : list)
    if (c == ':') c = ',';
  own.set_list(list);
  return entry.substr(0, colon);
}

/// The backend options of `list` for each of `backends` (halo backends, entries as
/// split_backend_entry() reads them), in order; `backends` becomes the plain names.
inline std::vector<BackendOptions> backend_options_for(const std::string& list, std::vector<std::string>& backends) {
  BackendOptions all;
  all.set_list(list);
  std::vector<BackendOptions> out;
  std::vector<std::string> used;
  for (auto& b : backends) {
    BackendOptions own;
    const std::string entry = b;
    b = split_backend_entry(entry, own);
    const auto specs = backend_option_specs(b);  // InputError for an unknown name
    out.push_back(all.only(specs));
    for (const auto& k : all.keys())
      if (declares_option(specs, k)) used.push_back(k);
    for (const auto& k : own.keys()) {
      if (!declares_option(specs, k))
        throw InputError("--backend " + entry + ": " + b + " does not declare option " + k +
                         "; `sparsecomm backends` lists each backend's options");
      if (all.has(k))
        throw InputError("--backend " + entry + " and --option " + k + "=" + all.get(k, "") + " both set " + k +
                         " for " + b + ": give it in one place");
      out.back().set(k, own.get(k, ""));
    }
  }
  for (const auto& k : all.keys())
    if (std::find(used.begin(), used.end(), k) == used.end()) {
      std::string names;
      for (const auto& b : backends) names += (names.empty() ? "" : ", ") + b;
      throw InputError("--option " + k + ": no backend of this run (" + names +
                       ") declares it; `sparsecomm backends` lists each backend's options");
    }
  return out;
}

}  // namespace sparsecomm::apps

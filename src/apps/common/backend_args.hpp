#pragma once
// --option key=value[,key=value]: backend-owned options (comm/backend_options.hpp) from the
// command line. Each backend a run uses gets the keys it declares; a key that none of them
// declares is an error (a typo must not be silently ignored).
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm::apps {

/// The backend options of `list` for each of `backends` (halo backends), in order.
inline std::vector<BackendOptions> backend_options_for(const std::string& list, const std::vector<std::string>& backends) {
  BackendOptions all;
  all.set_list(list);
  std::vector<BackendOptions> out;
  std::vector<std::string> used;
  for (const auto& b : backends) {
    const auto specs = backend_option_specs(b);  // InputError for an unknown name
    out.push_back(all.only(specs));
    for (const auto& k : all.keys())
      if (declares_option(specs, k)) used.push_back(k);
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

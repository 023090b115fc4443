// Message combining as backend options (combining_options.hpp).
#include "sparsecomm/comm/plan/combining_options.hpp"

#include <climits>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {

std::vector<OptionSpec> combining_option_specs() {
  const CombiningOptions d;
  using K = OptionSpec::Kind;
  return {
      {"k", K::integer, std::to_string(d.k), "maximum group size (2: pairs)", 2, INT_MAX},
      {"theta", K::integer, std::to_string(d.theta), "minimum common out-neighbors for two groups to combine", 1, INT_MAX},
      {"aware", K::boolean, d.aware ? "true" : "false", "groups only inside a region (topology-aware)"},
      {"rounds", K::integer, std::to_string(d.max_rounds), "rounds over the neighbors not yet covered", 0, INT_MAX},
      {"schedule", K::object, "", "a precomputed CombiningSchedule of this rank (virt::scatter_combining_schedules)"},
  };
}

CombiningOptions combining_from(const BackendOptions& o, const std::string& sdde) {
  CombiningOptions c;
  c.k = static_cast<int>(o.get_int("k", c.k));
  c.theta = static_cast<int>(o.get_int("theta", c.theta));
  c.aware = o.get_bool("aware", c.aware);
  c.max_rounds = static_cast<int>(o.get_int("rounds", c.max_rounds));
  c.given = o.object<CombiningSchedule>("schedule");
  c.sdde = sdde;
  return c;
}

void set_combining(BackendOptions& o, const CombiningOptions& c) {
  o.set("k", c.k).set("theta", c.theta).set("aware", c.aware).set("rounds", c.max_rounds);
  if (c.given) o.attach<CombiningSchedule>("schedule", c.given);
}

// Both read the backend's own options: backend_option_specs("auto") also lists the keys
// auto hands on to its candidates, and auto does not combine.
bool halo_backend_combines(const std::string& name) { return declares_option(backend_hooks(name).options, "k"); }

bool gather_backend_combines(const std::string& name) {
  return declares_option(gather_backend_hooks(name).options, "k");
}

}  // namespace sparsecomm

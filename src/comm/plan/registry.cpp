// The registries of both exchange shapes: the built-in backends of each (the one list of
// them in the library; a static library drops object files that nothing references, and
// self-registering objects with them, so the built-ins are called from here), and the
// public functions of plan.hpp and gather_plan.hpp that reach them, side by side.
#include "comm/plan/registry.hpp"

namespace sparsecomm {

namespace detail {
void register_p2p();
void register_neighbor();
void register_aggregated();
void register_aggregated_2step();
void register_combined();
void register_auto();
#ifndef SPARSECOMM_SMPI  // SimGrid's SMPI has no shared-memory windows
void register_shm();
void register_gather_shm();
#endif
void register_gather_basic();
void register_gather_combined();

HaloRegistry& halo_registry() {
  static HaloRegistry r("", [] {
    for (auto f : {register_p2p, register_neighbor, register_aggregated, register_aggregated_2step, register_combined,
                   register_auto})
      f();
#ifndef SPARSECOMM_SMPI
    register_shm();
#endif
  });
  return r;
}
GatherRegistry& gather_registry() {
  static GatherRegistry r("gather ", [] {
    register_gather_basic();
    register_gather_combined();
#ifndef SPARSECOMM_SMPI
    register_gather_shm();
#endif
  });
  return r;
}
}  // namespace detail

using detail::gather_registry;
using detail::halo_registry;

void register_backend(const std::string& name, const std::string& description, PlanFactory factory,
                      BackendHooks hooks) {
  halo_registry().add(name, {description, std::move(factory), std::move(hooks)});
}
void register_gather_backend(const std::string& name, const std::string& description, GatherFactory f,
                             GatherBackendHooks hooks) {
  gather_registry().add(name, {description, std::move(f), std::move(hooks)});
}

std::vector<std::string> backend_names() { return halo_registry().names(); }
std::vector<std::string> gather_backend_names() { return gather_registry().names(); }
bool backend_registered(const std::string& name) { return halo_registry().find(name) != nullptr; }
bool gather_backend_registered(const std::string& name) { return gather_registry().find(name) != nullptr; }

const BackendHooks& backend_hooks(const std::string& name) { return halo_registry().hooks(name); }
const GatherBackendHooks& gather_backend_hooks(const std::string& name) {
  return gather_registry().hooks(name);
}

std::string backend_description(const std::string& name) { return halo_registry().description(name); }
std::string gather_backend_description(const std::string& name) {
  return gather_registry().description(name);
}

std::vector<OptionSpec> gather_backend_option_specs(const std::string& name) {
  return gather_registry().hooks(name).options;
}

}  // namespace sparsecomm

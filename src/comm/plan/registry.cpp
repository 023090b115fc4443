// The registries of both exchange shapes: the built-in backends of each (every file of
// src/comm/plan/halo and gather, listed by CMake in builtin_backends.inc: a static library
// drops object files that nothing references, and self-registering objects with them, so
// the built-ins are called from here), and the public functions of plan.hpp and
// gather_plan.hpp that reach them, side by side.
#include "comm/plan/registry.hpp"

namespace sparsecomm {

namespace detail {
#define SPARSECOMM_BUILTIN_HALO(name) void register_##name();
#define SPARSECOMM_BUILTIN_GATHER(name) void register_gather_##name();
#include "builtin_backends.inc"
#undef SPARSECOMM_BUILTIN_HALO
#undef SPARSECOMM_BUILTIN_GATHER

HaloRegistry& halo_registry() {
  static HaloRegistry r("", [] {
#define SPARSECOMM_BUILTIN_HALO(name) register_##name();
#define SPARSECOMM_BUILTIN_GATHER(name)
#include "builtin_backends.inc"
#undef SPARSECOMM_BUILTIN_HALO
#undef SPARSECOMM_BUILTIN_GATHER
  });
  return r;
}
GatherRegistry& gather_registry() {
  static GatherRegistry r("gather ", [] {
#define SPARSECOMM_BUILTIN_HALO(name)
#define SPARSECOMM_BUILTIN_GATHER(name) register_gather_##name();
#include "builtin_backends.inc"
#undef SPARSECOMM_BUILTIN_HALO
#undef SPARSECOMM_BUILTIN_GATHER
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

// The registries of both exchange shapes and the public functions of plan.hpp and
// gather_plan.hpp that reach them: each pair (register_backend / register_gather_backend,
// backend_names / gather_backend_names, ...) is one member of Registry<Shape>, called for
// the shape. The built-in backends are every file of src/comm/plan/halo and gather, listed
// by CMake in builtin_backends.inc (a static library drops object files that nothing
// references, and self-registering objects with them, so the built-ins are called from here).
#include "comm/plan/registry.hpp"

#include <mutex>

namespace sparsecomm {

namespace detail {
#define SPARSECOMM_BUILTIN(register_fn) void register_fn();
#include "builtin_backends.inc"
#undef SPARSECOMM_BUILTIN

void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
#define SPARSECOMM_BUILTIN(register_fn) register_fn();
#include "builtin_backends.inc"
#undef SPARSECOMM_BUILTIN
  });
}

template <class Shape>
Registry<Shape>& registry() {
  static Registry<Shape> r;
  return r;
}
template Registry<HaloShape>& registry<HaloShape>();
template Registry<GatherShape>& registry<GatherShape>();
}  // namespace detail

namespace {
auto& halo() { return detail::registry<HaloShape>(); }
auto& gather() { return detail::registry<GatherShape>(); }
}  // namespace

void register_backend(const std::string& name, const std::string& description, PlanFactory factory,
                      BackendHooks hooks) {
  halo().add(name, {description, std::move(factory), std::move(hooks)});
}
void register_gather_backend(const std::string& name, const std::string& description, GatherFactory f,
                             GatherBackendHooks hooks) {
  gather().add(name, {description, std::move(f), std::move(hooks)});
}

std::vector<std::string> backend_names() { return halo().names(); }
std::vector<std::string> gather_backend_names() { return gather().names(); }
bool backend_registered(const std::string& name) { return halo().find(name) != nullptr; }
bool gather_backend_registered(const std::string& name) { return gather().find(name) != nullptr; }
const BackendHooks& backend_hooks(const std::string& name) { return halo().hooks(name); }
const GatherBackendHooks& gather_backend_hooks(const std::string& name) { return gather().hooks(name); }
std::string backend_description(const std::string& name) { return halo().description(name); }
std::string gather_backend_description(const std::string& name) { return gather().description(name); }
std::vector<OptionSpec> backend_option_specs(const std::string& name) { return halo().option_specs(name); }
std::vector<OptionSpec> gather_backend_option_specs(const std::string& name) { return gather().option_specs(name); }

}  // namespace sparsecomm

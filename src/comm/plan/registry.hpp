#pragma once
// One registry template for every exchange shape: halo Plans (plan.hpp) and allgather-shaped
// GatherPlans (gather_plan.hpp) each keep a Registry of their own entry type. A backend is
// one file that registers itself under a name with its factory and its hooks (what other
// parts need from it, e.g. its counts for plan statistics); nothing else lists backends.
//
// Built-in backends are added by `builtins` on the first look-up rather than by static
// registrar objects: a static library drops object files nobody references, and their
// registrars with them. std::call_once makes the first use thread-safe.
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/error.hpp"

namespace sparsecomm::detail {

/// What a backend registers: a description, the factory of its plans, its hooks.
template <class Factory, class Hooks>
struct BackendEntry {
  std::string description;
  Factory factory;
  Hooks hooks;
};

template <class Factory, class Hooks>
class Registry {
 public:
  using Entry = BackendEntry<Factory, Hooks>;

  /// `kind`: how error messages name the shape ("" or "gather "); `builtins` registers
  /// the built-in backends (through add()).
  Registry(std::string kind, void (*builtins)()) : kind_(std::move(kind)), builtins_(builtins) {}

  /// Adds or replaces `name`. Safe during the built-ins' own registration.
  void add(const std::string& name, Entry e) { entries_[name] = std::move(e); }

  /// The entry of `name`, or nullptr.
  const Entry* find(const std::string& name) {
    init();
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

  /// Every registered name, sorted.
  std::vector<std::string> names() {
    init();
    std::vector<std::string> n;
    for (const auto& kv : entries_) n.push_back(kv.first);
    return n;
  }

  /// The hooks of `name`; InputError listing the names if unknown.
  const Hooks& hooks(const std::string& name) { return get(name).hooks; }
  /// The description of `name`; InputError if unknown.
  const std::string& description(const std::string& name) { return get(name).description; }

  /// "unknown backend 'x'; valid backends: a, b, c".
  std::string unknown(const std::string& name) {
    std::string list;
    for (const auto& n : names()) list += (list.empty() ? "" : ", ") + n;
    return "unknown " + kind_ + "backend '" + name + "'; valid backends: " + list;
  }

 private:
  const Entry& get(const std::string& name) {
    const Entry* e = find(name);
    if (!e) throw InputError(unknown(name));
    return *e;
  }
  void init() { std::call_once(once_, builtins_); }

  std::string kind_;
  void (*builtins_)();
  std::once_flag once_;
  std::map<std::string, Entry> entries_;
};

/// The registry of each shape, created on first use with its built-in backends
/// (registry.cpp, the one list of them).
using HaloRegistry = Registry<PlanFactory, BackendHooks>;
using GatherRegistry = Registry<GatherFactory, GatherBackendHooks>;
HaloRegistry& halo_registry();
/// What both plan shapes do when destroyed during an exchange: complete it (`wait`), and
/// report a failure on stderr instead of throwing from a destructor.
void complete_in_destructor(const std::string& plan, const std::function<void()>& wait) noexcept;
/// The message of a start()/wait() whose value type does not match the plan's value size.
std::string value_size_mismatch(const std::string& call, size_t got, int want);
GatherRegistry& gather_registry();

}  // namespace sparsecomm::detail

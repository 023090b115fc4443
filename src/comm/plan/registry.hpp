#pragma once
// One registry for every exchange shape: a Registry<Shape> per shape (HaloShape: Plans,
// plan.hpp; GatherShape: GatherPlans, gather_plan.hpp), each entry a backend's factory and
// its BackendHooksFor<Shape>. A backend is one file that registers itself under a name;
// nothing else lists backends, and the public functions of both shapes (registry.cpp) are
// these members.
//
// Built-in backends are added by detail::register_builtins() on the first look-up of either
// shape rather than by static registrar objects: a static library drops object files nobody
// references, and their registrars with them. std::call_once makes the first use
// thread-safe.
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/error.hpp"

namespace sparsecomm::detail {

/// Registers every built-in backend of both shapes, once (registry.cpp: the list CMake
/// generates from the files of src/comm/plan/halo and gather).
void register_builtins();

template <class Shape>
class Registry {
 public:
  using Hooks = BackendHooksFor<Shape>;
  /// What a backend registers: a description, the factory of its plans, its hooks.
  struct Entry {
    std::string description;
    typename Shape::Factory factory;
    Hooks hooks;
  };

  /// Adds or replaces `name`. Safe during the built-ins' own registration.
  void add(const std::string& name, Entry e) { entries_[name] = std::move(e); }

  /// The entry of `name`, or nullptr.
  const Entry* find(const std::string& name) {
    register_builtins();
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

  /// Every registered name, sorted.
  std::vector<std::string> names() {
    register_builtins();
    std::vector<std::string> n;
    for (const auto& kv : entries_) n.push_back(kv.first);
    return n;
  }

  /// The hooks of `name`; InputError listing the names if unknown.
  const Hooks& hooks(const std::string& name) { return get(name).hooks; }
  /// The description of `name`; InputError if unknown.
  const std::string& description(const std::string& name) { return get(name).description; }

  /// The options the shape's make_plan accepts for `name`: its own, and for a backend that
  /// chooses among the others (auto) theirs too, which it hands on to each candidate (the
  /// first declaration of a key wins). InputError if unknown.
  std::vector<OptionSpec> option_specs(const std::string& name) {
    const Hooks& h = hooks(name);
    std::vector<OptionSpec> specs = h.options;
    if (h.chooses_among_others)
      for (const auto& [other, e] : entries_) {
        if (e.hooks.chooses_among_others) continue;
        for (const auto& s : e.hooks.options)
          if (!declares_option(specs, s.key)) specs.push_back(s);
      }
    return specs;
  }

  /// "unknown backend 'x'; valid backends: a, b, c" ("unknown gather backend ..." for the
  /// allgather shape).
  std::string unknown(const std::string& name) {
    std::string list;
    for (const auto& n : names()) list += (list.empty() ? "" : ", ") + n;
    const std::string kind = std::is_same_v<Shape, HaloShape> ? "" : std::string(Shape::name) + " ";
    return "unknown " + kind + "backend '" + name + "'; valid backends: " + list;
  }

 private:
  const Entry& get(const std::string& name) {
    const Entry* e = find(name);
    if (!e) throw InputError(unknown(name));
    return *e;
  }

  std::map<std::string, Entry> entries_;
};

/// The registry of exchange shape `Shape`, with every built-in backend once looked up in.
template <class Shape>
Registry<Shape>& registry();

/// What both plan shapes do when destroyed during an exchange: complete it (`wait`), and
/// report a failure on stderr instead of throwing from a destructor.
void complete_in_destructor(const std::string& plan, const std::function<void()>& wait) noexcept;
/// The message of a start()/wait() whose value type does not match the plan's value size.
std::string value_size_mismatch(const std::string& call, size_t got, int want);

}  // namespace sparsecomm::detail

#pragma once
// Backend-owned options. What only some backends read (message combining's group size,
// auto's model file, ...) is not a field of PlanOptions / GatherOptions but a key/value
// option that the backend declares, with its kind, bounds and help, when it registers
// (BackendHooks::options, GatherBackendHooks::options). make_plan / make_gather_plan
// validate what the caller set against the chosen backend's declaration (an unknown key or
// a malformed value is an InputError on every rank, naming the backend's keys), so a new
// backend brings its options with it and nothing outside its file lists them. The C API
// (sparsecomm_<key> info keys), the PETSc options (-sparsecomm_<key>) and the CLI
// (--option key=value) pass them through unchanged.
//
//   PlanOptions o;
//   o.backend.set("k", "4").set("aware", "true");
//   auto plan = make_plan("combined", pattern, loc, comm, o);
//
// Values are strings (as they come from the command line, an MPI_Info or the PETSc
// options database); a backend reads them parsed (get_int, get_bool, ...). An in-process
// object that has no text form (a precomputed combining schedule) travels as an
// attachment under a key declared with Kind::object.
#include <any>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sparsecomm {

/// One option a backend declares.
struct OptionSpec {
  enum class Kind { integer, boolean, real, text, object };
  std::string key;
  Kind kind = Kind::text;
  std::string default_value;  ///< as text, for help output ("" for object)
  std::string help;
  int64_t min = std::numeric_limits<int64_t>::min();  ///< integer: smallest valid value
  int64_t max = std::numeric_limits<int64_t>::max();  ///< integer: largest valid value
  /// The value may differ between ranks (a node-local file path): make_plan leaves it out
  /// of its agreement check, and the backend agrees on what it derives from it.
  bool per_rank = false;
  /// The key of another option without which this one has no effect (auto's race_within
  /// without race): setting this one while that one is unset, 0 or false is an InputError
  /// (an option that would be ignored is an error, never a silent choice).
  std::string only_with = "";
};

/// "integer", "boolean", ... (help output).
const char* kind_name(OptionSpec::Kind k);

class BackendOptions {
 public:
  /// Sets `key` to `value` (text; checked against the backend's declaration by make_plan).
  BackendOptions& set(const std::string& key, const std::string& value);
  BackendOptions& set(const std::string& key, const char* value) { return set(key, std::string(value)); }
  BackendOptions& set(const std::string& key, int64_t value) { return set(key, std::to_string(value)); }
  BackendOptions& set(const std::string& key, int value) { return set(key, std::to_string(value)); }
  BackendOptions& set(const std::string& key, bool value) { return set(key, std::string(value ? "true" : "false")); }
  /// Parses "key=value,key=value" (the CLI's --option) and sets each; InputError on a
  /// pair without '=', an empty key, or a key given twice in the list.
  BackendOptions& set_list(const std::string& list);
  /// Attaches an in-process object under `key` (a key declared Kind::object).
  template <class T>
  BackendOptions& attach(const std::string& key, std::shared_ptr<const T> obj) {
    objects_[key] = std::move(obj);
    return *this;
  }
  void erase(const std::string& key);
  bool has(const std::string& key) const { return values_.count(key) || objects_.count(key); }
  /// `key` holds an attachment (not text).
  bool attached(const std::string& key) const { return objects_.count(key) > 0; }
  bool empty() const { return values_.empty() && objects_.empty(); }

  /// Typed reads with the backend's default; InputError when the value does not parse
  /// (make_plan validates first, so inside a backend they do not throw).
  std::string get(const std::string& key, const std::string& def) const;
  int64_t get_int(const std::string& key, int64_t def) const;
  bool get_bool(const std::string& key, bool def) const;
  double get_real(const std::string& key, double def) const;
  template <class T>
  std::shared_ptr<const T> object(const std::string& key) const {
    auto it = objects_.find(key);
    if (it == objects_.end()) return nullptr;
    return std::any_cast<std::shared_ptr<const T>>(it->second);
  }

  /// Every key set, sorted (text values and attachments).
  std::vector<std::string> keys() const;
  /// Only the keys `specs` declares (the C API's info keys serve every call; each call
  /// keeps what its backend reads).
  BackendOptions only(const std::vector<OptionSpec>& specs) const;
  /// A string equal on two ranks iff their text options are (attachments: their keys),
  /// leaving out the keys `specs` declares per_rank.
  std::string canonical(const std::vector<OptionSpec>& specs = {}) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::any> objects_;
};

/// Empty when every option in `opt` is declared by `specs` and its value parses with the
/// declared kind and bounds; otherwise the first problem, naming `backend` and its keys.
std::string validate_backend_options(const std::string& backend, const std::vector<OptionSpec>& specs,
                                     const BackendOptions& opt);
/// Empty when `value` is valid for `spec`, else why not ("'x' is not an integer").
std::string option_value_error(const OptionSpec& spec, const std::string& value);
/// True when `specs` declares `key`.
bool declares_option(const std::vector<OptionSpec>& specs, const std::string& key);
/// "k (integer >= 2, default 2): group size ..." lines for help output.
std::string describe_options(const std::vector<OptionSpec>& specs);

}  // namespace sparsecomm

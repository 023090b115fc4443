#include "sparsecomm/comm/plan/backend_options.hpp"

#include <algorithm>
#include <cctype>

#include "sparsecomm/core/error.hpp"
#include "core/parse.hpp"

namespace sparsecomm {

std::string option_value_error(const OptionSpec& spec, const std::string& value) {
  switch (spec.kind) {
    case OptionSpec::Kind::integer: {
      int64_t x = 0;
      if (!parse_int(value, x)) return "'" + value + "' is not an integer";
      if (x < spec.min || x > spec.max)
        return "'" + value + "' is out of range (must be >= " + std::to_string(spec.min) +
               (spec.max == std::numeric_limits<int64_t>::max() ? "" : " and <= " + std::to_string(spec.max)) + ")";
      return "";
    }
    case OptionSpec::Kind::boolean: {
      bool b = false;
      return parse_bool(value, b) ? "" : "'" + value + "' is not a boolean (true/false, 1/0, yes/no, on/off)";
    }
    case OptionSpec::Kind::real: {
      double d = 0;
      return parse_double(value, d) ? "" : "'" + value + "' is not a finite number";
    }
    case OptionSpec::Kind::text:
      return value.empty() ? "is empty" : "";
    case OptionSpec::Kind::object:
      return "takes an in-process object (BackendOptions::attach), not text";
  }
  return "";
}

const char* kind_name(OptionSpec::Kind k) {
  switch (k) {
    case OptionSpec::Kind::integer: return "integer";
    case OptionSpec::Kind::boolean: return "boolean";
    case OptionSpec::Kind::real: return "number";
    case OptionSpec::Kind::text: return "text";
    case OptionSpec::Kind::object: return "object";
  }
  return "?";
}

BackendOptions& BackendOptions::set(const std::string& key, const std::string& value) {
  if (key.empty()) throw InputError("backend option with an empty key (value '" + value + "')");
  values_[key] = value;
  objects_.erase(key);
  return *this;
}

BackendOptions& BackendOptions::set_list(const std::string& list) {
  size_t pos = 0;
  std::vector<std::string> seen;
  while (pos <= list.size() && !list.empty()) {
    const size_t end = std::min(list.find(',', pos), list.size());
    const std::string pair = list.substr(pos, end - pos);
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("backend option '" + pair + "' is not key=value (in '" + list + "')");
    const std::string key = pair.substr(0, eq);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw InputError("backend option '" + key + "' is given twice (in '" + list + "'): give each key once");
    seen.push_back(key);
    set(key, pair.substr(eq + 1));
    pos = end + 1;
  }
  return *this;
}

void BackendOptions::erase(const std::string& key) {
  values_.erase(key);
  objects_.erase(key);
}

std::string BackendOptions::get(const std::string& key, const std::string& def) const {
  auto it = values_.find(key);
  return it == values_.end() ? def : it->second;
}

namespace {

// The value of `key` in `values` read by `parse`, `def` where the key is not set; a value
// that does not parse is an error naming the option and `what` it should be.
template <class Map, class T, class Parse>
T typed_value(const Map& values, const std::string& key, T def, Parse parse, const char* what) {
  auto it = values.find(key);
  if (it == values.end()) return def;
  T x{};
  if (!parse(it->second, x)) throw InputError("backend option " + key + ": '" + it->second + "' is not " + what);
  return x;
}

}  // namespace

int64_t BackendOptions::get_int(const std::string& key, int64_t def) const {
  return typed_value(values_, key, def, [](const std::string& v, int64_t& x) { return parse_int(v, x); }, "an integer");
}

bool BackendOptions::get_bool(const std::string& key, bool def) const {
  return typed_value(values_, key, def, [](const std::string& v, bool& b) { return parse_bool(v, b); }, "a boolean");
}

double BackendOptions::get_real(const std::string& key, double def) const {
  return typed_value(values_, key, def, [](const std::string& v, double& d) { return parse_double(v, d); }, "a number");
}

std::vector<std::string> BackendOptions::keys() const {
  std::vector<std::string> k;
  for (const auto& kv : values_) k.push_back(kv.first);
  for (const auto& kv : objects_) k.push_back(kv.first);
  std::sort(k.begin(), k.end());
  return k;
}

BackendOptions BackendOptions::only(const std::vector<OptionSpec>& specs) const {
  BackendOptions o;
  for (const auto& kv : values_)
    if (declares_option(specs, kv.first)) o.values_.insert(kv);
  for (const auto& kv : objects_)
    if (declares_option(specs, kv.first)) o.objects_.insert(kv);
  return o;
}

std::string BackendOptions::canonical(const std::vector<OptionSpec>& specs) const {
  std::string s;
  for (const auto& kv : values_) {  // not a structured binding: C++17 lambdas cannot capture one (clang)
    auto it = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& o) { return o.key == kv.first; });
    s += kv.first + "=" + (it != specs.end() && it->per_rank ? "<per rank>" : kv.second) + ";";
  }
  for (const auto& kv : objects_) s += kv.first + "=<object>;";
  return s;
}

bool declares_option(const std::vector<OptionSpec>& specs, const std::string& key) {
  return std::any_of(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.key == key; });
}

std::string validate_backend_options(const std::string& backend, const std::vector<OptionSpec>& specs,
                                     const BackendOptions& opt) {
  for (const auto& key : opt.keys()) {
    auto it = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.key == key; });
    if (it == specs.end()) {
      std::string list;
      for (const auto& s : specs) list += (list.empty() ? "" : ", ") + s.key;
      return "backend '" + backend + "' has no option '" + key + "'" +
             (list.empty() ? " (it takes none)" : "; its options: " + list);
    }
    if (opt.attached(key)) {
      if (it->kind != OptionSpec::Kind::object)
        return "backend '" + backend + "': option " + key + " takes a " + kind_name(it->kind) + ", not an object";
      continue;
    }
    const std::string why = option_value_error(*it, opt.get(key, ""));
    if (!why.empty()) return "backend '" + backend + "': option " + key + ": " + why;
    if (!it->only_with.empty()) {
      // In effect: a number above 0 or a true switch, in any spelling the parsers take
      // ("00" and "off" are not).
      const std::string on = opt.get(it->only_with, "");
      int64_t n = 0;
      bool b = false;
      if (!(parse_int(on, n) ? n > 0 : parse_bool(on, b) && b))
        return "backend '" + backend + "': option " + key + " has no effect unless option " + it->only_with +
               " is set (above 0, or true)";
    }
  }
  return "";
}

std::string describe_options(const std::vector<OptionSpec>& specs) {
  std::string out;
  for (const auto& s : specs) {
    out += "  " + s.key + " (" + kind_name(s.kind);
    if (s.kind == OptionSpec::Kind::integer && s.min != std::numeric_limits<int64_t>::min())
      out += " >= " + std::to_string(s.min);
    if (!s.default_value.empty()) out += ", default " + s.default_value;
    out += "): " + s.help + "\n";
  }
  return out;
}

}  // namespace sparsecomm

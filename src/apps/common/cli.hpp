#pragma once
// Tiny option parser shared by the benchmark programs: "--name value" and "--flag".
// Unknown options are errors (the message lists the valid ones).
#include <climits>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparsecomm/core/error.hpp"
#include "core/parse.hpp"

namespace sparsecomm::apps {

class Options {
 public:
  /// `spec`: option name -> (default value, help). A default of "" with help starting
  /// with "[flag]" marks a flag without value.
  Options(std::map<std::string, std::pair<std::string, std::string>> spec, std::string usage)
      : spec_(std::move(spec)), usage_(std::move(usage)) {
    for (const auto& [k, v] : spec_) values_[k] = v.first;
  }

  /// Parses argv; returns false when --help was given. Throws std::invalid_argument.
  bool parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") return false;
      if (a.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + a + "'\n" + help());
      std::string name = a.substr(2), value;
      auto eq = name.find('=');
      if (eq != std::string::npos) value = name.substr(eq + 1), name = name.substr(0, eq);
      auto it = spec_.find(name);
      if (it == spec_.end()) throw std::invalid_argument("unknown option --" + name + "\n" + help());
      const bool flag = it->second.second.rfind("[flag]", 0) == 0;
      given_.push_back(name);
      if (flag) {
        if (eq != std::string::npos)
          throw std::invalid_argument("option --" + name + " is a flag and takes no value (got '" + a +
                                      "'): give --" + name + " to turn it on, leave it out for off");
        values_[name] = "1";
        continue;
      }
      if (eq == std::string::npos) {
        if (i + 1 >= argc) throw std::invalid_argument("option --" + name + " needs a value");
        value = argv[++i];
      }
      values_[name] = value;
    }
    return true;
  }

  const std::string& get(const std::string& name) const { return values_.at(name); }
  /// Whether --name was on the command line (whatever its value, even the default).
  bool given(const std::string& name) const {
    for (const auto& g : given_)
      if (g == name) return true;
    return false;
  }
  /// InputError if any of `names` was given while it does not apply (`applies` false):
  /// "--name <why>" -- an option that would be ignored is an error, never a silent choice.
  void only_if(bool applies, const std::vector<std::string>& names, const std::string& why) const {
    if (applies) return;
    for (const auto& n : names)
      if (given(n)) throw InputError("option --" + n + " " + why);
  }
  bool flag(const std::string& name) const { return values_.at(name) == "1"; }
  int64_t get_int64(const std::string& name) const {
    int64_t v = 0;
    if (parse_int(get(name), v)) return v;
    throw std::invalid_argument("option --" + name + " expects an integer, got '" + get(name) + "'");
  }
  int get_int(const std::string& name) const {
    const int64_t v = get_int64(name);
    if (v >= INT_MIN && v <= INT_MAX) return static_cast<int>(v);
    throw std::invalid_argument("option --" + name + " expects an integer, got '" + get(name) + "'");
  }
  /// A count that must be at least `min` (--reps, --width, --roots ...): 0 or a negative
  /// number is an error naming the option, not an empty table or a division by zero.
  int get_count(const std::string& name, int min = 1) const {
    get_int(name);  // the int range first (its message), then the minimum
    return static_cast<int>(get_count64(name, min));
  }
  int64_t get_count64(const std::string& name, int64_t min = 1) const {
    const int64_t v = get_int64(name);
    if (v < min)
      throw std::invalid_argument("option --" + name + " must be at least " + std::to_string(min) + ", got " +
                                  std::to_string(v));
    return v;
  }
  double get_double(const std::string& name) const {
    double v = 0;
    if (parse_double(get(name), v)) return v;
    throw std::invalid_argument("option --" + name + " expects a number, got '" + get(name) + "'");
  }

  std::string help() const {
    std::string h = usage_ + "\noptions:\n";
    for (const auto& [k, v] : spec_) {
      h += "  --" + k;
      if (v.second.rfind("[flag]", 0) != 0) h += " <" + (v.first.empty() ? std::string("value") : v.first) + ">";
      h += "\n      " + v.second + "\n";
    }
    return h;
  }

 private:
  std::map<std::string, std::pair<std::string, std::string>> spec_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> given_;
  std::string usage_;
};

/// Splits "a,b,c".
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    auto end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

/// Splits "a;b;c" or "a b c": lists of specs that contain commas themselves (topologies,
/// generator specs). ';' also avoids CMake's list separator trouble in test arguments.
inline std::vector<std::string> split_specs(const std::string& s) {
  std::vector<std::string> out;
  std::string tok;
  for (char ch : s + ";") {
    if (ch == ';' || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      if (!tok.empty()) out.push_back(tok);
      tok.clear();
    } else {
      tok += ch;
    }
  }
  return out;
}

/// The comma-separated integers of option --`name` (its value `s`), each >= min_value;
/// anything else, or an empty list, is an InputError naming the option.
inline std::vector<int64_t> int_list(const std::string& name, const std::string& s, int64_t min_value) {
  std::vector<int64_t> v;
  for (const auto& x : split_list(s)) {
    int64_t n = 0;
    if (!parse_int(x, n) || n < min_value)
      throw InputError("--" + name + " expects integers >= " + std::to_string(min_value) + ", got '" + x + "'");
    v.push_back(n);
  }
  if (v.empty()) throw InputError("--" + name + " is empty");
  return v;
}

}  // namespace sparsecomm::apps

#pragma once
// Whole-string number parsing shared by the option parsers (CLI, C API info keys,
// region layouts, topology specs): each caller words its own error, none repeats the
// stoll / stod / position / exception dance, and none accepts trailing garbage ("2x").
#include <cctype>
#include <cmath>
#include <cstdint>
#include <exception>
#include <string>

namespace sparsecomm {

/// True when all of `s` is a decimal integer that fits int64_t (std::stoll's syntax:
/// leading blanks and a sign allowed), stored in `out`; false otherwise, `out` untouched.
inline bool parse_int(const std::string& s, int64_t& out) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  if (used != s.size()) return false;
  out = v;
  return true;
}

/// True when all of `s` is a finite decimal floating-point number (std::stod's syntax),
/// stored in `out`; false otherwise ("0.1x", "", "nan", "inf"), `out` untouched.
inline bool parse_double(const std::string& s, double& out) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  if (used != s.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

/// True when `s` is a boolean spelling (true/false, 1/0, yes/no, on/off; any case), stored
/// in `out`; false otherwise, `out` untouched. The one spelling of every switch: C API info
/// keys, backend options, PETSc options, the interposition layers' environment and MPI_Info.
inline bool parse_bool(const std::string& s, bool& out) {
  std::string l = s;
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "true" || l == "1" || l == "yes" || l == "on") return out = true, true;
  if (l == "false" || l == "0" || l == "no" || l == "off") return out = false, true;
  return false;
}

}  // namespace sparsecomm

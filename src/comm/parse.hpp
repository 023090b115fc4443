#pragma once
// Whole-string integer parsing shared by the option parsers (CLI, C API info keys,
// region layouts): each caller words its own error, none repeats the stoll / position /
// exception dance.
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

}  // namespace sparsecomm

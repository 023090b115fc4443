#pragma once
// A plain-text table with auto-sized columns: the first column left-aligned, the rest
// right-aligned. For the comparison tables the benchmarks print.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace sparsecomm::apps {

class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void rule() { rows_.emplace_back(); }  // a separator line

  std::string str() const {
    std::vector<size_t> w;
    for (const auto& r : rows_)
      for (size_t i = 0; i < r.size(); ++i) {
        if (w.size() <= i) w.push_back(0);
        w[i] = std::max(w[i], r[i].size());
      }
    size_t total = 0;
    for (size_t x : w) total += x + 2;
    std::string out;
    for (size_t k = 0; k < rows_.size(); ++k) {
      const auto& r = rows_[k];
      if (r.empty()) {
        out += std::string(total, '-') + "\n";
        continue;
      }
      for (size_t i = 0; i < r.size(); ++i) {
        const std::string pad(w[i] - r[i].size(), ' ');
        out += i == 0 ? r[i] + pad : pad + r[i];
        out += "  ";
      }
      out += "\n";
      if (k == 0) out += std::string(total, '-') + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

/// printf-style formatting of one number.
inline std::string num(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace sparsecomm::apps

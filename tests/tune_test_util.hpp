#pragma once
// What the tuning tests share: a tuned (or any) plan's values judged against p2p's.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"
#include "test_util.hpp"

namespace sparsecomm::test {

/// `n` exchanges of width-1 doubles on `plan` and on p2p, owned values changing every time;
/// the ghost entries that differ from p2p's.
inline int64_t wrong_values(Plan& plan, const Pattern& p, int64_t n) {
  auto ref = make_plan("p2p", p, Locality::ppn(MPI_COMM_WORLD, 2), MPI_COMM_WORLD);
  int32_t owned = 0, ghosts = 0;
  for (int32_t i : p.send().indices) owned = std::max(owned, i + 1);
  for (int32_t i : p.recv().indices) ghosts = std::max(ghosts, i + 1);
  std::vector<double> x(static_cast<size_t>(owned)), g(static_cast<size_t>(ghosts)), want(g.size());
  int64_t bad = 0;
  for (int64_t it = 0; it < n; ++it) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = 1e6 * rank() + static_cast<double>(i) + 0.25 * it;
    std::fill(g.begin(), g.end(), -1.0), std::fill(want.begin(), want.end(), -1.0);
    ref->exchange(x.data(), want.data());
    plan.exchange(x.data(), g.data());
    for (size_t i = 0; i < g.size(); ++i) bad += g[i] != want[i];
  }
  return bad;
}

}  // namespace sparsecomm::test

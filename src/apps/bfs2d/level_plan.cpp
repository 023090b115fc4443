// Plan level: the expand through an allgather-shaped GatherPlan over the processor column
// and the fold through a halo-exchange Plan whose Pattern is discovered by the SDDE every
// level (the pattern changes every level: who holds candidates for whom). Every exchange of
// this variant goes through the library; only the transpose (one MPI_Sendrecv with one
// partner, Ctx::transpose) is MPI directly.
#include "bfs2d/level.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/sdde.hpp"

namespace sparsecomm::bfs::detail {

namespace {

class PlanVariant : public LevelVariant {
 public:
  explicit PlanVariant(const Grid& grid) : loc_(Locality::detect(grid.comm())), sdde_(grid.comm(), loc_) {}

  std::vector<int64_t> level(Ctx& c, const std::vector<int64_t>& frontier) override {
    return c.compute_and_fold(expand(c, c.transpose(frontier)),
                              [&](const std::vector<int64_t>& data, const std::vector<int>& counts) {
                                return fold(c, data, counts);
                              });
  }

 private:
  // My transposed piece L and the column's other pieces, through a GatherPlan.
  std::vector<int64_t> expand(Ctx& c, std::vector<int64_t> L) {
    Clock a(&c.t.expand), e(&c.t.exposed);
    const int q = c.grid.pr();
    Topology col;
    for (int i = 0; i < q; ++i)
      if (i != c.grid.row()) col.sources.push_back(c.grid.rank_of(i, c.grid.col()));
    col.destinations = col.sources;
    GatherOptions go;
    auto plan = make_gather_plan(c.opt.gather_backend, col, loc_, c.grid.comm(), static_cast<int64_t>(L.size()), go);
    std::vector<int64_t> recv(static_cast<size_t>(plan->recv_total()));
    plan->exchange(L.data(), recv.data());
    L.insert(L.end(), recv.begin(), recv.end());
    return L;
  }

  // The candidates (v, u) bucketed by owner column: mine are kept; for the others, the send
  // side holds the candidate parents u, one segment per owner, and the SDDE carries the
  // vertex ids v so the owners learn who sends them what. Returns the (v, u) pairs I own.
  std::vector<int64_t> fold(Ctx& c, const std::vector<int64_t>& data, const std::vector<int>& counts) {
    const int me = comm_rank(c.grid.comm());
    std::vector<int64_t> pairs;
    PatternSide send, recv;
    SparseMessages<int64_t> ids;
    std::vector<int64_t> u;
    int64_t pos = 0;
    for (int j = 0; j < c.grid.pc(); ++j) {
      const int owner = c.grid.rank_of(c.grid.row(), j);
      std::vector<int64_t> v;
      for (int k = 0; k < counts[j]; k += 2) v.push_back(data[pos + k]), u.push_back(data[pos + k + 1]);
      pos += counts[j];
      if (owner == me) {
        for (size_t k = 0; k < v.size(); ++k) pairs.insert(pairs.end(), {v[k], u[u.size() - v.size() + k]});
        u.resize(u.size() - v.size());
        continue;
      }
      if (v.empty()) continue;
      send.ranks.push_back(owner);
      for (size_t k = 0; k < v.size(); ++k) {
        send.indices.push_back(static_cast<int32_t>(u.size() - v.size() + k));
        send.global_ids.push_back(v[k]);
      }
      send.offsets.push_back(static_cast<int64_t>(send.indices.size()));
      ids.add(owner, v);
    }
    auto got = sdde_.exchange(ids, c.opt.sdde);
    recv.ranks = got.ranks;
    recv.offsets = got.offsets;
    recv.global_ids = got.data;
    for (size_t k = 0; k < got.data.size(); ++k) recv.indices.push_back(static_cast<int32_t>(k));
    Pattern pat(send, recv, static_cast<int32_t>(u.size()), static_cast<int32_t>(got.data.size()));
    auto plan = make_plan(c.opt.backend, pat, loc_, c.grid.comm());
    std::vector<int64_t> ghost(got.data.size());
    plan->exchange(u.data(), ghost.data());
    for (size_t k = 0; k < ghost.size(); ++k) pairs.insert(pairs.end(), {got.data[k], ghost[k]});
    return pairs;
  }

  Locality loc_;
  Sdde sdde_;
};

}  // namespace

std::unique_ptr<LevelVariant> make_plan_variant(const Grid& grid) { return std::make_unique<PlanVariant>(grid); }

}  // namespace sparsecomm::bfs::detail

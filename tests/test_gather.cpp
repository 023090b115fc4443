// Allgather-shaped exchange: every backend (suites parameterised by the registry's names,
// one case per backend) delivers exactly
// what MPI_Neighbor_allgatherv would, over random graphs, Moore neighborhoods, graphs from
// SuiteSparse block patterns, empty neighborhoods, self-loops; combining options swept;
// completion by wait() and by polling test().
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/combining_options.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

// Block of rank s: count(s) values.
int64_t count_of(int s, bool varying) { return varying ? 1 + (s * 7) % 4 : 3; }
double value_of(int s, int64_t i) { return 1000.0 * s + static_cast<double>(i) + 0.25; }

void check_topology(const Topology& t, const std::string& backend, const std::string& label, bool quick = false) {
  const int me = test::rank();
  std::vector<CombiningOptions> combos;
  for (int k : {2, 3, 4})
    for (int theta : {1, 2, 4})
      for (bool aware : {false, true}) {
        if (quick && (theta == 2 || k == 3)) continue;
        CombiningOptions c;
        c.k = k, c.theta = theta, c.aware = aware;
        combos.push_back(c);
      }
  for (const std::string regions : {"ppn:2", "ppn:4"}) {
    Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
    const bool combined = backend == "combined";
    for (size_t ci = 0; ci < (combined ? combos.size() : 1); ++ci)
      for (bool persistent : {true, false})
        for (bool varying : {false, true}) {
          GatherOptions opt;
          opt.persistent_requests = persistent;
          opt.same_count = !varying && persistent;  // allgather: sizes not exchanged
          if (combined) set_combining(opt.backend, combos[ci]);
          // Transfers between ranks of one node: through the window (default) with
          // persistent requests, as messages without.
          if (combined && !persistent) opt.backend.set("window", false);
          const CombiningOptions co = combining_from(opt.backend, opt.sdde);
          const std::string what = label + " " + backend + " " + regions + " k=" + std::to_string(co.k) +
                                   " theta=" + std::to_string(co.theta) + (co.aware ? " aware" : " agnostic") +
                                   (persistent ? " persistent" : "") + (combined && !persistent ? " window=false" : "") +
                                   (varying ? " allgatherv" : " allgather") + (opt.same_count ? " same_count" : "");
          auto plan = make_gather_plan(backend, t, loc, MPI_COMM_WORLD, count_of(me, varying), opt);
          ASSERT_EQ(plan->recv_counts().size(), t.sources.size());
          for (int round = 0; round < 2; ++round) {
            std::vector<double> block(static_cast<size_t>(count_of(me, varying)));
            for (size_t i = 0; i < block.size(); ++i) block[i] = value_of(me, static_cast<int64_t>(i)) + round;
            std::vector<double> recv(static_cast<size_t>(plan->recv_total()), -1);
            if (round == 0) {
              plan->exchange(block.data(), recv.data());
            } else {  // completion by polling test(), which advances the stages itself
              plan->start(block.data());
              long polls = 0;
              while (!plan->test(recv.data())) ++polls;
              ASSERT_FALSE(plan->active()) << what << " after " << polls << " polls";
            }
            for (size_t k = 0; k < t.sources.size(); ++k) {
              const int s = t.sources[k];
              ASSERT_EQ(plan->recv_counts()[k], count_of(s, varying)) << what;
              for (int64_t i = 0; i < count_of(s, varying); ++i)
                ASSERT_EQ(recv[plan->recv_offsets()[k] + i], value_of(s, i) + round)
                    << what << " from " << s << " value " << i << " round " << round;
            }
          }
        }
  }
}

SPC_BACKEND_SUITE(GatherExchange, gather_backend_names());
TEST_P(GatherExchange, ErdosRenyi) {
  for (double d : {0.3, 0.7, 1.0})
    check_topology(Topology::erdos_renyi(MPI_COMM_WORLD, d, 9), GetParam(), "er " + std::to_string(d));
}
// Each rank computes its ER in-neighbors from the edge hash, without an exchange: they
// must be exactly the ranks that list it as a destination.
TEST(Gather, ErdosRenyiSourcesAreThoseThatSendToMe) {
  for (double d : {0.0, 0.1, 0.3, 1.0}) {
    Topology t = Topology::erdos_renyi(MPI_COMM_WORLD, d, 9);
    Topology u = Topology::from_destinations(MPI_COMM_WORLD, t.destinations);
    EXPECT_EQ(t.sources, u.sources) << "density " << d;
  }
  EXPECT_TRUE(Topology::parse(MPI_COMM_WORLD, "er:0.3,9") == Topology::erdos_renyi(MPI_COMM_WORLD, 0.3, 9));
  EXPECT_THROW(Topology::erdos_renyi(MPI_COMM_WORLD, 1.5), InputError);
}
TEST_P(GatherExchange, Moore) {
  check_topology(Topology::moore(MPI_COMM_WORLD, 2, 1), GetParam(), "moore 2,1");
  check_topology(Topology::moore(MPI_COMM_WORLD, 1, 3), GetParam(), "moore 1,3");
}
// moore_destinations against the plain walk over every offset in [-radius, radius]^dims
// (wrapping), on sides that do and do not wrap; and a radius far beyond the sides (the walk
// would take 13^6 steps per rank for moore:6,6; the fuzz target found it) stays at most p.
TEST(Gather, MooreNeighborsEqualTheFullWalk) {
  auto walk = [](int rank, int p, int dims, int radius) {
    const std::vector<int> side = balanced_dims(p, dims);
    std::vector<int> c(dims);
    for (int d = 0, r = rank; d < dims; ++d) c[d] = r % side[d], r /= side[d];
    std::set<int> out;
    std::vector<int> off(dims, -radius);
    while (true) {
      int r = 0, stride = 1;
      for (int d = 0; d < dims; ++d) r += ((c[d] + off[d]) % side[d] + side[d]) % side[d] * stride, stride *= side[d];
      if (r != rank) out.insert(r);
      int d = 0;
      while (d < dims && off[d] == radius) off[d++] = -radius;
      if (d == dims) break;
      ++off[d];
    }
    return std::vector<int>(out.begin(), out.end());
  };
  for (int p : {1, 7, 12, 28, 64})
    for (int dims = 1; dims <= 3; ++dims)
      for (int radius = 1; radius <= 4; ++radius)
        for (int rank = 0; rank < p; rank += 5) {
          SCOPED_TRACE("p " + std::to_string(p) + " moore " + std::to_string(dims) + "," + std::to_string(radius));
          EXPECT_EQ(moore_destinations(rank, p, dims, radius), walk(rank, p, dims, radius));
        }
  EXPECT_EQ(moore_destinations(3, 28, 6, 1000000).size(), 27u);  // every other rank
}

TEST_P(GatherExchange, EmptyAndStar) {
  check_topology(Topology::from_destinations(MPI_COMM_WORLD, {}), GetParam(), "empty");
  std::vector<int> star;
  if (test::rank() == 0)
    for (int r = 1; r < test::size(); ++r) star.push_back(r);
  check_topology(Topology::from_destinations(MPI_COMM_WORLD, star), GetParam(), "star");
}
TEST(Gather, SelfLoopsRefusedUnlessAllowed) {
  const int me = test::rank(), p = test::size();
  std::vector<int> d{me, (me + 1) % p};
  EXPECT_THROW(Topology::from_destinations(MPI_COMM_WORLD, d), InputError);
}
TEST_P(GatherExchange, SelfLoopsHandledWhenAllowed) {
  const int me = test::rank(), p = test::size();
  std::vector<int> d{me, (me + 1) % p};
  check_topology(Topology::from_destinations(MPI_COMM_WORLD, d, true), GetParam(), "self-loops", true);
}

// (matrix, backend): every backend of the registry on each matrix, a case of its own.
class GatherSuiteSparse : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};
TEST_P(GatherSuiteSparse, BlockPatternTopology) {
  const auto& [matrix, backend] = GetParam();
  SPC_REQUIRE_MATRIX(path, matrix);
  auto a = read_matrix_market(MPI_COMM_WORLD, path);
  check_topology(topology_from_matrix_blocks(a), backend, matrix, true);
}
INSTANTIATE_TEST_SUITE_P(Real, GatherSuiteSparse,
                         ::testing::Combine(::testing::Values("Pajek/Journals", "HB/dwt_193", "HB/ash292"),
                                            ::testing::ValuesIn(gather_backend_names())),
                         test::StringPairParamName());

TEST(Gather, ErrorsAreAgreed) {
  const int me = test::rank(), p = test::size();
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  Topology t = Topology::erdos_renyi(MPI_COMM_WORLD, 0.5, 3);
  try {
    make_gather_plan("smoke_signals", t, loc, MPI_COMM_WORLD, 1);
    ADD_FAILURE() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("valid backends: combined, neighbor, p2p"), std::string::npos) << e.what();
  }
  if (p > 1) {
    // An inconsistent hand-made topology is detected instead of hanging.
    Topology bad;
    bad.destinations = {(me + 1) % p};  // nobody lists a source
    EXPECT_THROW(make_gather_plan("p2p", bad, loc, MPI_COMM_WORLD, 1), InputError);
    // A bad combining option on one rank only.
    GatherOptions o;
    if (me == p - 1) o.backend.set("k", 1);
    EXPECT_THROW(make_gather_plan("combined", t, loc, MPI_COMM_WORLD, 1, o), InputError);
  }
  std::vector<int> out_of_range{me == 0 ? p + 1 : 0};
  if (p > 1) {
    EXPECT_THROW(Topology::from_destinations(MPI_COMM_WORLD, out_of_range), InputError);
  }
}

// same_count, but one rank passes another size: every rank throws.
SPC_BACKEND_SUITE(GatherErrors, gather_backend_names());
TEST_P(GatherErrors, SameCountWithOtherSizesIsAgreed) {
  const int me = test::rank(), p = test::size();
  if (p < 2) GTEST_SKIP() << "needs two ranks";
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  Topology t = Topology::erdos_renyi(MPI_COMM_WORLD, 0.5, 3);
  GatherOptions same;
  same.same_count = true;
  try {
    make_gather_plan(GetParam(), t, loc, MPI_COMM_WORLD, me == p - 1 ? 2 : 3, same);
    ADD_FAILURE() << GetParam() << ": no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("block sizes from 2 to 3"), std::string::npos) << e.what();
  }
}

}  // namespace

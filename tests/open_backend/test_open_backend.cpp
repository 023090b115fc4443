// The open backend set, from the library's side: p2p_sends_first (defined here, outside
// src/) is registered, listed, verified in an SpMV and its transpose, counted by plan
// statistics exactly as it runs, and weighed by auto. The project's own suites and programs
// run it too (CMakeLists.txt: copies of test_plan, test_plan_stats, the CLI and the C test).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "kernels/reference.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "open_backend/sends_first.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

TEST(OpenBackend, RegisteredAndListed) {
  const auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), test::kSendsFirst), names.end());
  EXPECT_NE(backend_description(test::kSendsFirst).find("tests/open_backend"), std::string::npos);
}

TEST(OpenBackend, SpmvAndTransposeMatchTheReference) {
  for (const char* spec : {"rotate:14,11", "er:150,0.05,2"}) {
    SCOPED_TRACE(spec);
    auto a = gen::from_spec(MPI_COMM_WORLD, spec);
    const auto ref = reference::gather_eigen(a);
    std::vector<double> xg(static_cast<size_t>(a.global_cols()));
    for (size_t i = 0; i < xg.size(); ++i) xg[i] = std::cos(0.7 * static_cast<double>(i));
    const auto yg = reference::spmv(ref, xg);
    Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
    Sdde sdde(MPI_COMM_WORLD, loc);
    const Pattern pat = pattern_from_matrix(a, sdde, "nbx");
    DistSpmv spmv(a, make_plan(test::kSendsFirst, pat, loc, MPI_COMM_WORLD));
    EXPECT_EQ(spmv.plan().name(), test::kSendsFirst);
    std::vector<double> x(xg.begin() + a.col_begin(), xg.begin() + a.col_begin() + a.local_cols()), y(a.local_rows());
    for (int round = 0; round < 2; ++round) {  // a plan runs many times
      spmv.apply(x.data(), y.data());
      EXPECT_TRUE(test::close_values(y, std::vector<double>(yg.begin() + a.row_begin(),
                                                            yg.begin() + a.row_begin() + a.local_rows()),
                                     1e-12));
    }
  }
}

TEST(OpenBackend, PlanStatisticsCountWhatItSends) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:12,9");
  Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  Sdde sdde(MPI_COMM_WORLD, loc);
  auto plan = make_plan(test::kSendsFirst, pattern_from_matrix(a, sdde, "nbx"), loc, MPI_COMM_WORLD);
  const auto counts = virt::halo_counts(test::kSendsFirst,
                                        virt::HaloPattern::from_matrix(a.row_partition(), a.col_partition(), a.gather_all()),
                                        virt::regions_from_spec(test::size(), "ppn:2"), PlanOptions{});
  const auto& want = plan->iteration_counts().total();
  const auto& got = counts[static_cast<size_t>(test::rank())].counts.total();
  EXPECT_EQ(got.sent_intra.msgs, want.sent_intra.msgs);
  EXPECT_EQ(got.sent_inter.msgs, want.sent_inter.msgs);
  EXPECT_EQ(got.sent_intra.bytes, want.sent_intra.bytes);
  EXPECT_EQ(got.sent_inter.bytes, want.sent_inter.bytes);
  EXPECT_EQ(got.recv_inter.bytes, want.recv_inter.bytes);
}

// Backend-owned options: the backend declares "tag"; make_plan validates it against that
// declaration on every rank, hands it to the backend, and rejects it for a backend that does
// not declare it; auto accepts it and hands it on to that candidate.
TEST(OpenBackend, OwnsItsOptions) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:9,8");
  Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  Sdde sdde(MPI_COMM_WORLD, loc);
  const Pattern pat = pattern_from_matrix(a, sdde, "nbx");
  auto with = [](const std::string& list) {
    PlanOptions o;
    o.backend.set_list(list);
    return o;
  };
  EXPECT_EQ(test::sends_first_tag(*make_plan(test::kSendsFirst, pat, loc, MPI_COMM_WORLD)), 4711);
  auto plan = make_plan(test::kSendsFirst, pat, loc, MPI_COMM_WORLD, with("tag=99"));
  EXPECT_EQ(test::sends_first_tag(*plan), 99);
  // Owned entry i holds its global id; each ghost must arrive as its own global id.
  std::vector<double> x(static_cast<size_t>(pat.owned_size()) + 1), ghost(static_cast<size_t>(pat.ghost_size()) + 1, -1);
  for (int32_t i = 0; i < pat.owned_size(); ++i) x[static_cast<size_t>(i)] = static_cast<double>(a.col_begin() + i);
  plan->exchange(x.data(), ghost.data());
  const auto& r = pat.recv();
  for (int64_t k = 0; k < r.size(); ++k)
    EXPECT_EQ(ghost[static_cast<size_t>(r.indices[k])], static_cast<double>(r.global_ids[k])) << "ghost " << k;
  auto rejects = [&](const std::string& backend, const std::string& list, const std::string& says) {
    try {
      make_plan(backend, pat, loc, MPI_COMM_WORLD, with(list));
      ADD_FAILURE() << backend << " accepted " << list;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  rejects(test::kSendsFirst, "tag=-1", "out of range");
  rejects(test::kSendsFirst, "tag=40000", "out of range");
  rejects(test::kSendsFirst, "tag=x1", "not an integer");
  rejects(test::kSendsFirst, "k=2", "has no option 'k'; its options: tag");
  rejects("neighbor", "tag=5", "backend 'neighbor' has no option 'tag' (it takes none)");
  rejects("p2p", "tag=5", "backend 'p2p' has no option 'tag'; its options: in_place");
  // One rank alone with a bad value: an error on every rank, nobody left waiting.
  rejects(test::kSendsFirst, test::rank() == test::size() - 1 ? "tag=-3" : "tag=3", "");
  // auto takes its candidates' options and hands each its own.
  const auto specs = backend_option_specs("auto");
  EXPECT_TRUE(declares_option(specs, "tag"));
  EXPECT_TRUE(declares_option(specs, "k"));
  EXPECT_TRUE(declares_option(specs, "model"));
  auto chosen = make_plan("auto", pat, loc, MPI_COMM_WORLD, with("tag=98"));
  if (chosen->name() == test::kSendsFirst) EXPECT_EQ(test::sends_first_tag(*chosen), 98);
  // Gather backends own theirs too.
  GatherOptions go;
  go.backend.set("k", 3);
  EXPECT_THROW(make_gather_plan("p2p", Topology::from_pattern(pat), loc, MPI_COMM_WORLD, 1, go), InputError);
  // The text form: key=value pairs.
  BackendOptions bo;
  EXPECT_THROW(bo.set_list("k"), InputError);
  EXPECT_THROW(bo.set_list("=3"), InputError);
  bo.set_list("k=3,aware=yes");
  EXPECT_EQ(bo.get_int("k", 0), 3);
  EXPECT_TRUE(bo.get_bool("aware", false));
  EXPECT_EQ(bo.canonical(), "aware=yes;k=3;");
}

TEST(OpenBackend, AutoWeighsIt) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:10,10");
  Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  Sdde sdde(MPI_COMM_WORLD, loc);
  auto chosen = make_plan("auto", pattern_from_matrix(a, sdde, "nbx"), loc, MPI_COMM_WORLD);
  // auto records the prediction of every candidate it built.
  EXPECT_EQ(chosen->setup_stats().timers().count(std::string("auto.predict.") + test::kSendsFirst), 1u);
}

}  // namespace

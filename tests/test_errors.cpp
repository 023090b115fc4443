// Error agreement: a failure on some ranks becomes the same exception on every rank.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

bool same_on_all_ranks(const std::string& s) {
  long long h = static_cast<long long>(std::hash<std::string>{}(s) & 0x7fffffffffffLL), mn = 0, mx = 0;
  MPI_Allreduce(&h, &mn, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &mx, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return mn == mx;
}

TEST(Agree, NobodyFailsMeansNoThrow) {
  EXPECT_NO_THROW(agree(MPI_COMM_WORLD, ""));
  EXPECT_EQ(agreed(MPI_COMM_WORLD, [] { return 7; }), 7);
}

TEST(Agree, OneRankFailsEveryRankThrowsItsMessage) {
  const int p = test::size(), bad = p - 1;
  std::string msg = test::message_of<InputError>(
      [&] { agree(MPI_COMM_WORLD, test::rank() == bad ? "row 12 out of range" : ""); });
  EXPECT_NE(msg.find("row 12 out of range"), std::string::npos) << msg;
  if (p > 1) {
    EXPECT_NE(msg.find("reported by rank " + std::to_string(bad)), std::string::npos) << msg;
  }
  EXPECT_TRUE(same_on_all_ranks(msg));
}

TEST(Agree, SeveralFailLowestRankWinsAndCountIsGiven) {
  const int p = test::size();
  if (p < 3) GTEST_SKIP() << "needs 3 ranks";
  std::string msg = test::message_of<InputError>([&] {
    agree(MPI_COMM_WORLD, test::rank() >= 1 ? "problem on rank " + std::to_string(test::rank()) : "");
  });
  EXPECT_NE(msg.find("problem on rank 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(p - 1) + " ranks failed"), std::string::npos) << msg;
  EXPECT_TRUE(same_on_all_ranks(msg));
}

// An error agreed inside a step and agreed again by its caller (every rank then fails with
// the same annotated message) keeps one annotation; a fresh failure on some ranks gets its own.
TEST(Agree, AgreedTwiceIsAnnotatedOnce) {
  const int p = test::size(), bad = p - 1;
  const std::string first = test::message_of<InputError>(
      [&] { agree(MPI_COMM_WORLD, test::rank() == bad ? "row 12 out of range" : ""); });
  const std::string again = test::message_of<InputError>([&] { agree(MPI_COMM_WORLD, first); });
  EXPECT_EQ(again, first);
  EXPECT_TRUE(same_on_all_ranks(again));
  if (p > 1) {  // not every rank failed: annotated, even though the text carries an annotation
    const std::string some =
        test::message_of<InputError>([&] { agree(MPI_COMM_WORLD, test::rank() == bad ? first : ""); });
    EXPECT_NE(some, first);
    EXPECT_NE(some.find(first + " [reported by rank " + std::to_string(bad) + "]"), std::string::npos) << some;
  }
}

TEST(Agree, AgreedKeepsTheErrorKind) {
  const int bad = test::size() / 2;
  std::string msg = test::message_of<NotImplementedError>([&] {
    agreed(MPI_COMM_WORLD, [&] {
      if (test::rank() == bad) throw NotImplementedError("feature X is not implemented");
    });
  });
  EXPECT_NE(msg.find("feature X is not implemented"), std::string::npos) << msg;
  EXPECT_TRUE(same_on_all_ranks(msg));
  // A plain std::exception (e.g. std::out_of_range from a container) is agreed too.
  msg = test::message_of<Error>([&] {
    agreed(MPI_COMM_WORLD, [&]() -> int {
      if (test::rank() == bad) return std::vector<int>{}.at(3);
      return 1;
    });
  });
  EXPECT_EQ(msg.find("<no exception>"), std::string::npos) << msg;
  EXPECT_TRUE(same_on_all_ranks(msg));
}

TEST(MpiErrors, FailingMpiCallThrowsWithMpiErrorString) {
  Comm c(MPI_COMM_WORLD);  // MPI_ERRORS_RETURN on our duplicate
  int x = 0;
  // An invalid rank: MPI reports an error code, which SPC_MPI turns into MpiError.
  int code = MPI_SUCCESS;
  std::string msg;
  try {
    SPC_MPI(MPI_Send(&x, 1, MPI_INT, c.size() + 5, 0, c.get()));
  } catch (const MpiError& e) {
    code = e.code();
    msg = e.what();
  }
  EXPECT_NE(msg.find("MPI error in MPI_Send"), std::string::npos) << msg;
  // The error's class, and MPI's own words for this error in the message (each MPI words it
  // its own way: Open MPI "MPI_ERR_RANK: invalid rank", MPICH "Invalid rank, error stack:...").
  int cls = MPI_SUCCESS;
  MPI_Error_class(code, &cls);
  EXPECT_EQ(cls, MPI_ERR_RANK) << msg;
  char words[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, words, &len);
  const std::string first_line = std::string(words, static_cast<size_t>(len)).substr(0, std::string(words).find('\n'));
  EXPECT_NE(msg.find(first_line.substr(0, 12)), std::string::npos) << msg << " | " << first_line;
}

}  // namespace

namespace {

// The agreement helpers the setup paths use: one reduction for a maximum and a sum, a
// barrier that carries a flag, a communicator for the library's setup traffic.
// Work only the root does: its values, or its error, reach every rank in one broadcast.
TEST(AgreementHelpers, RootComputedHandsOutValuesOrTheRootsError) {
  const int p = test::size(), root = p - 1;
  std::vector<double> v(3, -1.0);
  root_computed(MPI_COMM_WORLD, root, v, [&] { v = {1.5, 2.5, 3.5}; });
  EXPECT_EQ(v, (std::vector<double>{1.5, 2.5, 3.5}));
  std::vector<double> w(2, 0.0);
  try {
    root_computed(MPI_COMM_WORLD, root, w, [&] { throw InputError("no room on the root"); });
    ADD_FAILURE() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no room on the root"), std::string::npos) << e.what();
  }
  // Every rank is still in step: a collective after the failure completes.
  EXPECT_EQ(allreduce_sum(MPI_COMM_WORLD, int64_t{1}), p);
}

TEST(AgreementHelpers, MaxAndSumInOneCollective) {
  const int me = test::rank(), p = test::size();
  MaxSum mine;
  mine.max[0] = static_cast<uint64_t>(me);
  mine.max[1] = me == p - 1 ? 1 : 0;
  mine.sum[0] = static_cast<uint64_t>(me) + 1;
  mine.sum[1] = ~uint64_t{0};  // sums wrap modulo 2^64
  const MaxSum all = allreduce_max_sum(MPI_COMM_WORLD, mine);
  EXPECT_EQ(all.max[0], static_cast<uint64_t>(p - 1));
  EXPECT_EQ(all.max[1], 1u);
  EXPECT_EQ(all.sum[0], static_cast<uint64_t>(p) * (p + 1) / 2);
  EXPECT_EQ(all.sum[1], uint64_t{0} - static_cast<uint64_t>(p));
}

// Unsigned order, whatever MPI_MAX on MPI_UINT64_T does (MPICH 4.0.2 compares as signed): a
// value with the top bit set beats a small one, and 0 loses to every value.
TEST(AgreementHelpers, UnsignedMaximum) {
  const int me = test::rank(), p = test::size();
  const uint64_t big = (uint64_t{1} << 63) + 1;
  uint64_t v[3] = {me == p - 1 ? big : 5u, me == 0 ? 7u : 0u, static_cast<uint64_t>(me)};
  allreduce_max_u64(MPI_COMM_WORLD, v, 3);
  EXPECT_EQ(v[0], big);
  EXPECT_EQ(v[1], 7u);
  EXPECT_EQ(v[2], static_cast<uint64_t>(p - 1));
}

// Settings compared across ranks: nothing where all are alike; where one differs on the
// last rank, every rank names that one (and only that one) with its own value.
TEST(AgreementHelpers, DifferingSettingsNamesEachWithThisRanksValue) {
  const int me = test::rank(), p = test::size();
  const std::vector<NamedValue> alike = {{"backend", "p2p"}, {"regions", "node"}};
  EXPECT_EQ(differing_settings(MPI_COMM_WORLD, alike), "");
  int64_t h = settings_hash(alike), lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);
  EXPECT_GE(h, 0);  // (62 bits: its negation fits)
  const std::string mine = me == p - 1 ? "ppn:1" : "node";
  const std::vector<NamedValue> one_differs = {{"backend", "p2p"}, {"regions", mine}};
  EXPECT_NE(settings_hash(one_differs), me == p - 1 ? settings_hash(alike) : -1);
  const std::string said = differing_settings(MPI_COMM_WORLD, one_differs);
  if (p == 1) {
    EXPECT_EQ(said, "");
  } else {
    EXPECT_EQ(said, "regions is '" + mine + "' here");
  }
  // The value boundaries count: ("ab", "c") is not ("a", "bc").
  EXPECT_NE(settings_hash({{"x", "ab"}, {"y", "c"}}), settings_hash({{"x", "a"}, {"y", "bc"}}));
}

TEST(AgreementHelpers, BarrierCarriesTheLargestFlag) {
  const int me = test::rank(), p = test::size();
  for (int flagged = -1; flagged < p; ++flagged) {  // -1: nobody raises it
    NonblockingBarrier b(MPI_COMM_WORLD, 9000 + flagged + 1, me == flagged ? 3 : 0);
    while (!b.test()) {
    }
    EXPECT_EQ(b.flag(), flagged >= 0 ? 3 : 0) << "flag raised by rank " << flagged;
  }
}

TEST(AgreementHelpers, LibraryCommIsOneDuplicatePerCommunicator) {
  const MPI_Comm a = library_comm(MPI_COMM_WORLD), b = library_comm(MPI_COMM_WORLD);
  EXPECT_EQ(a, b);  // made once, then taken from the communicator
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(a, MPI_COMM_WORLD, &cmp);
  EXPECT_EQ(cmp, MPI_CONGRUENT);  // same group and order, another context: no message crosses
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const MPI_Comm c = library_comm(dup);
  EXPECT_NE(c, a);  // not inherited by duplicates
  MPI_Comm_free(&dup);  // frees c with it (the attribute's delete callback)
}

TEST(AgreementHelpers, SharedLibraryCommOutlivesItsCommunicator) {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  uint64_t s0 = 9, s1 = 9, s2 = 9;
  const auto a = library_comm_shared(dup, s0);
  const auto b = library_comm_shared(dup, s1);
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(a->get(), library_comm(dup));
  EXPECT_EQ(s0, 0u);  // the calls are numbered per communicator, alike on every rank
  EXPECT_EQ(s1, 1u);
  MPI_Comm_free(&dup);  // the program lets go of its communicator ...
  int sum = 0, one = 1;  // ... the shared duplicate still works
  EXPECT_EQ(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, a->get()), MPI_SUCCESS);
  EXPECT_EQ(sum, test::size());
  MPI_Comm other;
  MPI_Comm_dup(MPI_COMM_WORLD, &other);
  library_comm_shared(other, s2);
  EXPECT_EQ(s2, 0u);  // another communicator counts from 0
  MPI_Comm_free(&other);
}

// The persistent requests' tags on the library's duplicate never equal a fixed tag used on
// it (a set-up whose receive matched a request's message would take its values): sampled
// over the first sequences, at each fixed tag's offset and around the wrap at MPI_TAG_UB.
TEST(AgreementHelpers, LibraryRequestTagsAvoidTheFixedTags) {
  void* v = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &found);
  const int ub = found ? *static_cast<int*>(v) : 32767;
  const uint64_t cycle = static_cast<uint64_t>(ub - kLibraryRequestTagFirst + 1);
  std::vector<uint64_t> seq;
  for (uint64_t s = 0; s < 20000; ++s) seq.push_back(s);
  for (uint64_t s = cycle - 5; s < cycle + 5; ++s) seq.push_back(s);
  for (int fixed : kLibraryFixedTags) {
    EXPECT_LT(fixed, kLibraryRequestTagFirst) << fixed;
    for (int64_t d = -2; d <= 2; ++d) {  // where the tags would meet it: sequence fixed - first
      const int64_t s = fixed - kLibraryRequestTagFirst + d;
      if (s >= 0) seq.push_back(static_cast<uint64_t>(s)), seq.push_back(static_cast<uint64_t>(s) + cycle);
    }
  }
  int64_t bad = 0;
  for (uint64_t s : seq) {
    const int t = library_request_tag(s);
    bad += t < kLibraryRequestTagFirst || t > ub;
    for (int fixed : kLibraryFixedTags) bad += t == fixed;
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(library_request_tag(0), kLibraryRequestTagFirst);
  EXPECT_EQ(library_request_tag(cycle), kLibraryRequestTagFirst);  // (wraps)
}

}  // namespace

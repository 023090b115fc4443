// The shm halo backend's one-copy path (src/comm/shm_one_copy.hpp): every rank of the node
// sends every other a segment laid out in two runs on the owner's side and split elsewhere
// on the reader's (so the two sides' iovec lists differ), except rank 0's segment to the
// last rank (3 ranks or more), which is strided — too many runs: it must fall back to the
// window while the others take the path. Values change every exchange and each rank picks
// its own verb per exchange (start(owned, ghost) + wait, start(owned) + wait, start(owned,
// ghost) + polled test), so owners that publish their array meet readers that read into the
// receive buffer and the reverse. Every received value is checked against its owner's
// formula, and the same exchanges with one_copy=false must give the same ghosts.
#include <gtest/gtest.h>

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "comm/shm_one_copy.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

constexpr int64_t kUnits = 600;  // per segment: 600 * 8 * width bytes

// Whether owner r's segment to d is strided (the fallback case).
bool strided(int r, int d, int p) { return p >= 3 && r == 0 && d == p - 1; }
// Owner r's array index of unit k of its segment to d (each segment has its own block of
// 2 * kUnits entries; contiguous ones in two runs, the second half first).
int32_t send_index(int r, int d, int64_t k, int p) {
  const int64_t base = 2 * kUnits * d;
  if (strided(r, d, p)) return static_cast<int32_t>(base + 2 * k);
  const int64_t h = kUnits / 3;
  return static_cast<int32_t>(base + (k < kUnits - h ? h + k : k - (kUnits - h)));
}
// Reader's ghost index of unit k from writer s: a block per writer, split at another place.
int32_t ghost_index(int s, int64_t k) {
  const int64_t base = kUnits * s, h = kUnits / 4;
  return static_cast<int32_t>(base + (k < h ? kUnits - h + k : k - h));
}
double value(int r, int64_t idx, int j, int it) { return r * 1e7 + idx * 8.0 + j + it * 0.5; }

Pattern pattern(int me, int p) {
  PatternSide send, recv;
  for (int d = 0; d < p; ++d) {
    if (d == me) continue;
    send.ranks.push_back(d), recv.ranks.push_back(d);
    for (int64_t k = 0; k < kUnits; ++k) {
      send.indices.push_back(send_index(me, d, k, p));
      recv.indices.push_back(ghost_index(d, k));
    }
    send.offsets.push_back(static_cast<int64_t>(send.indices.size()));
    recv.offsets.push_back(static_cast<int64_t>(recv.indices.size()));
  }
  return Pattern(send, recv, static_cast<int32_t>(2 * kUnits * p), static_cast<int32_t>(kUnits * p));
}

// An oracle of the set-up's probe, independent of the library: can each rank read its
// right neighbor's memory with process_vm_readv? (Then the plan must take the path.)
bool cross_memory_attach_works() {
  const int me = test::rank(), p = test::size();
  int64_t word = 4242 + me, mine[2] = {getpid(), static_cast<int64_t>(reinterpret_cast<intptr_t>(&word))}, theirs[2];
  MPI_Sendrecv(mine, 2, MPI_INT64_T, (me + p - 1) % p, 7, theirs, 2, MPI_INT64_T, (me + 1) % p, 7, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  int64_t got = 0;
  iovec l{&got, sizeof got}, r{reinterpret_cast<void*>(static_cast<intptr_t>(theirs[1])), sizeof got};
  const int ok = process_vm_readv(static_cast<pid_t>(theirs[0]), &l, 1, &r, 1, 0) == sizeof got &&
                 got == 4242 + (me + 1) % p;
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);  // (after it, `word` may go)
  return all != 0;
}

// Runs `iters` exchanges on a plan with the given options; returns the wrong values and the
// ghost arrays of the last exchange (to compare with one_copy=false).
long run(const std::string& one_copy, int64_t min_bytes, int width, int iters, int64_t* segments,
         std::vector<double>* last) {
  const int me = test::rank(), p = test::size();
  PlanOptions o;
  o.width = width;
  o.backend.set("one_copy", one_copy).set("one_copy_min", min_bytes);
  auto plan = make_plan("shm", pattern(me, p), Locality::parse(MPI_COMM_WORLD, "ppn:64"), MPI_COMM_WORLD, o);
  *segments = detail::shm_one_copy_segments(*plan);
  std::vector<double> owned(static_cast<size_t>(2 * kUnits * p * width)), ghost(static_cast<size_t>(kUnits * p * width));
  long wrong = 0;
  for (int it = 0; it < iters; ++it) {
    for (size_t i = 0; i < owned.size(); ++i) owned[i] = value(me, static_cast<int64_t>(i) / width, static_cast<int>(i) % width, it);
    std::fill(ghost.begin(), ghost.end(), -1.0);
    const int way = (me + it) % 3;
    if (way == 1) plan->start(owned.data());
    else plan->start(owned.data(), ghost.data());
    if (way == 2)
      while (!plan->test(ghost.data())) {
      }
    else
      plan->wait(ghost.data());
    for (int s = 0; s < p; ++s)
      for (int64_t k = 0; s != me && k < kUnits; ++k)
        for (int j = 0; j < width; ++j)
          wrong += ghost[static_cast<size_t>(ghost_index(s, k) * width + j)] != value(s, send_index(s, me, k, p), j, it);
  }
  *last = ghost;
  return wrong;
}

}  // namespace

TEST(ShmOneCopy, LargeSegmentsReadFromTheOwnersArray) {
  if (!backend_registered("shm")) GTEST_SKIP() << "no shm backend in this build";
  const int me = test::rank(), p = test::size();
  if (!Locality::one_node(MPI_COMM_WORLD)) GTEST_SKIP() << "needs every rank on one node";
  const bool cma = cross_memory_attach_works();
  for (int width : {1, 3}) {
    int64_t on = 0, off = 0, above = 0;
    std::vector<double> g_on, g_off, g_above;
    EXPECT_EQ(run("true", 1024, width, 60, &on, &g_on), 0) << "one_copy on, width " << width;
    EXPECT_EQ(run("false", 1024, width, 60, &off, &g_off), 0) << "one_copy off, width " << width;
    // One segment is 600 * 8 * width bytes: a threshold above it leaves every one in the window.
    EXPECT_EQ(run("true", 600 * 8 * width + 1, width, 30, &above, &g_above), 0) << "below one_copy_min";
    EXPECT_EQ(g_on.size(), g_off.size());
    // The last exchange (iteration 59) of both plans wrote the same ghosts.
    EXPECT_TRUE(g_on == g_off) << "one_copy on and off disagree, width " << width;
    // Each rank's segments that take the path: all of them, both ways, but rank 0's strided
    // segment to the last rank (on both ends) -- where cross-memory attach works; else none.
    const int64_t expect = !cma ? 0 : 2 * (p - 1) - (strided(0, p - 1, p) && (me == 0 || me == p - 1) ? 1 : 0);
    EXPECT_EQ(on, expect) << "one-copy segments (cross-memory attach " << (cma ? "works" : "refused") << ")";
    EXPECT_EQ(off, 0) << "one_copy=false";
    EXPECT_EQ(above, 0) << "segments below one_copy_min";
  }
}

// Two plans in flight in an order in which a writer's wait() would wait for a reader that is
// itself waiting in the other plan for that writer: even ranks start and wait X then Y, odd
// ranks start X and Y, then wait Y before X. (MPI's own rendezvous completes this; so must
// shm: the writer takes its one-copy segments back into the window, ShmChannel::take_back.)
TEST(ShmOneCopy, TwoPlansInterleavedComplete) {
  if (!backend_registered("shm")) GTEST_SKIP() << "no shm backend in this build";
  const int me = test::rank(), p = test::size();
  PlanOptions o;
  o.backend.set("one_copy_min", int64_t{1024});
  const Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:64");
  auto x = make_plan("shm", pattern(me, p), loc, MPI_COMM_WORLD, o), y = make_plan("shm", pattern(me, p), loc, MPI_COMM_WORLD, o);
  std::vector<double> ox(static_cast<size_t>(2 * kUnits * p)), oy(ox.size()), gx(static_cast<size_t>(kUnits * p)), gy(gx.size());
  long wrong = 0;
  for (int it = 0; it < 20; ++it) {
    for (size_t i = 0; i < ox.size(); ++i) ox[i] = value(me, static_cast<int64_t>(i), 0, it), oy[i] = -ox[i];
    x->start(ox.data(), gx.data());
    if (me % 2 == 0) x->wait(gx.data());
    y->start(oy.data(), gy.data());
    y->wait(gy.data());
    if (me % 2 == 1) x->wait(gx.data());
    for (int s = 0; s < p; ++s)
      for (int64_t k = 0; s != me && k < kUnits; ++k) {
        const double v = value(s, send_index(s, me, k, p), 0, it);
        wrong += (gx[static_cast<size_t>(ghost_index(s, k))] != v) + (gy[static_cast<size_t>(ghost_index(s, k))] != -v);
      }
  }
  EXPECT_EQ(wrong, 0);
}

// One direction only (rank 0 to rank 1) with a slow reader: rank 0's waits take its segment
// back (the reader has not claimed it) for two exchanges in a row before rank 1, sleeping
// between its start and wait, reads the first; the reader must see that exchange taken
// back although the claim word has moved on to the next (a reader that waited for exactly
// "taken back, exchange e" spun forever, and the writer with it at its third start).
TEST(ShmOneCopy, SlowReaderOfAOneWayPattern) {
  if (!backend_registered("shm")) GTEST_SKIP() << "no shm backend in this build";
  const int me = test::rank(), p = test::size();
  if (p < 2) GTEST_SKIP() << "needs 2 ranks";
  PatternSide send, recv;
  if (me == 0) send.ranks.push_back(1);
  if (me == 1) recv.ranks.push_back(0);
  for (int64_t k = 0; k < kUnits && me <= 1; ++k) (me == 0 ? send : recv).indices.push_back(static_cast<int32_t>(k));
  if (me == 0) send.offsets.push_back(kUnits);
  if (me == 1) recv.offsets.push_back(kUnits);
  PlanOptions o;
  o.backend.set("one_copy_min", int64_t{1024});
  auto plan = make_plan("shm", Pattern(send, recv, me == 0 ? kUnits : 0, me == 1 ? kUnits : 0),
                        Locality::parse(MPI_COMM_WORLD, "ppn:64"), MPI_COMM_WORLD, o);
  std::vector<double> owned(static_cast<size_t>(kUnits) + 1), ghost(owned.size());
  long wrong = 0;
  for (int it = 0; it < 6; ++it) {
    for (int64_t k = 0; k < kUnits; ++k) owned[static_cast<size_t>(k)] = value(me, k, 0, it);
    std::fill(ghost.begin(), ghost.end(), -1.0);
    plan->start(owned.data(), ghost.data());
    if (me == 1) usleep(30000);
    plan->wait(ghost.data());
    for (int64_t k = 0; me == 1 && k < kUnits; ++k) wrong += ghost[static_cast<size_t>(k)] != value(0, k, 0, it);
  }
  EXPECT_EQ(wrong, 0);
}

// A one-copy read that fails after the set-up's probe passed (injected: the first reads of
// the failing ranks fail as a refused process_vm_readv would) costs no values and no rank:
// the reader hands the segment back, its writer copies it into the window, the reader reads
// it there (by every way run() calls the plan: wait, test, start(owned)).
static void failed_reads_fall_back(bool every_rank) {
  const int me = test::rank(), p = test::size();
  if (!Locality::one_node(MPI_COMM_WORLD)) GTEST_SKIP() << "needs every rank on one node";
  if (p < 2 || !cross_memory_attach_works()) GTEST_SKIP() << "needs 2 ranks and cross-memory attach";
  const int injected = 3 * (p - 1);  // (a failing rank's reads of its first three exchanges, at least)
  const bool fails = every_rank || me == 1;
  detail::fail_one_copy_reads(fails ? injected : 0);
  int64_t segments = 0;
  std::vector<double> g;
  long wrong = -1;
  try {
    wrong = run("true", 1024, 1, 12, &segments, &g);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "exchange threw: " << e.what();
  }
  const int left = detail::fail_one_copy_reads(0);
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(segments, 0);
  // The failing path ran: at least one injected failure was reached. Not every one need be:
  // a writer that has checked kTakeBack times without its reader claiming the segment (a
  // reader descheduled on a loaded node, or, where all fail, a writer taking its segments
  // back while it waits) puts the segment into the window itself, and the reader then finds
  // it there without a one-copy read. The values and the absence of a hang are the test.
  EXPECT_LT(left, injected) << "no injected failure reached";
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(ShmOneCopy, FailedReadFallsBackToTheWindow) {
  if (!backend_registered("shm")) GTEST_SKIP() << "no shm backend in this build";
  failed_reads_fall_back(false);
}

// Every rank's reads fail (a cause shared by the node, e.g. a changed ptrace policy): each
// rank, waiting for its writer's take-back, takes back its own segments meanwhile, so no
// two ranks wait on each other.
TEST(ShmOneCopy, FailedReadsOnEveryRankFallBackToTheWindow) {
  if (!backend_registered("shm")) GTEST_SKIP() << "no shm backend in this build";
  failed_reads_fall_back(true);
}

TEST(ShmOneCopy, OptionsAreChecked) {
  if (!backend_registered("shm")) GTEST_SKIP() << "no shm backend in this build";
  PlanOptions o;
  o.backend.set("one_copy_min", "-1");
  EXPECT_THROW(make_plan("shm", pattern(test::rank(), test::size()), Locality::parse(MPI_COMM_WORLD, "ppn:64"),
                         MPI_COMM_WORLD, o),
               InputError);
}

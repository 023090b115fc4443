// sparsecomm onnode: the on-node exchange against its physical limit, the one-copy limit.
//
// Ranks in pairs (rank r with r ^ 1; the measurement this is for is 2 ranks, one per core).
// Each rank's halo is `size` bytes of doubles that its partner owns; per size it times
//   memcpy      every rank copies `size` bytes from one buffer of its own to another, all
//               ranks at once (the same bytes an exchange moves, the same concurrent load on
//               the memory system): the one-copy limit, measured in the same run;
//   cross-core  (all ranks on one node) every rank copies its partner's `size` bytes
//               straight out of the partner's memory (a shared window) after the partner
//               wrote them: the one copy between two cores that any exchange on the node
//               makes at least where the owner's array is not shared;
//   halo shape  per halo backend (make_plan), three ways of using it:
//                 pack       start(owned), wait(ghost): the general verbs (the plan packs the
//                            owned values and unpacks the ghosts, whatever its copies are);
//                 no-unpack  start(owned), wait() returning the values where they arrived
//                            (the zero-copy read of a ghost array in arrival order);
//                 direct     start(owned, ghost), wait(ghost): sent from the owned array and
//                            received into the ghosts by the backends that can (p2p, neighbor:
//                            then only the MPI's own copies remain), packed otherwise;
//   gather shape per gather backend (make_gather_plan, MPI_Neighbor_allgather semantics):
//               start(block), wait(recv) with the partner as the one source and destination.
// Every call: the owner first writes fresh values (untimed: the computation between two
// exchanges, which leaves them in the writer's cache, not the reader's; reusing unchanged
// values would time a copy out of a cache that already holds them), then the exchange or the
// copy is timed (apps::timed: a barrier before, the max over ranks), then every received
// value is checked against what its owner wrote (untimed). The variants are timed in
// --rounds interleaved rounds (apps::interleaved_rounds: a slow phase of a shared machine
// hits every variant alike), each round a warm-up and then reps calls, median of the calls;
// reported: the median over rounds, the rounds' spread, and the fraction of the one-copy
// limit, the paired ratio of memcpy's time to the variant's per round (bytes per second as
// a fraction of memcpy's). The exit code is 3 if any value was wrong on any rank (agreed
// with an allreduce).
//
//   mpirun --bind-to core -np 2 sparsecomm onnode --json onnode.jsonl
//   mpirun -np 2 sparsecomm onnode --sizes 1024,65536 --reps 20 --rounds 2   (a quick check)
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/app_main.hpp"
#include "common/backend_args.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "common/provenance.hpp"
#include "common/table.hpp"
#include "common/timing.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

using namespace sparsecomm;

namespace {

/// The value index i of rank r's array holds in verification round `round` (exact in a
/// double: below 2^53 for any rank and index this benchmark allocates).
double value_of(int r, int64_t i, int round) {
  return static_cast<double>(r) * 8589934592.0 + static_cast<double>(i) * 4.0 + static_cast<double>(round & 3);
}

bool check(const double* got, int64_t n, int src, int round) {
  for (int64_t i = 0; i < n; ++i)
    if (got[i] != value_of(src, i, round)) return false;
  return true;
}

bool all_ranks(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm);
  return all != 0;
}

/// One timed thing at one size.
struct Variant {
  std::string shape;    ///< "copy", "halo" or "gather"
  std::string backend;  ///< copies: "memcpy" (the limit) or "cross-core" (one copy between the ranks)
  std::string way;      ///< halo: "pack", "no-unpack" or "direct"; otherwise ""
  std::string label() const {
    return shape == "copy" ? backend : shape + " " + backend + (way.empty() ? "" : " " + way);
  }
  Plan* halo = nullptr;
  GatherPlan* gather = nullptr;
};

/// The pair exchange of `n` doubles as a halo pattern: my owned values 0..n-1 all go to my
/// partner, whose values land in my ghosts 0..n-1 (arrival order: wait() can return the
/// ghost array itself, and start(owned, ghost) can receive straight into it).
Pattern pair_pattern(int partner, int64_t n) {
  PatternSide send, recv;
  std::vector<int32_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int32_t>(i);
  send.ranks = {partner}, send.offsets = {0, n}, send.indices = idx;
  recv.ranks = {partner}, recv.offsets = {0, n}, recv.indices = std::move(idx);
  return Pattern(std::move(send), std::move(recv), static_cast<int32_t>(n), static_cast<int32_t>(n));
}

/// The buffers of one rank at one size.
struct Buffers {
  int64_t n = 0;
  std::vector<double> owned, ghost, copy_dst;
  /// The cross-core copy: my values in a shared window the partner reads (null: not all
  /// ranks on one node, no such variant).
  double* mine = nullptr;
  const double* partners = nullptr;
  MPI_Win win = MPI_WIN_NULL;
};

/// One call of variant v with fresh values: the owner writes its values for `call` (untimed:
/// the computation an application does between exchanges, which leaves them in the writer's
/// cache, not the reader's), then the exchange or copy is timed (apps::timed: a barrier
/// before, the max over ranks), then every received value is checked (untimed). Returns the
/// seconds; `ok` turns false on a wrong value.
double one_call(MPI_Comm comm, Variant& v, Buffers& b, int me, int partner, int call, bool& ok) {
  const int64_t n = b.n;
  double* owned = b.owned.data();
  double* ghost = b.ghost.data();
  double* source = v.backend == "cross-core" ? b.mine : owned;
  for (int64_t i = 0; i < n; ++i) source[i] = value_of(me, i, call);
  const double* got = ghost;
  int src = partner;
  double t = 0;
  if (v.backend == "memcpy") {
    t = apps::timed(comm, [&] { std::memcpy(b.copy_dst.data(), owned, static_cast<size_t>(n) * 8); });
    got = b.copy_dst.data(), src = me;
  } else if (v.backend == "cross-core") {
    // The writes before the barrier inside timed() are visible after it (MPI_Win_sync on
    // both sides of it: the unified model's memory barrier), then one copy by the reader.
    MPI_Win_sync(b.win);
    t = apps::timed(comm, [&] {
      MPI_Win_sync(b.win);
      std::memcpy(ghost, b.partners, static_cast<size_t>(n) * 8);
    });
  } else if (v.shape == "gather") {
    t = apps::timed(comm, [&] { v.gather->exchange(owned, ghost); });
  } else if (v.way == "pack") {
    t = apps::timed(comm, [&] { v.halo->exchange(owned, ghost); });
  } else if (v.way == "direct") {
    t = apps::timed(comm, [&] {
      v.halo->start(owned, ghost);
      v.halo->wait(static_cast<void*>(ghost));
    });
  } else {  // no-unpack: the values read where they arrived (the plan's receive buffer)
    t = apps::timed(comm, [&] {
      v.halo->start(static_cast<const void*>(owned));
      got = static_cast<const double*>(v.halo->wait());
    });
  }
  ok = check(got, n, src, call) && ok;
  if (got == ghost) std::fill(b.ghost.begin(), b.ghost.end(), -1.0);  // the next call must write them again
  return t;
}

struct Settings {
  std::vector<int64_t> sizes;
  std::vector<std::string> halo, gather;
  std::vector<BackendOptions> halo_options;  ///< --option: each halo backend's own keys
  int reps = 1000, min_reps = 10, rounds = 7;
  int64_t round_bytes = 0;
  std::string json;
};

/// The cross-core one-copy limit where every rank is on one node: the partner's values read
/// straight out of its memory (a shared window), the one copy an on-node exchange cannot
/// avoid when the owner's array is not shared. Returns whether every rank is on one node
/// (then b's window is open; `node` is made either way).
bool open_cross_core(MPI_Comm comm, Buffers& b, int partner, MPI_Comm& node) {
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, comm_rank(comm), MPI_INFO_NULL, &node);
  if (comm_size(node) != comm_size(comm)) return false;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(b.n) * 8, 8, MPI_INFO_NULL, node, &b.mine, &b.win);
  MPI_Aint bytes = 0;
  int disp = 0;
  double* theirs = nullptr;
  MPI_Win_shared_query(b.win, partner, &bytes, &disp, &theirs);  // node rank = world rank (key me)
  b.partners = theirs;
  MPI_Win_lock_all(MPI_MODE_NOCHECK, b.win);
  std::fill(b.mine, b.mine + b.n, 0.0);
  return true;
}

/// The plans of one size and the variants that time them.
struct Variants {
  std::vector<std::unique_ptr<Plan>> halo_plans;
  std::vector<std::unique_ptr<GatherPlan>> gather_plans;
  std::vector<Variant> vars;
};

Variants make_variants(MPI_Comm comm, const Settings& st, int64_t n, int partner, bool one_node) {
  const Locality loc = Locality::parse(comm, "node");
  Variants out;
  out.vars.push_back({"copy", "memcpy", ""});
  if (one_node) out.vars.push_back({"copy", "cross-core", ""});
  const Pattern pat = pair_pattern(partner, n);
  for (size_t i = 0; i < st.halo.size(); ++i) {
    const std::string& name = st.halo[i];
    PlanOptions po;
    po.backend = st.halo_options[i];
    out.halo_plans.push_back(make_plan(name, pat, loc, comm, po));
    for (const char* way : {"pack", "no-unpack", "direct"}) {
      Variant v{"halo", name, way};
      v.halo = out.halo_plans.back().get();
      out.vars.push_back(v);
    }
  }
  const Topology topo{{partner}, {partner}};
  GatherOptions go;
  go.same_count = true;
  for (const auto& name : st.gather) {
    out.gather_plans.push_back(make_gather_plan(name, topo, loc, comm, n, go));
    Variant v{"gather", name, ""};
    v.gather = out.gather_plans.back().get();
    out.vars.push_back(v);
  }
  return out;
}

/// Rank 0's table rows and JSON records of one size.
void report(const std::vector<Variant>& vars, const std::vector<apps::RoundStats>& stats,
            const std::vector<bool>& verified, bool one_node, int p, int64_t size, int reps, const Settings& st,
            apps::Table& t, apps::JsonLines* js) {
  const apps::RoundStats& lim = stats[0];
  const apps::RoundStats* cross = one_node ? &stats[1] : nullptr;
  auto find = [&](const std::string& shape, const std::string& way) {
    for (size_t i = 0; i < vars.size(); ++i)
      if (vars[i].backend == "p2p" && vars[i].shape == shape && vars[i].way == way) return i;
    return vars.size();
  };
  for (size_t i = 0; i < vars.size(); ++i) {
    const Variant& v = vars[i];
    const double frac = apps::paired_ratio(lim, stats[i]);  // memcpy time / variant time, per round
    const size_t ref = v.shape == "copy" ? vars.size() : find(v.shape, v.way);  // p2p, same shape and way
    const double vs_p2p = ref < vars.size() ? apps::paired_ratio(stats[i], stats[ref]) : 0.0;
    t.add({std::to_string(size), v.label(), apps::num("%.2f", stats[i].median * 1e6),
           apps::num("%.0f", 100 * stats[i].spread) + "%", apps::num("%.2f", size / stats[i].median / 1e9),
           apps::num("%.3f", frac), cross ? apps::num("%.3f", apps::paired_ratio(*cross, stats[i])) : "-",
           vs_p2p > 0 ? apps::num("%.3f", vs_p2p) : "-", std::to_string(reps), verified[i] ? "yes" : "NO"});
    if (!js) continue;
    apps::Json j = apps::json_record("onnode");
    j["ranks"] = p;
    j["size_bytes"] = size;
    j["shape"] = v.shape;
    j["backend"] = v.backend;
    j["way"] = v.way;
    j["variant"] = v.label();
    j["reps_per_round"] = reps;
    j["rounds"] = st.rounds;
    j["time_s"] = stats[i].median;
    j["round_times_s"] = stats[i].rounds;
    j["spread"] = stats[i].spread;
    j["memcpy_time_s"] = lim.median;
    j["fraction_of_one_copy"] = frac;
    j["cross_core_time_s"] = cross ? apps::Json(cross->median) : apps::Json(nullptr);
    j["fraction_of_cross_core_copy"] = cross ? apps::Json(apps::paired_ratio(*cross, stats[i])) : apps::Json(nullptr);
    j["vs_p2p"] = vs_p2p > 0 ? apps::Json(vs_p2p) : apps::Json(nullptr);
    j["verified"] = verified[i];
    js->write(j);
  }
  t.rule();
}

/// Rank 0 reports; returns whether every check passed on every rank.
bool run_size(MPI_Comm comm, const Settings& st, int64_t size, apps::Table& t, apps::JsonLines* js) {
  const int me = comm_rank(comm), p = comm_size(comm), partner = me ^ 1;
  Buffers b;
  b.n = size / 8;
  // Every buffer touched before timing (first touch: its pages are this rank's).
  b.owned.assign(static_cast<size_t>(b.n), 0.0);
  b.ghost.assign(static_cast<size_t>(b.n), -1.0);
  b.copy_dst.assign(static_cast<size_t>(b.n), 0.0);
  MPI_Comm node = MPI_COMM_NULL;
  const bool one_node = open_cross_core(comm, b, partner, node);
  Variants v = make_variants(comm, st, b.n, partner, one_node);
  std::vector<Variant>& vars = v.vars;
  const int reps = static_cast<int>(std::clamp<int64_t>(st.round_bytes / std::max<int64_t>(size, 1), st.min_reps,
                                                        st.reps));
  const int warmup = std::max(1, std::min(reps / 10, 10));
  std::vector<char> local_ok(vars.size(), 1);
  int call = 0;
  auto stats = apps::interleaved_rounds(vars.size(), st.rounds, [&](size_t i) {
    bool ok = true;
    for (int w = 0; w < warmup; ++w) one_call(comm, vars[i], b, me, partner, ++call, ok);
    std::vector<double> per_call;
    for (int r = 0; r < reps; ++r) per_call.push_back(one_call(comm, vars[i], b, me, partner, ++call, ok));
    local_ok[i] = local_ok[i] && ok;
    return apps::median_of(per_call);
  });
  if (one_node) {
    MPI_Win_unlock_all(b.win);
    MPI_Win_free(&b.win);
  }
  MPI_Comm_free(&node);
  std::vector<bool> verified(vars.size());
  bool all_ok = true;
  for (size_t i = 0; i < vars.size(); ++i) all_ok = (verified[i] = all_ranks(comm, local_ok[i] != 0)) && all_ok;
  if (me == 0) report(vars, stats, verified, one_node, p, size, reps, st, t, js);
  return all_ok;
}

}  // namespace

namespace sparsecomm::apps {

int onnode_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm), nranks = comm_size(comm);
  apps::Options opt(
      apps::with_common(
          {"reps", "rounds", "json", "option"},
          {{"sizes",
            {"1024,4096,16384,65536,262144,1048576,4194304,16777216,67108864",
             "halo (and block) bytes per rank, comma-separated multiples of 8"}},
           {"halo-backends", {"p2p,shm,neighbor", "halo backends (make_plan), comma-separated"}},
           {"gather-backends", {"p2p,shm,neighbor", "gather backends (make_gather_plan), comma-separated"}},
           {"round-bytes",
            {"268435456", "bytes each variant moves per round: reps = round-bytes / size, within [min-reps, reps]"}},
           {"min-reps", {"10", "fewest exchanges per variant and round"}}},
          {{"reps", "1000"}, {"rounds", "7"}}),
      "usage: mpirun --bind-to core -np 2 sparsecomm onnode [options]\n"
      "The on-node halo exchange (pack, no-unpack, direct) and gather of each backend against the one-copy\n"
      "limit (a memcpy of the same bytes in the same run); ranks in pairs (r, r^1).");
  if (!apps::parse_or_help(comm, opt, argc, argv)) return 0;
  Settings st;
  st.sizes = apps::int_list("sizes", opt.get("sizes"), 8);
  for (int64_t s : st.sizes)
    if (s % 8 != 0 || s / 8 > INT32_MAX) throw InputError("--sizes: " + std::to_string(s) + " is not a multiple of 8 "
                                                          "below 16 GiB (the halo is of doubles)");
  st.halo = apps::split_list(opt.get("halo-backends"));
  st.gather = apps::split_list(opt.get("gather-backends"));
  for (const auto& b : st.halo)
    if (!backend_registered(b)) backend_hooks(b);  // InputError listing the valid names
  st.halo_options = apps::backend_options_for(opt.get("option"), st.halo);  // (e.g. one_copy=false for shm)
  for (const auto& b : st.gather)
    if (!gather_backend_registered(b))
      throw InputError("unknown gather backend '" + b + "' (`sparsecomm backends` lists them)");
  st.reps = opt.get_count("reps"), st.rounds = opt.get_count("rounds"), st.min_reps = opt.get_count("min-reps");
  st.round_bytes = opt.get_count64("round-bytes");
  if (st.min_reps > st.reps) throw InputError("--min-reps must not exceed --reps");
  st.json = opt.get("json");
  if (nranks % 2 != 0)
    throw InputError("onnode pairs the ranks (r with r^1): run an even number of ranks, got " + std::to_string(nranks));

  const auto js = apps::open_json_lines(comm, st.json);
  std::ostringstream report;
  report << "sparsecomm onnode: " << nranks << " ranks in pairs; " << st.rounds
         << " interleaved rounds, reps per round = round-bytes / size in [" << st.min_reps << ", " << st.reps << "]\n"
         << "time     = per exchange (start+wait) or copy [us]: median over rounds of apps::time_per_call\n"
         << "spread   = (slowest - fastest round) / median\n"
         << "GB/s     = size / time (bytes of one rank's halo or block; every rank moves as many at once)\n"
         << "of-limit = memcpy time / variant time, paired per round: bytes per second as a fraction of the\n"
         << "           one-copy limit (each rank memcpy-ing the same bytes at the same time)\n"
         << "of-cross = the same against the cross-core copy: each rank memcpy-ing its partner's values out of\n"
         << "           a shared window after the partner wrote them (the one copy between two cores)\n"
         << "vs p2p   = variant time / p2p's of the same shape and way, paired per round (< 1: faster)\n";
  apps::Table t({"size[B]", "variant", "time[us]", "spread", "GB/s", "of-limit", "of-cross", "vs p2p", "reps", "verified"});
  bool ok = true;
  for (int64_t size : st.sizes) {
    ok = run_size(comm, st, size, t, js.get()) && ok;
    if (rank == 0) std::cerr << "onnode: " << size << " B done\n";
  }
  ok = all_ranks(comm, ok);
  if (rank == 0) {
    std::cout << report.str() << t.str() << "\n"
              << (ok ? "every exchanged value verified\n" : "VERIFICATION FAILED\n");
    if (js) std::cout << "JSON lines appended to " << st.json << "\n";
  }
  return ok ? 0 : 3;
}

}  // namespace sparsecomm::apps

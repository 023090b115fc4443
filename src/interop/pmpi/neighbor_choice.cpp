// The PMPI layer's choice of a plan for a call, agreed on every rank (pmpi_neighbor.cpp: the layer).
#include "interop/pmpi/neighbor_internal.hpp"

namespace sparsecomm::pmpi::neighborhood {

// A run of one named type without holes (detail::contiguous_run): its bytes for `count`;
// -1 otherwise.
int64_t contiguous_bytes(MPI_Datatype t, int count) {
  MPI_Datatype base = MPI_DATATYPE_NULL;
  int n = 0;
  const int64_t one = count < 0 ? -1 : detail::contiguous_run(t, &base, &n);
  return one < 0 ? -1 : one * count;
}

// Whether `name` is a halo backend that runs an allgather as a halo plan (the halo
// backends without a gather form: the locality-aware aggregations).
bool halo_only(const std::string& name) {
  const auto g = gather_backend_names(), h = backend_names();
  return std::find(g.begin(), g.end(), name) == g.end() && std::find(h.begin(), h.end(), name) != h.end();
}

// The bad setting of `s` on a communicator of `size` ranks, or "".
std::string check_settings(const Settings& s, int size) {
  try {
    if (!s.bad.empty()) throw InputError(s.bad);
    // (the regions are read only across nodes, but a bad layout is an error wherever given)
    if (std::string e = region_spec_error(s.regions, size); !e.empty())
      throw InputError("SPARSECOMM_MPI_REGIONS or sparsecomm_regions: " + e);
    if (s.backend != "auto" && s.backend != "mpi" && !halo_only(s.backend)) {
      const auto g = gather_backend_names(), h = backend_names();
      if (std::find(g.begin(), g.end(), s.backend) == g.end()) {
        std::string names;
        for (const auto& n : g) names += " " + n;
        names += ";";
        for (const auto& n : h)
          if (n != "auto" && std::find(g.begin(), g.end(), n) == g.end()) names += " " + n;
        throw InputError("unknown backend '" + s.backend + "' (SPARSECOMM_MPI_BACKEND or sparsecomm_backend): auto, mpi," +
                         names);
      }
    }
    if (s.k < 0 || s.k == 1) throw InputError("SPARSECOMM_MPI_K must be 0 (default) or at least 2");
  } catch (const std::exception& e) {
    return std::string(e.what()) + " (backend '" + s.backend + "')";
  }
  return "";
}

// `label`: the blocks, e.g. "4-byte blocks".
void report(const CommPlans& p, MPI_Comm comm, Kind k, const std::string& label, const std::string& what) {
  if (!global().verbose) return;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (rank == 0)
    std::fprintf(stderr, "sparsecomm mpi: communicator %s, %s of %s%s: %s\n", detail::handle_id(comm).c_str(), kCallName[k],
                 label.c_str(), p.settings.fixed ? " (counts fixed)" : "", what.c_str());
}

std::string block_label(int64_t bytes) { return std::to_string(bytes) + "-byte blocks"; }



// Collective. Whether every rank of comm shares one node (the same answer on every rank),
// the shm backends exist and one_node is not off: then auto takes them (every transfer one
// copy into a shared window and one out, experiments/pmpi/README.md).
bool shm_whole_node(CommPlans& p, MPI_Comm comm) {
  if (p.settings.one_node == "off") return false;  // (alike on every rank: agreed settings)
  if (p.one_node < 0) {
    MPI_Comm node = MPI_COMM_NULL;
    PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int n = 0, all = 0;
    PMPI_Comm_size(node, &n);
    PMPI_Comm_size(comm, &all);
    PMPI_Comm_free(&node);
    p.one_node = n == all ? 1 : 0;
  }
  const auto g = gather_backend_names(), h = backend_names();
  return p.one_node == 1 && std::find(g.begin(), g.end(), "shm") != g.end() &&
         std::find(h.begin(), h.end(), "shm") != h.end();
}

// A halo plan's options: blocks of `unit` bytes (the widest value type that divides the
// block, `width` of them), and the combining parameters (SPARSECOMM_MPI_K, _AWARE or their
// info keys) for a backend that takes them -- combined, and auto, which hands them on to
// combined -- as the gather plans get them.
PlanOptions block_options(const Settings& s, const std::string& backend, int64_t unit) {
  PlanOptions po;
  po.value_bytes = unit % 8 == 0 ? 8 : unit % 4 == 0 ? 4 : 1;
  po.width = static_cast<int>(unit / po.value_bytes);
  if (declares_option(backend_option_specs(backend), "k")) {
    if (s.k) po.backend.set("k", s.k);
    if (s.aware >= 0) po.backend.set("aware", s.aware != 0);
  }
  return po;
}

// An allgather as a halo Pattern, so that the halo backends run it, the locality-aware
// aggregations among them: one entry per block; every destination gets entry 0 (this
// rank's block) under one id, this rank's number, so duplicate removal (aggregated_dedup,
// aggregated_2step) moves a block across a region pair once however many ranks there need
// it — the node-aware allgather of Bienz, Gropp and Olson (EuroMPI 2019) with the
// duplicate-free forward of Collom et al.'s locality-aware neighborhood collectives.
// Source uniq_src[j]'s block lands at entry j (the plan's order, as the gather plans').
Pattern allgather_pattern(const Neighbors& nb, int me) {
  PatternSide send, recv;
  for (int r : nb.uniq_dst) {
    send.ranks.push_back(r);
    send.indices.push_back(0);
    send.global_ids.push_back(me);
    send.offsets.push_back(send.size());
  }
  for (size_t j = 0; j < nb.uniq_src.size(); ++j) {
    recv.ranks.push_back(nb.uniq_src[j]);
    recv.indices.push_back(static_cast<int32_t>(j));
    recv.global_ids.push_back(nb.uniq_src[j]);
    recv.offsets.push_back(recv.size());
  }
  return Pattern(std::move(send), std::move(recv), 1, static_cast<int32_t>(nb.uniq_src.size()));
}

// An allgatherv as a halo Pattern (the allgather_pattern idea with blocks of different
// sizes): a plan's entries have one width, so blocks are cut into `unit`-byte entries,
// unit the largest power of two up to 8 that divides every rank's block (agreed); entry
// e of rank r's block has the id r * 2^31 + e on every edge it travels. The receive side
// follows what each source sends (`from`, bytes per uniq source, learned from the sources),
// not the program's receive counts, so a program whose counts disagree gets MPI's
// truncation error at delivery as on the gather path. Sets `off` (bytes into the staging
// buffer per uniq source) and returns the pattern.
Pattern allgatherv_pattern(const Neighbors& nb, int me, int64_t mine, const std::vector<int64_t>& from, int64_t unit,
                           std::vector<int64_t>* off) {
  PatternSide send, recv;
  for (int r : nb.uniq_dst) {
    send.ranks.push_back(r);
    for (int64_t e = 0; e < mine / unit; ++e)
      send.indices.push_back(static_cast<int32_t>(e)), send.global_ids.push_back((static_cast<int64_t>(me) << 31) + e);
    send.offsets.push_back(send.size());
  }
  off->assign(nb.uniq_src.size() + 1, 0);
  for (size_t j = 0; j < nb.uniq_src.size(); ++j) {
    recv.ranks.push_back(nb.uniq_src[j]);
    const int64_t at = (*off)[j] / unit;
    for (int64_t e = 0; e < from[j] / unit; ++e)
      recv.indices.push_back(static_cast<int32_t>(at + e)),
          recv.global_ids.push_back((static_cast<int64_t>(nb.uniq_src[j]) << 31) + e);
    recv.offsets.push_back(recv.size());
    (*off)[j + 1] = (*off)[j] + from[j];
  }
  return Pattern(std::move(send), std::move(recv), static_cast<int32_t>(std::max<int64_t>(mine / unit, 1)),
                 static_cast<int32_t>(off->back() / unit));
}

// What auto's halo plan predicted for backend `name` (the same on every rank: rank 0's
// predictions, broadcast).
double predicted(const Plan& plan, const std::string& name) { return plan.setup_stats().time("auto.predict." + name); }

// The halo backends that are MPI's own direct exchange: auto steps aside rather than run them.
bool direct(const std::string& name) { return name == "p2p" || name.rfind("neighbor", 0) == 0; }

// auto's halo plan against the direct exchange: its prediction `t`, the direct one's, whether
// it is kept (not a direct exchange, predicted kAutoMargin faster) and the report's words.
struct HaloVerdict {
  double t = 0, direct = 0;
  bool keep = false;
  std::string text;
};
// `extra`: what the plan's path costs per call beyond the plan (an agreement; 0 where none).
HaloVerdict verdict_of(const Plan& halo, double extra) {
  HaloVerdict v;
  v.t = predicted(halo, halo.name()) + extra, v.direct = predicted(halo, "p2p");
  v.keep = !direct(halo.name()) && v.t * kAutoMargin < v.direct;
  char why[160];
  std::snprintf(why, sizeof why, "%.1f us %s against %.1f us direct", v.t * 1e6, halo.name().c_str(), v.direct * 1e6);
  v.text = why;
  return v;
}

// Collective. What one agreement (agree(): an allreduce of four integers) takes on this
// communicator, the largest over ranks (so the same everywhere), measured once: the median
// of five. A blocking call without the fixed-counts hint pays it before every plan it runs
// and, once auto steps aside (steps_aside()), hardly at all before MPI's own, so auto
// charges it to the plans it weighs for such calls: a plan that saves less than an
// agreement costs is not taken. Across emulated nodes an agreement costs milliseconds, on
// one node tens of microseconds (where auto takes the shm plans without weighing).
double agreement_cost(CommPlans& p, MPI_Comm comm) {
  if (p.agreement < 0) {
    double t[5];
    const long long in[4] = {0, 0, 0, 0};
    long long out[4];
    for (double& x : t) {
      const double t0 = MPI_Wtime();
      PMPI_Allreduce(in, out, 4, MPI_LONG_LONG, MPI_MAX, comm);
      x = MPI_Wtime() - t0;
    }
    std::sort(t, t + 5);
    double most = 0;
    PMPI_Allreduce(&t[2], &most, 1, MPI_DOUBLE, MPI_MAX, comm);
    p.agreement = most;
  }
  return p.agreement;
}

// The report's words for the agreement charged to each plan (none: nothing).
std::string agreement_text(double extra) {
  return extra > 0 ? " (each plan with a " + std::to_string(static_cast<long>(extra * 1e6)) + " us agreement per call)"
                   : std::string();
}

namespace {

// Collective. False, reported, where the backend is mpi (MPI's own serves the call);
// otherwise true, with the layer's locality built on first use.
bool plans_wanted(CommPlans& p, MPI_Comm comm, Kind k, const std::string& label) {
  const Settings& s = p.settings;
  if (s.backend == "mpi") {
    report(p, comm, k, label, "MPI's own (backend mpi)");
    return false;
  }
  if (!p.loc) p.loc = std::make_unique<Locality>(Locality::parse(comm, s.regions));
  return true;
}

// Collective. The gather plan `name` of an allgather(v) over the neighbors `t` in bytes
// (same_count: every rank sends `bytes`); a combining backend takes the layer's k and
// aware settings.
std::unique_ptr<GatherPlan> make_gather(const CommPlans& p, MPI_Comm comm, const Topology& t, const std::string& name,
                                        int64_t bytes, bool same_count) {
  const Settings& s = p.settings;
  GatherOptions go;
  go.value_bytes = 1;
  go.same_count = same_count;
  if (gather_backend_combines(name)) {
    CombiningOptions co = combining_from(go.backend, go.sdde);
    if (s.k) co.k = s.k;
    if (s.aware >= 0) co.aware = s.aware != 0;
    set_combining(go.backend, co);
  }
  return make_gather_plan(name, t, *p.loc, comm, bytes, go);
}

// Collective. The halo plan `name` of an allgather(v); for an allgatherv it first learns
// each source's block size (a neighborhood allgather of one integer) and agrees the entry
// size (an allreduce), and keeps the blocks' sizes and places in `c`: plans are built once
// per signature, so this is set-up. Null (on every rank alike) where the pattern would be
// too large: its bytes past what a plan indexes (make_plan's limit), or an allgatherv cut
// into more than kHaloEntries entries (the pattern's memory); the gather plans take those.
std::unique_ptr<Plan> make_gather_halo(const CommPlans& p, MPI_Comm comm, const std::string& name, int64_t bytes,
                                       bool same_count, Choice& c) {
  constexpr long long kHaloEntries = 1LL << 22;
  const Settings& s = p.settings;
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  const auto nd = static_cast<long long>(p.nb.uniq_dst.size()), ns = static_cast<long long>(p.nb.uniq_src.size());
  if (same_count) {
    long long mine = (nd + ns) * bytes, most = 0;
    PMPI_Allreduce(&mine, &most, 1, MPI_LONG_LONG, MPI_MAX, comm);
    if (most > INT32_MAX) return nullptr;
    return make_plan(name, allgather_pattern(p.nb, me), *p.loc, comm, block_options(s, name, bytes));
  }
  long long mine = bytes;
  std::vector<long long> got(p.nb.sources.size() + 1, 0);
  PMPI_Neighbor_allgather(&mine, 1, MPI_LONG_LONG, got.data(), 1, MPI_LONG_LONG, comm);
  std::vector<int64_t> from(p.nb.uniq_src.size(), 0);
  long long in = 0;
  for (size_t i = 0; i < p.nb.sources.size(); ++i)
    if (p.nb.src_slot[i] >= 0) from[static_cast<size_t>(p.nb.src_slot[i])] = got[i];
  for (int64_t b : from) in += b;
  // One allreduce (minimum) agrees the entry size and the largest pattern: {my block's
  // power-of-two divisor up to 8, -(my pattern's bytes)}.
  const long long unit = bytes > 0 ? std::min<long long>(8, bytes & -bytes) : 8;
  const long long local[2] = {unit, -(nd * bytes + in)};
  long long agreed[2] = {8, 0};
  PMPI_Allreduce(local, agreed, 2, MPI_LONG_LONG, MPI_MIN, comm);
  if (-agreed[1] > INT32_MAX || -agreed[1] / agreed[0] > kHaloEntries) return nullptr;
  c.halo_bytes = from;
  Pattern pat = allgatherv_pattern(p.nb, me, bytes, from, agreed[0], &c.halo_off);
  return make_plan(name, pat, *p.loc, comm, block_options(s, name, agreed[0]));
}

// Collective. Backend auto on more than one node: the combined gather plan and the halo
// auto's choice, each predicted against its own direct exchange; the faster wins if by
// kAutoMargin. False (reported) where neither does: MPI's own.
bool choose_gather_auto(CommPlans& p, MPI_Comm comm, Kind k, const std::string& label, const Topology& t,
                        int64_t bytes, bool same_count, Choice& c) {
  const ModelParams model = ModelParams::resolve(comm, *p.loc, "");
  auto combined = make_gather(p, comm, t, "combined", bytes, same_count);
  const double tc = predict_gather(*combined, model, comm);
  // what MPI's direct exchange costs
  const double td = predict_gather(*make_gather(p, comm, t, "p2p", bytes, same_count), model, comm);
  // An allgather also as a halo plan: the halo auto predicts every halo backend (the
  // aggregations, combining, shm, direct) from counts and builds only its choice.
  std::unique_ptr<Plan> halo = make_gather_halo(p, comm, "auto", bytes, same_count, c);
  const double extra = p.charge_agreement ? agreement_cost(p, comm) : 0.0;
  const HaloVerdict h = halo ? verdict_of(*halo, extra) : HaloVerdict{};
  const bool keep_c = (tc + extra) * kAutoMargin < td;
  char why[160];
  std::snprintf(why, sizeof why, "auto predicted %.1f us combined against %.1f us direct", (tc + extra) * 1e6,
                td * 1e6);
  std::string text = why;
  if (halo) text += ", " + h.text;
  text += agreement_text(extra);
  if (h.keep && (!keep_c || h.t / h.direct < (tc + extra) / td)) {
    report(p, comm, k, label, text + ": " + halo->name());
    c.halo = std::move(halo);
  } else if (keep_c) {
    report(p, comm, k, label, text + ": combined");
    c.gather = std::move(combined);
  } else {
    report(p, comm, k, label, text + ": MPI's own");
    return false;
  }
  return true;
}

}  // namespace

// Collective. The agreed choice of an allgather(v) where this rank sends `bytes`: a gather
// plan, a halo plan (allgather_pattern, allgatherv_pattern), or null for MPI's own.
// same_count: every rank sends `bytes` (allgather).
std::shared_ptr<Choice> build_gather(CommPlans& p, MPI_Comm comm, Kind k, int64_t bytes, bool same_count,
                                     const std::string& label) {
  if (!plans_wanted(p, comm, k, label)) return nullptr;
  const Settings& s = p.settings;
  Topology t;
  t.sources = p.nb.uniq_src, t.destinations = p.nb.uniq_dst;
  auto c = std::make_shared<Choice>();
  if (s.backend == "auto" && shm_whole_node(p, comm)) {
    c->gather = make_gather(p, comm, t, "shm", bytes, same_count);
    c->needs_trial = p.charge_agreement;
    report(p, comm, k, label, "auto: one node: shm plan built");
  } else if (s.backend == "auto") {
    if (!choose_gather_auto(p, comm, k, label, t, bytes, same_count, *c)) return nullptr;
  } else if (halo_only(s.backend) && (c->halo = make_gather_halo(p, comm, s.backend, bytes, same_count, *c))) {
    report(p, comm, k, label, c->halo->name() + " plan built");
  } else {
    // (a halo-only backend whose pattern would be too large: the direct gather plan)
    c->gather = make_gather(p, comm, t, halo_only(s.backend) ? "p2p" : s.backend, bytes, same_count);
    report(p, comm, k, label, c->gather->name() + " plan built");
  }
  if (c->halo) {
    if (!same_count) c->staging.resize(static_cast<size_t>(c->halo_off.back()) + 1);
    else if (!p.nb.src_identity) c->staging.resize(p.nb.uniq_src.size() * static_cast<size_t>(bytes) + 1);
  } else if (!p.nb.src_identity || k == kAllgatherv) {
    c->staging.resize(static_cast<size_t>(c->gather->recv_total()) + 1);
  }
  return c;
}

// Collective. The agreed choice of an alltoall(v): a halo Pattern with an entry per `unit`
// bytes of each edge to another rank (destination j: out.count(j) units from out.displ(j)
// of the send buffer; source i: in.count(i) units at in.displ(i) of the receive buffer),
// ids unique per (sender, receiver, unit); self edges are a copy, MPI_PROC_NULL slots
// nothing.
std::shared_ptr<Choice> build_halo(CommPlans& p, MPI_Comm comm, Kind k, int64_t unit, Layout out, Layout in,
                                   const std::string& label) {
  if (!plans_wanted(p, comm, k, label)) return nullptr;
  const Settings& s = p.settings;
  int me = 0, np = 1;
  PMPI_Comm_rank(comm, &me);
  PMPI_Comm_size(comm, &np);
  int32_t extent[2] = {0, 0};
  const auto side = [&](const std::vector<int>& mpi_order, const Layout& l, bool send) {
    PatternSide ps;
    std::vector<int> order;
    for (size_t i = 0; i < mpi_order.size(); ++i)
      if (mpi_order[i] != me && mpi_order[i] != MPI_PROC_NULL) order.push_back(static_cast<int>(i));
    std::sort(order.begin(), order.end(), [&](int a, int b) { return mpi_order[a] < mpi_order[b]; });
    for (int i : order) {
      const int r = mpi_order[static_cast<size_t>(i)];
      const int64_t pair = send ? static_cast<int64_t>(me) * np + r : static_cast<int64_t>(r) * np + me;
      ps.ranks.push_back(r);
      for (int e = 0; e < l.count(static_cast<size_t>(i)); ++e) {
        ps.indices.push_back(l.displ(static_cast<size_t>(i)) + e);
        ps.global_ids.push_back((pair << 31) + e);
      }
      ps.offsets.push_back(static_cast<int64_t>(ps.indices.size()));
    }
    for (size_t i = 0; i < mpi_order.size(); ++i)
      extent[send ? 0 : 1] = std::max(extent[send ? 0 : 1], l.displ(i) + l.count(i));
    return ps;
  };
  PatternSide send = side(p.nb.destinations, out, true);
  PatternSide recv = side(p.nb.sources, in, false);
  Pattern pat(std::move(send), std::move(recv), extent[0], extent[1]);
  const auto po = [&](const std::string& backend) { return block_options(s, backend, unit); };
  auto c = std::make_shared<Choice>();
  // On one node auto takes the shm halo plan for blocks up to shm_block_max bytes (why that
  // bound: kShmBlockMaxDefault), the largest block over all ranks (agreed).
  if (s.backend == "auto" && shm_whole_node(p, comm)) {
    long long largest = 0, agreed = 0;
    for (size_t j = 0; j < p.nb.destinations.size(); ++j)
      largest = std::max<long long>(largest, static_cast<long long>(out.count(j)) * unit);
    PMPI_Allreduce(&largest, &agreed, 1, MPI_LONG_LONG, MPI_MAX, comm);
    if (agreed <= s.shm_block_max) {
      c->halo = make_plan("shm", pat, *p.loc, comm, po("shm"));
      c->needs_trial = p.charge_agreement;
      report(p, comm, k, label, "auto: one node: shm plan built");
      return c;
    }
    report(p, comm, k, label, "auto: one node, blocks above " + std::to_string(s.shm_block_max) + " bytes: MPI's own");
    return nullptr;
  }
  if (s.backend == "auto") {
    // The halo auto predicts every halo backend from counts and builds only its choice;
    // kept if not a direct exchange and predicted kAutoMargin faster than one.
    auto chosen = make_plan("auto", pat, *p.loc, comm, po("auto"));
    const double extra = p.charge_agreement ? agreement_cost(p, comm) : 0.0;
    const HaloVerdict v = verdict_of(*chosen, extra);
    report(p, comm, k, label,
           "auto predicted " + v.text + agreement_text(extra) + ": " + (v.keep ? chosen->name() : std::string("MPI's own")));
    if (!v.keep) return nullptr;
    c->halo = std::move(chosen);
    return c;
  }
  const auto names = backend_names();
  const bool halo_named = std::find(names.begin(), names.end(), s.backend) != names.end();
  c->halo = make_plan(halo_named ? s.backend : "p2p", pat, *p.loc, comm, po(halo_named ? s.backend : "p2p"));
  report(p, comm, k, label, c->halo->name() + " plan built");
  return c;
}

// The choice of a call in which no rank moves a byte (every block empty): no plan, nothing
// to do, which MPI's own would also do.
std::shared_ptr<Choice> nothing_to_move(CommPlans& p, MPI_Comm comm, Kind k, const std::string& label) {
  auto c = std::make_shared<Choice>();
  c->nothing = true;
  report(p, comm, k, label, "nothing to move");
  return c;
}

// Collective. The agreed choice of an allgather or alltoall of `bytes`-byte blocks.
std::shared_ptr<Choice> build_choice(CommPlans& p, MPI_Comm comm, Kind k, int64_t bytes) {
  if (bytes == 0) return nothing_to_move(p, comm, k, block_label(bytes));
  if (k == kAllgather) return build_gather(p, comm, k, bytes, true, block_label(bytes));
  return build_halo(p, comm, k, bytes, Layout{}, Layout{}, block_label(bytes));
}

}  // namespace sparsecomm::pmpi::neighborhood

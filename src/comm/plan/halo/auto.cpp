// auto: model-based choice of the backend. Predicts each other registered backend's cost
// per execution from its deterministic counts (comm/model.hpp) and returns the plan of the
// lowest prediction, its name kept; setup_stats() hold "auto.predict.<backend>" (seconds,
// every candidate), "auto.setup.<backend>" (every candidate it built), "auto.choose" (the
// time to choose) and "setup.backend" (auto's whole setup), which `sparsecomm info` prints.
//
// Counts without plans: a backend's counts hook (BackendHooks::counts, the one plan
// statistics use and tests/test_plan_stats.cpp checks rank by rank against real plans)
// gives every rank's counts from the whole pattern. Rank 0 gathers the pattern's send
// side (every rank's destinations and segment sizes, and per remote region the number of
// distinct ids it sends there, counted by each rank for itself; the ids themselves stay
// home: HaloPattern::distinct, segments without ids), evaluates every candidate's counts
// and the model's prediction (predict_from_terms, the same formula predict_iteration
// reduces over real ranks), and broadcasts the predictions. Only the chosen plan is built,
// without make_plan's collectives (auto's own make_plan ran them). A backend without a
// counts hook (one registered outside the library) is built and predicted from its real
// counts. The model's agreement (ModelParams::resolve's allreduce) and the node labels
// travel in the same gather, so auto's setup is its chosen backend's plus one gather, rank
// 0's counting and one broadcast; the counting of message-combining candidates grows with
// P (combining_schedules) and dominates at thousands of ranks.
//
// With the option iterations = N > 0 the choice weighs setup + N x execution cost, and a
// setup time is only known by building: then every candidate is built and its measured
// setup (max over ranks) used, as before.
//
// With the option race = N > 0 the candidates predicted close to the cheapest are built and
// timed (race_medians), and the fastest measured is taken; "auto.race.<backend>" holds each
// one's median seconds per exchange. Off by default: it costs the close candidates' setups
// and N exchanges each, where the model alone costs one gather and one broadcast.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "comm/plan/registry.hpp"
#include "comm/plan/tune.hpp"
#include "comm/shm_channel.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"

namespace sparsecomm {

namespace {

// Per remote region, the number of distinct ids this rank sends to its ranks (what
// duplicate removal leaves). The ids a rank sends are its own values, so their range is
// usually its block: a mark per id of the range, set to the region being counted, counts
// them in one pass without sorting; a range much wider than the ids falls back to sorting.
std::map<int, int64_t> distinct_to_regions(const PatternSide& s, const std::vector<int>& region, int me) {
  std::map<int, std::vector<int>> segs;  // remote region -> my segments to its ranks
  for (int i = 0; i < s.num_neighbors(); ++i) {  // (empty segments left out, as in message_of)
    const int S = region[static_cast<size_t>(s.ranks[i])];
    if (S != region[static_cast<size_t>(me)] && s.count(i) > 0) segs[S].push_back(i);
  }
  std::map<int, int64_t> out;
  if (segs.empty()) return out;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min(), n = 0;
  for (const auto& kv : segs)
    for (int i : kv.second)
      for (int64_t k = s.offsets[i]; k < s.offsets[i + 1]; ++k)
        lo = std::min(lo, s.global_ids[k]), hi = std::max(hi, s.global_ids[k]), ++n;
  if (hi - lo < 4 * n + 4096) {
    std::vector<int> mark(static_cast<size_t>(hi - lo + 1), -1);
    for (const auto& [S, list] : segs) {
      int64_t d = 0;
      for (int i : list)
        for (int64_t k = s.offsets[i]; k < s.offsets[i + 1]; ++k) {
          int& m = mark[static_cast<size_t>(s.global_ids[k] - lo)];
          if (m != S) m = S, ++d;
        }
      out[S] = d;
    }
    return out;
  }
  for (const auto& [S, list] : segs) {
    std::vector<int64_t> v;
    for (int i : list) v.insert(v.end(), s.global_ids.begin() + s.offsets[i], s.global_ids.begin() + s.offsets[i + 1]);
    std::sort(v.begin(), v.end());
    out[S] = static_cast<int64_t>(std::unique(v.begin(), v.end()) - v.begin());
  }
  return out;
}

// What every rank sends rank 0 ahead of its pattern: what it knows of the model
// (LocalModel: kind, measure, error text, the parameters bit for bit) and the lowest rank
// of its node (-1: no window backend). Rank 0 checks that the ranks agree, so auto needs no
// collective of its own for the model (ModelParams::resolve's allreduce) nor for the nodes
// (node_labels' allgather).
constexpr size_t kHeader = 4 + ModelParams::kFields;
void put_header(std::vector<int64_t>& v, const LocalModel& lm, int lowest) {
  v.push_back(lm.kind), v.push_back(lm.measure ? 1 : 0), v.push_back(lowest);
  v.push_back(static_cast<int64_t>(lm.error.size()));
  const size_t at = v.size();
  v.resize(at + ModelParams::kFields);
  std::memcpy(v.data() + at, &lm.params, sizeof(double) * ModelParams::kFields);
  v.insert(v.end(), lm.error.begin(), lm.error.end());
}

// Rank 0: whether the ranks' headers agree (an InputError as ModelParams::resolve gives
// it if not); true if a measurement is needed. Fills `node` from the lowest ranks (numbered
// by lowest rank, as node_labels() numbers them).
bool check_headers(const std::vector<std::vector<int64_t>>& got, const LocalModel& mine, std::vector<int>& node) {
  bool measure = false;
  std::vector<int> lowest;
  for (size_t r = 0; r < got.size(); ++r) {
    const std::vector<int64_t>& h = got[r];
    if (h[0] != got[0][0]) throw InputError("model: ranks disagree on the parameter source (file, builtin or measured)");
    if (h[3] > 0)
      throw InputError(std::string(h.begin() + kHeader, h.begin() + kHeader + h[3]) + " [on rank " + std::to_string(r) + "]");
    measure = measure || h[1] != 0;
    if (!measure && std::memcmp(h.data() + 4, got[0].data() + 4, sizeof(double) * ModelParams::kFields) != 0)
      throw InputError("model: ranks loaded different performance model parameters from " +
                       (mine.kind == 2 ? mine.source : std::string("the measured model")));
    lowest.push_back(static_cast<int>(h[2]));
  }
  if (lowest[0] >= 0) node = node_labels_from_lowest(lowest);
  return measure;
}

// What every rank sends rank 0: [header, neighbors, (rank, count) ..., regions, (region,
// distinct) ...]. What the counts need of the ids is, per rank and remote region, how many
// distinct ids it sends there: every rank counts its own (in parallel) and sends that with
// its destinations and segment sizes, not the ids.
std::vector<int64_t> message_of(MPI_Comm c, const Pattern& p, const std::vector<int>& region,
                                const std::vector<int64_t>& header) {
  const auto& s = p.send();
  const std::map<int, int64_t> distinct = distinct_to_regions(s, region, comm_rank(c));
  std::vector<int64_t> mine(header);
  mine.reserve(header.size() + 2 + 2 * static_cast<size_t>(s.num_neighbors()) + 2 * distinct.size());
  // (Empty segments, which MPI's neighborhood collectives make with counts of 0, carry
  // nothing and are left out: the counts take destinations with values.)
  int64_t nonempty = 0;
  for (int i = 0; i < s.num_neighbors(); ++i) nonempty += s.count(i) > 0;
  mine.push_back(nonempty);
  for (int i = 0; i < s.num_neighbors(); ++i)
    if (s.count(i) > 0) mine.push_back(s.ranks[i]), mine.push_back(s.count(i));
  mine.push_back(static_cast<int64_t>(distinct.size()));
  for (const auto& [S, d] : distinct) mine.push_back(S), mine.push_back(d);
  return mine;
}

// The messages reach rank 0 in collectives on c itself (no point-to-point, so no library
// duplicate of c to create on its first use, and nothing a program's own messages on c
// could match): one MPI_Gather of a fixed chunk per rank, its length first. A message
// longer than its chunk (many neighbors) sends the rest in an MPI_Gatherv that every rank
// joins only when rank 0's broadcast asks for it (gather_rest).
// Rank 0's view of the messages: what arrived of each, and how many words of it did not.
struct Gathered {
  std::vector<std::vector<int64_t>> msg;
  std::vector<int> missing;
  bool complete() const {
    return std::all_of(missing.begin(), missing.end(), [](int n) { return n == 0; });
  }
};

// `words` per chunk: auto's option gather_words (the same on every rank: make_plan checked it).
void gather_chunks(MPI_Comm c, const std::vector<int64_t>& mine, int words, Gathered& got) {
  std::vector<int64_t> chunk(static_cast<size_t>(words), 0);
  chunk[0] = static_cast<int64_t>(mine.size());
  std::copy_n(mine.begin(), std::min<size_t>(mine.size(), static_cast<size_t>(words - 1)), chunk.begin() + 1);
  const bool root = comm_rank(c) == 0;
  const int P = comm_size(c);
  std::vector<int64_t> all(root ? static_cast<size_t>(P) * words : 0);
  SPC_MPI(MPI_Gather(chunk.data(), words, MPI_INT64_T, all.data(), words, MPI_INT64_T, 0, c));
  if (!root) return;
  got.msg.assign(static_cast<size_t>(P), {});
  got.missing.assign(static_cast<size_t>(P), 0);
  for (int r = 0; r < P; ++r) {
    const int64_t* at = all.data() + static_cast<size_t>(r) * words;
    got.msg[static_cast<size_t>(r)].assign(at + 1, at + 1 + std::min<int64_t>(at[0], words - 1));
    got.missing[static_cast<size_t>(r)] = static_cast<int>(std::max<int64_t>(0, at[0] - (words - 1)));
  }
}
void gather_rest(MPI_Comm c, const std::vector<int64_t>& mine, int words, Gathered& got) {
  const int n = static_cast<int>(std::max<size_t>(mine.size(), static_cast<size_t>(words - 1)) - (words - 1));
  const bool root = comm_rank(c) == 0;
  const int P = comm_size(c);
  std::vector<int> displs(root ? static_cast<size_t>(P) : 0);
  std::vector<int64_t> rest;
  if (root) {
    int total = 0;
    for (int r = 0; r < P; ++r) displs[static_cast<size_t>(r)] = total, total += got.missing[static_cast<size_t>(r)];
    rest.resize(static_cast<size_t>(total));
  }
  SPC_MPI(MPI_Gatherv(mine.data() + (words - 1) * (n > 0), n, MPI_INT64_T, rest.data(), got.missing.data(),
                      displs.data(), MPI_INT64_T, 0, c));
  if (!root) return;
  for (int r = 0; r < P; ++r) {
    const int64_t* at = rest.data() + displs[static_cast<size_t>(r)];
    got.msg[static_cast<size_t>(r)].insert(got.msg[static_cast<size_t>(r)].end(), at, at + got.missing[static_cast<size_t>(r)]);
    got.missing[static_cast<size_t>(r)] = 0;
  }
}

// Rank 0: every rank's message as a virtual pattern (the counts in HaloPattern::distinct,
// the segments without ids: Segment::sized) and its header.
virt::HaloPattern unpack(const std::vector<std::vector<int64_t>>& got, std::vector<std::vector<int64_t>>& headers) {
  const int P = static_cast<int>(got.size());
  virt::HaloPattern h;
  h.p = P;
  h.send.resize(static_cast<size_t>(P));
  h.distinct.resize(static_cast<size_t>(P));
  headers.resize(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    const std::vector<int64_t>& all = got[static_cast<size_t>(r)];
    size_t at = kHeader + static_cast<size_t>(all[3]);  // (after the error text, as long as the header says)
    headers[static_cast<size_t>(r)].assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(at));
    const int64_t nb = all[at++];
    const size_t seg_at = at;
    at += 2 * static_cast<size_t>(nb);
    const int64_t nreg = all[at++];
    for (int64_t k = 0; k < nreg; ++k, at += 2) h.distinct[static_cast<size_t>(r)][static_cast<int>(all[at])] = all[at + 1];
    for (int64_t i = 0; i < nb; ++i)
      h.send[static_cast<size_t>(r)].push_back(virt::HaloPattern::Segment::sized(
          static_cast<int>(all[seg_at + 2 * static_cast<size_t>(i)]), all[seg_at + 2 * static_cast<size_t>(i) + 1]));
  }
  return h;
}

// Rank 0: the prediction of backend `name` from its counts hook, as predict_iteration
// would make it on the plan that backend builds.
double predict_virtual(const std::string& name, const virt::HaloPattern& h, const std::vector<int>& region,
                       const PlanOptions& co, const ModelParams& model, double& work) {
  const ModelParams m = for_layout(model, region, h.node);
  const std::vector<virt::RankCounts> c = virt::halo_counts(name, h, region, co);
  const double eb = static_cast<double>(co.width) * co.value_bytes;
  std::vector<std::map<std::string, bool>> parts(c.size());
  for (size_t r = 0; r < c.size(); ++r) parts[r] = takes_part(c[r].counts, c[r].window, true);
  const std::map<std::string, double> share = step_shares(parts);
  std::vector<RankTerms> terms(c.size());
  for (size_t r = 0; r < c.size(); ++r) {
    double own = 0;
    for (const auto& seg : h.send[r]) own += static_cast<double>(seg.size) * eb;
    const auto& t = c[r].counts.total();
    const double staged = std::max(0.0, static_cast<double>(t.sent_intra.bytes + t.sent_inter.bytes) - own);
    terms[r] = rank_terms(c[r].counts, c[r].window, staged, c[r].stages, m, share);
  }
  work = total_work(terms);
  return predict_from_terms(terms, region, m);
}

struct Times {
  double model = 0, gather = 0, count = 0;
};

// Collective: the predictions of the candidates with a counts hook (-1 for the others), made
// on rank 0 from the gathered pattern and broadcast with its outcome; `m` is set to the
// model they used, the same on every rank. Two collectives on the success path (the gather,
// the broadcast): the model's agreement and the node labels travel in the gather, and a
// measured model that is new on this communicator but in the machine's cache travels in
// the broadcast. Only in the first three launches on a machine and layout (the cache has
// fewer calibrations: machine_model) do a measurement and a second broadcast follow.
std::vector<double> predict_all(const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o,
                                const std::vector<std::string>& order,
                                const std::function<PlanOptions(const std::string&)>& options_of, ModelParams& m,
                                std::vector<double>& work, Times& t) {
  double t0 = MPI_Wtime();
  const LocalModel lm = local_model(c, l, o.backend.get("model", ""));
  int lowest = -1;  // windows follow the real node, not emulated regions
#ifndef SPARSECOMM_SMPI  // (SMPI has no shared windows: every transfer is a message)
  bool windows = false;
  for (const auto& n : order) windows = windows || backend_hooks(n).node_window;
  if (windows) lowest = detail::node_of(c)->node_rank_of.begin()->first;
#endif
  std::vector<int64_t> header;
  put_header(header, lm, lowest);
  t.model = MPI_Wtime() - t0;
  const std::vector<int>& region = l.regions();
  t0 = MPI_Wtime();
  const std::vector<int64_t> mine = message_of(c, p, region, header);
  Gathered got;
  std::vector<std::vector<int64_t>> headers;
  const int chunk = static_cast<int>(std::min<int64_t>(o.backend.get_int("gather_words", 96), 1 << 16));
  gather_chunks(c, mine, chunk, got);
  t.gather = MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  // Broadcast: the predictions, then what rank 0 did — 0: predicted, the ranks agreed on
  // the model; 2: predicted, the model was to be measured and rank 0 read it from the
  // machine's cache (it follows: every rank remembers it); 1: the model must be measured
  // (no cache: all ranks, then a second broadcast); 3: some rank's message is incomplete
  // (gather_rest, then a second broadcast).
  m = lm.params;
  const size_t n = order.size();
  // [predictions, total work (the tie-break), rank 0's flag, a model read by rank 0]
  const size_t flag = 2 * n;
  std::vector<double> predicted(2 * n + 1 + ModelParams::kFields, -1.0);
  virt::HaloPattern h;
  auto count = [&] {
    for (size_t i = 0; i < n; ++i)
      if (backend_hooks(order[i]).counts)
        predicted[i] = predict_virtual(order[i], h, region, options_of(order[i]), m, predicted[n + i]);
  };
  auto decide = [&] {
    predicted[flag] = 0;
    if (!got.complete()) {
      predicted[flag] = 3;
      return;
    }
    h = unpack(got.msg, headers);
    if (check_headers(headers, lm, h.node)) {
      predicted[flag] = read_machine_model_cache(h.node, l, m) ? 2 : 1;
      if (predicted[flag] == 1) return;
      std::memcpy(predicted.data() + flag + 1, &m, sizeof(double) * ModelParams::kFields);
    }
    count();
  };
  root_computed(c, 0, predicted, decide);
  if (predicted[flag] == 3) {
    gather_rest(c, mine, chunk, got);
    root_computed(c, 0, predicted, decide);
  }
  if (predicted[flag] == 2) {
    std::memcpy(static_cast<void*>(&m), predicted.data() + flag + 1, sizeof(double) * ModelParams::kFields);
    remember_machine_model(c, l, m);
  } else if (predicted[flag] == 1) {
    m = machine_model_remembered(c, l);
    root_computed(c, 0, predicted, count);
  }
  for (size_t i = 0; i < n; ++i)  // (no counts hook: built and predicted later, no work figure)
    work[i] = predicted[i] >= 0 ? predicted[n + i] : std::numeric_limits<double>::infinity();
  predicted.resize(n);
  t.count = MPI_Wtime() - t0;
  return predicted;
}

// The race (option race = N > 0): where the model's error is larger than the gap between
// the candidates it ranks first (tens of percent on a loaded network, a few percent apart),
// only a measurement tells them apart, as self-tuning collectives time their algorithms at
// run time (Faraj, Yuan and Lowenthal, "STAR-MPI: self tuned adaptive routines for MPI
// collective operations", ICS 2006); here bounded to the close candidates and done once,
// at setup. `plans[j]` is timed over `reps` exchanges in up to three interleaved rounds
// (each round in another order, after a barrier; one exchange each first, unmeasured: a
// first execution may finish lazy set-up), without pack and unpack (start() and wait()
// without arguments: the same for every backend). A round's time is the slowest rank's (one
// allreduce per round), so every rank holds the same medians and decides the same.
// Collective.
std::vector<double> race_medians(MPI_Comm c, const std::vector<Plan*>& plans, int64_t reps) {
  const size_t n = plans.size();
  for (Plan* p : plans) p->start(), p->wait();
  const int64_t rounds = std::min<int64_t>(reps, 3), per = (reps + rounds - 1) / rounds;
  std::vector<std::vector<double>> t(n);
  std::vector<double> mine(n), slowest(n);
  for (int64_t r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const size_t j = (k + static_cast<size_t>(r)) % n;
      SPC_MPI(MPI_Barrier(c));
      const double t0 = MPI_Wtime();
      for (int64_t i = 0; i < per; ++i) plans[j]->start(), plans[j]->wait();
      mine[j] = (MPI_Wtime() - t0) / static_cast<double>(per);
    }
    SPC_MPI(MPI_Allreduce(mine.data(), slowest.data(), static_cast<int>(n), MPI_DOUBLE, MPI_MAX, c));
    for (size_t j = 0; j < n; ++j) t[j].push_back(slowest[j]);
  }
  std::vector<double> med(n);
  for (size_t j = 0; j < n; ++j) {
    std::sort(t[j].begin(), t[j].end());
    const size_t m = t[j].size();
    med[j] = m % 2 ? t[j][m / 2] : 0.5 * (t[j][m / 2 - 1] + t[j][m / 2]);
  }
  return med;
}

// auto's choice among the other backends, in its steps: candidates ordered, predicted,
// the unpredicted built, the cheapest taken, the close ones raced, the choice built.
// Every step is collective in the same order on every rank, and every rank decides alike.
class Choice {
 public:
  // `iterations`: the expected exchanges the costs weigh (0 when tuning measures instead).
  Choice(const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o, int64_t iterations)
      : p_(p), l_(l), c_(c), o_(o), iterations_(iterations), order_(candidate_order()),
        predicted_(order_.size(), -1.0), work_(order_.size(), std::numeric_limits<double>::infinity()),
        setup_(order_.size(), 0.0), cost_(order_.size()) {}

  // Predictions from counts, on rank 0, for the candidates with a counts hook.
  void predict() {
    if (iterations_ == 0) {
      predicted_ = predict_all(p_, l_, c_, o_, order_, [this](const std::string& n) { return options_of(n); }, m_,
                               work_, times_);
    } else {
      const double tm = MPI_Wtime();
      m_ = ModelParams::resolve(c_, l_, o_.backend.get("model", ""));
      times_.model = MPI_Wtime() - tm;
    }
  }
  // The others are built and predicted from their real counts (all of them with
  // iterations > 0, where measured setup times enter the cost).
  void build_unpredicted() {
    for (size_t i = 0; i < order_.size(); ++i) {
      if (predicted_[i] >= 0) continue;
      auto plan = make_plan(order_[i], p_, l_, c_, options_of(order_[i]));
      setup_[i] = allreduce_max(c_, plan->setup_stats().time("setup.backend"));
      predicted_[i] = predict_iteration(*plan, m_, c_);
      built_[order_[i]] = std::move(plan);
    }
  }
  void choose_by_cost() {
    best_cost_ = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < order_.size(); ++i) {
      cost_[i] = iterations_ > 0 ? setup_[i] + static_cast<double>(iterations_) * predicted_[i] : predicted_[i];
      // Strictly cheaper, or as cheap with less work in all (a candidate built here has
      // no work figure: infinite); else the earlier in setup order (combining that found
      // no groups ties with p2p in both and loses). The inputs are the same on every
      // rank, so every rank decides the same.
      const bool tie = cost_[i] <= best_cost_ * (1 + 1e-9) && cost_[i] >= best_cost_ * (1 - 1e-9);
      if (cost_[i] < best_cost_ * (1 - 1e-9) || (tie && work_[i] < work_[best_] * (1 - 1e-9)))
        best_cost_ = cost_[i], best_ = i;
    }
  }
  // The race among the close candidates (race_medians): the model's choice first, then
  // the others predicted within race_within percent of it, cheapest first, at most
  // race_among in all; each built (make_plan: collective, agreed) and timed, and the
  // fastest measured taken (with iterations > 0: the least setup + iterations x
  // measured; a tie keeps the earlier). Every rank decides alike.
  void race() {
    const int64_t reps = o_.backend.get_int("race", 0);
    if (reps <= 0) return;
    const std::vector<size_t> close = close_candidates();
    if (close.size() <= 1) return;
    std::vector<Plan*> plans;
    for (size_t i : close) {
      if (!built_.count(order_[i])) {
        built_[order_[i]] = make_plan(order_[i], p_, l_, c_, options_of(order_[i]));
        setup_[i] = allreduce_max(c_, built_[order_[i]]->setup_stats().time("setup.backend"));
      }
      plans.push_back(built_[order_[i]].get());
    }
    const std::vector<double> med = race_medians(c_, plans, reps);
    for (Plan* q : plans) q->exec_timers().clear();  // the caller's timers start at its first exchange
    double won = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < close.size(); ++j) {
      const size_t i = close[j];
      raced_[order_[i]] = med[j];
      const double measured = iterations_ > 0 ? setup_[i] + static_cast<double>(iterations_) * med[j] : med[j];
      if (measured < won * (1 - 1e-9)) won = measured, best_ = i;
    }
  }
  // The chosen plan, if not built yet, without make_plan's collectives: auto's own
  // make_plan checked the pattern and the options they derive from, and its agreement
  // catches a failure of the factory (so no collective may follow: the setup time
  // recorded is this rank's).
  std::unique_ptr<Plan> take() {
    const std::string& name = order_[best_];
    std::unique_ptr<Plan> chosen =
        built_.count(name) ? std::move(built_[name]) : detail::make_plan_inside(name, p_, l_, c_, options_of(name));
    if (!built_.count(name)) setup_[best_] = chosen->setup_stats().time("setup.backend");
    return chosen;
  }

  // What the choice weighed, for the chosen plan's setup statistics.
  const std::vector<std::string>& order() const { return order_; }
  size_t best() const { return best_; }
  double predicted(size_t i) const { return predicted_[i]; }
  double setup(size_t i) const { return setup_[i]; }
  bool built(size_t i) const { return built_.count(order_[i]) > 0; }
  const std::map<std::string, double>& raced() const { return raced_; }
  const Times& times() const { return times_; }
  // The model's ranking: its choice first, then the others by cost (a tie keeps setup order).
  std::vector<size_t> ranked() const {
    std::vector<size_t> r(order_.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = i;
    std::stable_sort(r.begin(), r.end(), [&](size_t a, size_t b) {
      return a == best_ ? b != best_ : b == best_ ? false : cost_[a] < cost_[b];
    });
    return r;
  }
  PlanOptions options_of(const std::string& name) const {
    PlanOptions co = o_;  // each candidate gets the options it declares (k for combined, ...)
    co.backend = o_.backend.only(backend_option_specs(name));
    return co;
  }

 private:
  // Candidates in order of setup complexity (each backend's BackendHooks::setup_rank,
  // then its name): a tie goes to the simpler one, so the choice is deterministic
  // (with iterations > 0 it also weighs measured setup times, which vary
  // from run to run).
  static std::vector<std::string> candidate_order() {
    std::vector<std::string> order;
    for (const auto& n : backend_names())
      if (!backend_hooks(n).chooses_among_others) order.push_back(n);
    std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
      return backend_hooks(a).setup_rank < backend_hooks(b).setup_rank;
    });
    return order;
  }
  std::vector<size_t> close_candidates() const {
    const double within = 1 + static_cast<double>(o_.backend.get_int("race_within", 10)) / 100;
    std::vector<size_t> close = {best_};
    std::vector<size_t> by_cost(order_.size());
    for (size_t i = 0; i < order_.size(); ++i) by_cost[i] = i;
    std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) { return cost_[a] < cost_[b]; });
    const auto among = static_cast<size_t>(o_.backend.get_int("race_among", 3));
    for (size_t i : by_cost)
      if (i != best_ && close.size() < among && cost_[i] <= best_cost_ * within) close.push_back(i);
    return close;
  }

  const Pattern& p_;
  const Locality& l_;
  MPI_Comm c_;
  const PlanOptions& o_;
  const int64_t iterations_;
  const std::vector<std::string> order_;
  ModelParams m_;
  Times times_;
  std::vector<double> predicted_;
  // Each candidate's total work over the ranks: of two predicted alike, the one that
  // does less in all (less contention for the cores and links it shares) wins.
  std::vector<double> work_;
  std::map<std::string, std::unique_ptr<Plan>> built_;
  std::vector<double> setup_, cost_;
  size_t best_ = 0;
  double best_cost_ = std::numeric_limits<double>::infinity();
  std::map<std::string, double> raced_;
};

// auto's options (it has no counts hook: what it runs depends on measured costs).
BackendHooks auto_hooks() {
  BackendHooks h;
  h.chooses_among_others = true;
  using K = OptionSpec::Kind;
  // The model file's path may be node-local: ranks agree on the parameters read, not the path.
  OptionSpec model{"model", K::text, "",
                   "performance model: a parameter file, builtin, or empty: $SPARSECOMM_MODEL, else measured in "
                   "the first three launches and cached (machine_model)"};
  model.per_rank = true;
  h.options = {model,
               {"iterations", K::integer, "0",
                "exchanges the caller expects: > 0 tunes by measuring (tune) if that many repay it, else "
                "chooses by setup + iterations x execution cost (building every candidate to measure its "
                "setup); 0 by execution cost alone (building only the choice)",
                0},
               {"tune", K::text, "",
                "model: the model's choice; measure: the first exchanges rotate among the model's top "
                "candidates and p2p, timed, and every rank keeps the fastest (not when iterations > 0 is "
                "fewer than 10 x the measuring exchanges); empty: measure if iterations > 0 repays it, else model"},
               {"candidates", K::integer, "3", "the model's top candidates that tune=measure times (p2p added)", 1,
                16},
               {"samples", K::integer, "5", "timed exchanges per candidate with tune=measure (after one warm-up)",
                1, 1000},
               {"race", K::integer, "0",
                "exchanges timed per close candidate: > 0 builds the candidates predicted within race_within "
                "percent of the cheapest and takes the fastest measured, 0 trusts the model",
                0},
               {"race_within", K::integer, "10", "percent above the cheapest prediction that still races", 0,
                1000, false, "race"},
               {"race_among", K::integer, "3", "most candidates in a race (the model's choice included)", 2, 16,
                false, "race"},
               {"gather_words", K::integer, "96",
                "words (8 bytes) per rank in the collective that brings rank 0 every rank's neighbors and "
                "model: a rank with more sends the rest in a second one",
                2}};
  return h;
}

// tune=measure: the model's top candidates, p2p added as the reference, tuned in place by
// the caller's exchanges (tune.cpp). The predictions are kept in the plan's setup
// statistics as for a model choice.
std::unique_ptr<Plan> tuned_plan(const Choice& ch, const detail::TuneSettings& ts, const Pattern& p, const Locality& l,
                                 MPI_Comm c, const PlanOptions& o, double t0) {
  std::vector<detail::TuneCandidate> list;
  bool p2p = false;
  for (size_t i : ch.ranked()) {
    if (static_cast<int64_t>(list.size()) >= ts.candidates) break;
    list.push_back({ch.order()[i], ch.options_of(ch.order()[i])});
    p2p = p2p || ch.order()[i] == "p2p";
  }
  if (!p2p) list.push_back({"p2p", ch.options_of("p2p")});
  std::map<std::string, double> notes;
  for (size_t i = 0; i < ch.order().size(); ++i) notes["auto.predict." + ch.order()[i]] = ch.predicted(i);
  notes["auto.tune.model." + ch.order()[ch.best()]] = ch.predicted(ch.best());  // the model's own choice
  notes["auto.choose"] = MPI_Wtime() - t0;
  notes["auto.choose.model"] = ch.times().model;
  notes["auto.choose.gather"] = ch.times().gather;
  notes["auto.choose.count"] = ch.times().count;
  return detail::make_tuned_plan(std::move(list), p, l, c, o, ts.samples, notes);
}

}  // namespace

namespace detail {
void register_auto() {
  register_backend(
      "auto", "model-based choice among the other backends (see sparsecomm_calibrate)",
      [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) -> std::unique_ptr<Plan> {
        const double t0 = MPI_Wtime();
        const detail::TuneSettings ts = detail::tune_settings(o.backend);
        if (ts.measure && o.backend.get_int("race", 0) > 0)
          throw InputError("auto: race and tune=measure both measure the candidates; give one of them");
        Choice ch(p, l, c, o, ts.measure ? 0 : ts.iterations);
        ch.predict();
        ch.build_unpredicted();
        ch.choose_by_cost();
        if (ts.measure) return tuned_plan(ch, ts, p, l, c, o, t0);
        ch.race();
        std::unique_ptr<Plan> chosen = ch.take();
        if (ts.skipped) {  // (a tune=measure the expected exchanges would not repay)
          chosen->setup_stats_mut().add_time("auto.tune.skipped", static_cast<double>(ts.iterations));
          chosen->setup_stats_mut().add_time("auto.tune.threshold", static_cast<double>(ts.threshold));
        }
        // (setup_stats_mut: register_auto is a friend of Plan.)
        const auto& order = ch.order();
        const size_t best = ch.best();
        for (size_t i = 0; i < order.size(); ++i) {
          chosen->setup_stats_mut().add_time("auto.predict." + order[i], ch.predicted(i));
          if (ch.built(i) || i == best) chosen->setup_stats_mut().add_time("auto.setup." + order[i], ch.setup(i));
        }
        for (const auto& [b, t] : ch.raced()) chosen->setup_stats_mut().add_time("auto.race." + b, t);
        chosen->setup_stats_mut().add_time("auto.choose", MPI_Wtime() - t0 - ch.setup(best));
        chosen->setup_stats_mut().add_time("auto.choose.model", ch.times().model);
        chosen->setup_stats_mut().add_time("auto.choose.gather", ch.times().gather);
        chosen->setup_stats_mut().add_time("auto.choose.count", ch.times().count);
        // make_plan adds auto's whole time to "setup.backend": the chosen backend's own
        // share, in it already, is taken out so the timer is auto's setup, counted once.
        chosen->setup_stats_mut().add_time("setup.backend", -chosen->setup_stats().time("setup.backend"));
        return chosen;
      },
      auto_hooks());
}
}  // namespace detail

}  // namespace sparsecomm

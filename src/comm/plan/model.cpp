#include "sparsecomm/comm/plan/model.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <sys/stat.h>

#include "comm/plan/auto_predict.hpp"
#include "core/process_default.hpp"

namespace sparsecomm {

ModelSettings ModelSettings::defaults() { return detail::process_default<ModelSettings>(); }
void ModelSettings::set_defaults(const ModelSettings& s) { detail::set_process_default(s); }

ModelParams ModelParams::load(const std::string& path_in) {
  const std::string path = path_in.empty() ? ModelSettings::defaults().source : path_in;
  ModelParams m;
  if (path.empty() || path == "builtin") return m;
  // A file that was named but cannot be read is the caller's mistake (a mistyped
  // $SPARSECOMM_MODEL), not a request for the defaults: they would silently steer auto.
  const std::string what =
      " (a file written by sparsecomm calibrate; \"builtin\" for the documented defaults; nothing, to measure this "
      "machine's)";
  // A directory opens as a stream that reads nothing (and so would give the defaults)
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError("model: the parameter file '" + path + "' is a directory" + what);
  std::ifstream in(path);
  if (!in) throw InputError("model: cannot read the parameter file '" + path + "'" + what);
  std::map<std::string, double*> keys = {{"alpha_intra", &m.alpha_intra}, {"beta_intra", &m.beta_intra},
                                         {"alpha_inter", &m.alpha_inter}, {"beta_inter", &m.beta_inter},
                                         {"region_rate", &m.region_rate}, {"stage_intra", &m.stage_intra},
                                         {"stage_inter", &m.stage_inter}, {"stage", nullptr},
                                         {"copy", &m.copy}, {"msg_shm", &m.msg_shm}, {"byte_shm", &m.byte_shm},
                                         {"stage_shm", &m.stage_shm},
                                         {"msg_intra", &m.msg_intra}, {"byte_intra", &m.byte_intra},
                                         {"msg_inter", &m.msg_inter}, {"byte_inter", &m.byte_inter}};
  std::map<std::string, bool> seen;
  std::string line;
  for (int ln = 1; std::getline(in, line); ++ln) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string k;
    double v;
    if (!(ss >> k >> v) || !keys.count(k) || !(v >= 0))
      throw InputError(path + ":" + std::to_string(ln) + ": expected '<key> <non-negative number>' with a key among "
                       "alpha_intra beta_intra alpha_inter beta_inter msg_intra byte_intra msg_inter byte_inter "
                       "region_rate stage_intra stage_inter copy msg_shm byte_shm stage_shm (or stage for both)");
    if (keys[k]) *keys[k] = v;
    else m.stage_intra = m.stage_inter = v;  // "stage": one cost for both classes
    seen[k] = true;
  }
  if (in.bad()) throw InputError("model: reading the parameter file '" + path + "' failed" + what);
  // A file with no parameter at all (empty, or comments only) is not a model.
  if (seen.empty()) throw InputError("model: the parameter file '" + path + "' holds no parameters" + what);
  // Files of earlier versions have no loaded costs: the ping-pong ones stand in.
  if (!seen["msg_intra"]) m.msg_intra = m.alpha_intra;
  if (!seen["byte_intra"]) m.byte_intra = m.beta_intra;
  if (!seen["msg_inter"]) m.msg_inter = m.alpha_inter;
  if (!seen["byte_inter"]) m.byte_inter = m.beta_inter;
  if (!seen["stage_shm"]) m.stage_shm = m.stage_intra;  // as before window stages were priced apart
  return m;
}

void ModelParams::save(const std::string& path, const std::string& first_line) const {
  std::ofstream out(path);
  if (!out) throw InputError("cannot write model parameters to " + path);
  out.precision(17);  // round trip exact: a cached model reads back what was measured
  if (!first_line.empty()) out << "# " << first_line << "\n";
  out << "# sparsecomm performance model (seconds, bytes); written by sparsecomm_calibrate\n"
      << "alpha_intra " << alpha_intra << "\nbeta_intra " << beta_intra << "\nalpha_inter " << alpha_inter
      << "\nbeta_inter " << beta_inter << "\nmsg_intra " << msg_intra << "\nbyte_intra " << byte_intra
      << "\nmsg_inter " << msg_inter << "\nbyte_inter " << byte_inter << "\nregion_rate " << region_rate
      << "\nstage_intra " << stage_intra << "\nstage_inter " << stage_inter << "\ncopy " << copy
      << "\nmsg_shm " << msg_shm << "\nbyte_shm " << byte_shm << "\nstage_shm " << stage_shm << "\n";
}

std::string ModelParams::describe() const {
  std::ostringstream os;
  os.precision(3);
  auto gbs = [](double per_byte) { return 1e-9 / std::max(per_byte, 1e-300); };
  os << "ping-pong intra " << alpha_intra * 1e6 << " us + " << gbs(beta_intra) << " GB/s, inter " << alpha_inter * 1e6
     << " us + " << gbs(beta_inter) << " GB/s; all ranks at once: intra " << msg_intra * 1e6 << " us/msg + "
     << gbs(byte_intra) << " GB/s, inter " << msg_inter * 1e6 << " us/msg + " << gbs(byte_inter)
     << " GB/s; region injection " << region_rate * 1e-9 << " GB/s; stage " << stage_intra * 1e6 << " us intra, "
     << stage_inter * 1e6 << " us inter; copy " << gbs(copy) << " GB/s; shared window " << msg_shm * 1e6
     << " us/segment + " << gbs(byte_shm) << " GB/s, stage " << stage_shm * 1e6 << " us";
  return os.str();
}

double stage_cost(const ModelParams& m, int64_t stages, int64_t inter_stages, int64_t message_stages) {
  if (stages <= 0) return 0;
  const int64_t inter = std::clamp<int64_t>(inter_stages, 0, stages);
  const int64_t msg = message_stages < 0 ? stages : std::clamp<int64_t>(message_stages, inter, stages);
  int64_t n_inter = inter, n_intra = msg - inter, n_shm = stages - msg;
  // The first stage is free: an inter-region one if there is one, else one with messages,
  // else a window one (with no window stages, as before they were priced apart).
  if (n_inter > 0) --n_inter;
  else if (n_intra > 0) --n_intra;
  else --n_shm;
  return m.stage_inter * static_cast<double>(n_inter) + m.stage_intra * static_cast<double>(n_intra) +
         m.stage_shm * static_cast<double>(n_shm);
}

int64_t inter_steps(const Stats& counts) {
  int64_t n = 0;
  for (const auto& [step, k] : counts.steps())
    if (k.sent_inter.msgs + k.recv_inter.msgs > 0) ++n;
  return n;
}

namespace {
MessageCounts minus(MessageCounts a, const MessageCounts& b) {
  a.msgs -= b.msgs, a.bytes -= b.bytes;
  return a;
}
}  // namespace

CommCounters message_part(const CommCounters& k, const Stats& window, const std::string& step) {
  const auto ws = window.steps().find(step);
  if (ws == window.steps().end()) return k;
  const CommCounters& x = ws->second;
  CommCounters mpi;
  mpi.sent_intra = minus(k.sent_intra, x.sent_intra), mpi.sent_inter = minus(k.sent_inter, x.sent_inter);
  mpi.recv_intra = minus(k.recv_intra, x.recv_intra), mpi.recv_inter = minus(k.recv_inter, x.recv_inter);
  return mpi;
}

int64_t message_steps(const Stats& counts, const Stats& window) {
  int64_t n = 0;
  for (const auto& [step, k] : counts.steps()) {
    const CommCounters x = message_part(k, window, step);
    if (x.sent_intra.msgs + x.recv_intra.msgs + x.sent_inter.msgs + x.recv_inter.msgs > 0) ++n;
  }
  return n;
}

namespace {
// Bytes this rank sends beyond its own send buffer: copied between stages.
double staged_bytes(const Plan& plan) {
  const auto& tot = plan.iteration_counts().total();
  const double own = static_cast<double>(plan.pattern().send().size()) * plan.options().width *
                     plan.options().value_bytes;
  return std::max(0.0, static_cast<double>(tot.sent_intra.bytes + tot.sent_inter.bytes) - own);
}
}  // namespace

double copied_bytes(const Plan& plan, bool inter_on_node) {
  const double eb = static_cast<double>(plan.options().width) * plan.options().value_bytes;
  const auto& pat = plan.pattern();
  const Stats& w = plan.window_counts();
  const auto& wt = w.total();
  // No unpack where the receive buffer is the ghost array (wait_in_place, as DistSpmv does).
  const double unpack = plan.receives_in_ghost_order() ? 0 : static_cast<double>(pat.recv().size());
  double c = eb * (static_cast<double>(pat.send().size()) + unpack) + staged_bytes(plan) +
             static_cast<double>(wt.recv_intra.bytes + wt.recv_inter.bytes);
  constexpr double kEager = 4096;  // Open MPI 4.1 btl_vader_eager_limit
  auto mpi = [&](const MessageCounts& k, bool sender) {
    const double msgs = static_cast<double>(k.msgs), bytes = static_cast<double>(k.bytes);
    if (msgs <= 0) return 0.0;
    return bytes / msgs <= kEager || !sender ? bytes : 0.0;  // eager: both copy; CMA: the receiver reads once
  };
  for (const auto& [step, k] : plan.iteration_counts().steps()) {
    const CommCounters x = message_part(k, w, step);
    c += mpi(x.sent_intra, true) + mpi(x.recv_intra, false);
    if (inter_on_node) c += mpi(x.sent_inter, true) + mpi(x.recv_inter, false);
  }
  return c;
}

double one_copy_bytes(const Plan& plan) {
  return static_cast<double>(plan.pattern().recv().size()) * plan.options().width * plan.options().value_bytes;
}

RankLoad rank_load(const Plan& plan) {
  RankLoad l;
  for (const auto& [step, k] : plan.iteration_counts().steps()) {
    l.msgs_intra += static_cast<double>(std::max(k.sent_intra.msgs, k.recv_intra.msgs));
    l.msgs_inter += static_cast<double>(std::max(k.sent_inter.msgs, k.recv_inter.msgs));
    l.bytes_intra += static_cast<double>(std::max(k.sent_intra.bytes, k.recv_intra.bytes));
    l.bytes_inter += static_cast<double>(std::max(k.sent_inter.bytes, k.recv_inter.bytes));
  }
  l.copy_bytes = staged_bytes(plan);
  const auto& wt = plan.window_counts().total();
  l.window_reads = static_cast<double>(wt.recv_intra.msgs + wt.recv_inter.msgs);
  l.window_bytes = static_cast<double>(wt.recv_intra.bytes + wt.recv_inter.bytes);
  return l;
}

double step_cost(const ModelParams& m, const CommCounters& k) {
  auto cost = [&](const MessageCounts& intra, const MessageCounts& inter) {
    return m.msg_intra * static_cast<double>(intra.msgs) + m.byte_intra * static_cast<double>(intra.bytes) +
           m.msg_inter * static_cast<double>(inter.msgs) + m.byte_inter * static_cast<double>(inter.bytes);
  };
  return std::max(cost(k.sent_intra, k.sent_inter), cost(k.recv_intra, k.recv_inter));
}

double window_cost(const ModelParams& m, const CommCounters& w) {
  return m.msg_shm * static_cast<double>(w.recv_intra.msgs + w.recv_inter.msgs) +
         m.byte_shm * static_cast<double>(w.recv_intra.bytes + w.recv_inter.bytes);
}

namespace {
// Whether a step's MPI part (message_part) has inter-region (else intra-region) messages.
bool has_messages(const CommCounters& mpi, bool inter) {
  return inter ? mpi.sent_inter.msgs + mpi.recv_inter.msgs > 0 : mpi.sent_intra.msgs + mpi.recv_intra.msgs > 0;
}
}  // namespace

std::map<std::string, bool> takes_part(const Stats& c, const Stats& w, bool inter) {
  std::map<std::string, bool> part;
  for (const auto& [step, k] : c.steps()) part[step] = has_messages(message_part(k, w, step), inter);
  return part;
}

RankTerms rank_terms(const Stats& c, const Stats& w, double copied, int stages, const ModelParams& m,
                     const std::map<std::string, double>& share) {
  RankTerms r;
  r.copy = m.copy * copied;
  for (const auto& [step, k] : c.steps()) {
    const CommCounters mpi = message_part(k, w, step);  // windows carry no message
    StepTerms& t = r.steps[step];
    ModelParams ms = m;
    if (const auto f = share.find(step); f != share.end()) ms.msg_inter = m.msg_inter * f->second;
    t.busy = step_cost(ms, mpi);
    t.inter = has_messages(mpi, true), t.intra = has_messages(mpi, false);
    if (const auto ws = w.steps().find(step); ws != w.steps().end()) t.busy += window_cost(m, ws->second);
    // Window transfers stay in the node's memory: they inject nothing into the network.
    t.injected = static_cast<double>(mpi.sent_inter.bytes);
    t.received = static_cast<double>(mpi.recv_inter.bytes);
  }
  r.stages = stages;
  r.inter_steps = inter_steps(c);
  r.message_steps = message_steps(c, w);
  return r;
}

ModelParams for_layout(const ModelParams& m, const std::vector<int>& region, const std::vector<int>& node) {
  if (node.size() != region.size() || region.empty()) return m;
  std::map<int, int> node_of_region, region_of_node;
  for (size_t r = 0; r < region.size(); ++r) {
    const auto a = node_of_region.emplace(region[r], node[r]), b = region_of_node.emplace(node[r], region[r]);
    if (a.first->second != node[r] || b.first->second != region[r]) return m;  // a region is not one whole node
  }
  if (node_of_region.size() < 2) return m;  // one region: no inter-region transfers
  ModelParams l = m;
  l.byte_inter = std::min(m.byte_inter, 1.0 / std::max(m.region_rate, 1.0));
  return l;
}

namespace {
// Steps are told apart by name through a fixed number of slots, so that the collective
// prediction can reduce them without first agreeing on the names: a name's FNV-1a hash,
// made odd (never 0, the "no step here" of a reduction), is its tag, and the tag modulo a
// prime its slot (FNV's low bits alone collide: "direct" and "local" modulo 64). Two names
// in one slot anywhere fold every step into one (then the prediction is the busiest rank's
// whole exchange, as if the plan had one step). The built-in names do not collide
// (Model.StepsAddTheirOwnBusiestRanks).
constexpr size_t kSlots = 67;
uint64_t step_tag(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  return h | 1;
}
size_t step_slot(uint64_t tag) { return static_cast<size_t>(tag % kSlots); }

// What predict_from_terms reduces over ranks: per slot the busiest rank and the busiest
// region's link time (its injection or its reception, whichever is longer: a link carries
// each direction at its rate, and a region that many others send to is limited by its
// incoming side, the hub of a partition); the same folded into one step; the largest copy
// cost; the stages (most of each kind on one rank).
// The shares of the ranks taking part in inter-region and in intra-region messages, per
// slot (and folded: ranks with such messages in any step), add a step's latency per class.
struct StepReduction {
  double copy = 0, busy_all = 0, inj_all = 0;
  std::vector<double> busy = std::vector<double>(kSlots, 0.0), inj = std::vector<double>(kSlots, 0.0);
  std::vector<double> share = std::vector<double>(kSlots + 1, 0.0), ishare = std::vector<double>(kSlots + 1, 0.0);
  bool fold = false;
  int64_t stages = 0, inter = 0, msg = 0;
  double latency(const ModelParams& m, size_t k) const { return m.stage_inter * share[k] + m.stage_intra * ishare[k]; }
  double total(const ModelParams& m) const {
    double t = copy;
    if (fold) t += std::max(busy_all, inj_all) + latency(m, kSlots);
    else
      for (size_t k = 0; k < kSlots; ++k) t += std::max(busy[k], inj[k]) + latency(m, k);
    return t + stage_cost(m, stages, inter, msg);
  }
};

// One rank's steps by slot, what both predictions reduce: per slot its tag (0: no step),
// busy time, injected and received bytes, with the rank's totals at [kSlots] (its steps
// folded into one), and whether two of its own names share a slot.
struct RankSlots {
  std::vector<uint64_t> tag = std::vector<uint64_t>(kSlots, 0);
  std::vector<double> busy = std::vector<double>(kSlots + 1, 0.0), inj = std::vector<double>(kSlots + 1, 0.0),
                      rec = std::vector<double>(kSlots + 1, 0.0), part = std::vector<double>(kSlots + 1, 0.0),
                      ipart = std::vector<double>(kSlots + 1, 0.0);
  bool collides = false;
};
RankSlots slots_of(const RankTerms& t) {
  RankSlots s;
  for (const auto& [name, st] : t.steps) {
    const uint64_t tag = step_tag(name);
    const size_t k = step_slot(tag);
    if (s.tag[k] != 0 && s.tag[k] != tag) s.collides = true;
    s.tag[k] = tag;
    s.busy[k] += st.busy, s.busy[kSlots] += st.busy;
    s.inj[k] += st.injected, s.inj[kSlots] += st.injected;
    s.rec[k] += st.received, s.rec[kSlots] += st.received;
    if (st.inter) s.part[k] = s.part[kSlots] = 1;
    if (st.intra) s.ipart[k] = s.ipart[kSlots] = 1;
  }
  return s;
}
}  // namespace

double total_work(const std::vector<RankTerms>& ranks) {
  double w = 0;
  for (const RankTerms& t : ranks) {
    w += t.copy;
    for (const auto& [name, st] : t.steps) w += st.busy;
  }
  return w;
}

double predict_from_terms(const std::vector<RankTerms>& ranks, const std::vector<int>& region, const ModelParams& m) {
  StepReduction red;
  std::vector<uint64_t> tag_of(kSlots, 0);        // the tag seen in each slot
  std::map<int, std::vector<double>> region_inj, region_rec;  // region -> per slot, folded at [kSlots]
  std::vector<double> part(kSlots + 1, 0.0), ipart(kSlots + 1, 0.0);  // ranks taking part (inter, intra)
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankTerms& t = ranks[r];
    red.copy = std::max(red.copy, t.copy);
    red.stages = std::max<int64_t>(red.stages, t.stages);
    red.inter = std::max(red.inter, t.inter_steps);
    red.msg = std::max(red.msg, t.message_steps);
    const RankSlots s = slots_of(t);
    red.fold = red.fold || s.collides;
    for (size_t k = 0; k < kSlots; ++k) {
      if (s.tag[k] != 0 && tag_of[k] != 0 && tag_of[k] != s.tag[k]) red.fold = true;
      if (s.tag[k] != 0) tag_of[k] = s.tag[k];
      red.busy[k] = std::max(red.busy[k], s.busy[k]);
    }
    red.busy_all = std::max(red.busy_all, s.busy[kSlots]);
    for (size_t k = 0; k <= kSlots; ++k) part[k] += s.part[k], ipart[k] += s.ipart[k];
    std::vector<double>& inj = region_inj[region[r]];
    std::vector<double>& rec = region_rec[region[r]];
    inj.resize(kSlots + 1, 0.0), rec.resize(kSlots + 1, 0.0);
    for (size_t k = 0; k <= kSlots; ++k) inj[k] += s.inj[k], rec[k] += s.rec[k];
  }
  const double rate = std::max(m.region_rate, 1.0);
  for (const auto* per_region : {&region_inj, &region_rec})
    for (const auto& [g, bytes] : *per_region) {
      for (size_t k = 0; k < kSlots; ++k) red.inj[k] = std::max(red.inj[k], bytes[k] / rate);
      red.inj_all = std::max(red.inj_all, bytes[kSlots] / rate);
    }
  const double n = static_cast<double>(std::max<size_t>(ranks.size(), 1));
  for (size_t k = 0; k <= kSlots; ++k) red.share[k] = part[k] / n, red.ishare[k] = ipart[k] / n;
  return red.total(m);
}

std::map<std::string, double> step_shares(const std::vector<std::map<std::string, bool>>& parts) {
  std::map<std::string, double> share;
  for (const auto& p : parts)
    for (const auto& [step, in] : p) share[step] += in ? 1.0 : 0.0;
  for (auto& [step, v] : share) v /= static_cast<double>(std::max<size_t>(parts.size(), 1));
  return share;
}

namespace {

// The body of both collective predictions below: this rank's terms, reduced over ranks as
// predict_from_terms() does over a vector of them, in four reductions: the ranks taking
// part in each step's inter-region and intra-region messages (sum), the slots' tags and the stages
// (maximum), the injected and received bytes within each region (sum), the times (maximum).
double predict_counts(const Stats& c, const Stats& w, double copied, int stages, const Locality& loc,
                      const ModelParams& model, MPI_Comm comm) {
  std::vector<int> node;  // (SMPI: nodes unknown, as auto has them)
#ifndef SPARSECOMM_SMPI
  node = node_labels(comm);
#endif
  const ModelParams m = for_layout(model, loc.regions(), node);
  // The ranks taking part in each step's inter-region messages, then in its intra-region
  // ones (per slot, folded at [kSlots]): first, since the inter share scales the
  // per-message cost of this rank's terms. This rank's indicators are its terms' flags, as
  // predict_from_terms reads them (slots_of; the flags do not depend on the share).
  const size_t ip = kSlots + 1;  // where the intra-region counts start
  const RankSlots mine = slots_of(rank_terms(c, w, copied, stages, m));
  std::vector<double> part = mine.part;
  part.insert(part.end(), mine.ipart.begin(), mine.ipart.end());
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, part.data(), static_cast<int>(part.size()), MPI_DOUBLE, MPI_SUM, comm));
  const double nranks = static_cast<double>(comm_size(comm));
  std::map<std::string, double> share;
  for (const auto& kv : c.steps()) share[kv.first] = part[step_slot(step_tag(kv.first))] / nranks;
  const RankTerms t = rank_terms(c, w, copied, stages, m, share);
  // [tag per slot, ~tag per slot (the smallest tag, complemented), two names of mine in
  // one slot, stages, inter, msg]
  const RankSlots s = slots_of(t);
  std::vector<uint64_t> tags(2 * kSlots + 4, 0);
  for (size_t k = 0; k < kSlots; ++k)
    if (s.tag[k] != 0) tags[k] = s.tag[k], tags[kSlots + k] = ~s.tag[k];
  tags[2 * kSlots] = s.collides ? 1 : 0;
  // [busy per slot, link time per slot, busy folded, link folded, copy]; the injected and
  // received bytes first (summed over the region: [injected..., received...]), then the
  // longer direction turned into time.
  std::vector<double> times(2 * kSlots + 3, 0.0), inj = s.inj;
  inj.insert(inj.end(), s.rec.begin(), s.rec.end());
  std::copy(s.busy.begin(), s.busy.begin() + kSlots, times.begin());
  times[2 * kSlots] = s.busy[kSlots];
  tags[2 * kSlots + 1] = static_cast<uint64_t>(t.stages);
  tags[2 * kSlots + 2] = static_cast<uint64_t>(t.inter_steps);
  tags[2 * kSlots + 3] = static_cast<uint64_t>(t.message_steps);
  times[2 * kSlots + 2] = t.copy;
  allreduce_max_u64(comm, tags.data(), static_cast<int>(tags.size()));  // (0 must lose to every tag)
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, inj.data(), static_cast<int>(inj.size()), MPI_DOUBLE, MPI_SUM, loc.local_comm()));
  const double rate = std::max(m.region_rate, 1.0);
  const size_t rec = kSlots + 1;  // where the received bytes start in inj
  for (size_t k = 0; k < kSlots; ++k) times[kSlots + k] = std::max(inj[k], inj[rec + k]) / rate;
  times[2 * kSlots + 1] = std::max(inj[kSlots], inj[rec + kSlots]) / rate;
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, times.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX, comm));
  StepReduction red;
  // A slot whose largest tag is not its smallest holds two names (on different ranks).
  red.fold = tags[2 * kSlots] != 0;
  for (size_t k = 0; k < kSlots; ++k) red.fold = red.fold || (tags[k] != 0 && tags[k] != ~tags[kSlots + k]);
  red.busy.assign(times.begin(), times.begin() + kSlots);
  red.inj.assign(times.begin() + kSlots, times.begin() + 2 * kSlots);
  red.busy_all = times[2 * kSlots], red.inj_all = times[2 * kSlots + 1], red.copy = times[2 * kSlots + 2];
  for (size_t k = 0; k <= kSlots; ++k) red.share[k] = part[k] / nranks, red.ishare[k] = part[ip + k] / nranks;
  red.stages = static_cast<int64_t>(tags[2 * kSlots + 1]);
  red.inter = static_cast<int64_t>(tags[2 * kSlots + 2]);
  red.msg = static_cast<int64_t>(tags[2 * kSlots + 3]);
  return red.total(m);
}
}  // namespace

namespace detail {
namespace {
// One candidate's share of predict_reduced's vectors: the participation flags (summed over
// ranks), then the tags and stage counts (maxima), the injected and received bytes (summed
// over the region), the times (maxima).
constexpr size_t kPart = 2 * (kSlots + 1), kTags = 2 * kSlots + 4, kInj = 2 * (kSlots + 1), kTimes = 2 * kSlots + 3;

// This rank's terms of candidate `c` under the shares of `part` (the flags summed over ranks).
RankTerms shared_terms(const OwnCounts& c, const double* part, double nranks, const ModelParams& m) {
  std::map<std::string, double> share;
  for (const auto& kv : c.counts.steps()) share[kv.first] = part[step_slot(step_tag(kv.first))] / nranks;
  return rank_terms(c.counts, c.window, c.staged, c.stages, m, share);
}

// Fills one candidate's tags, bytes and times from its terms (as predict_counts does).
void put_reduced(const RankTerms& t, uint64_t* tags, double* inj, double* times, double& work) {
  const RankSlots s = slots_of(t);
  for (size_t k = 0; k < kSlots; ++k)
    if (s.tag[k] != 0) tags[k] = s.tag[k], tags[kSlots + k] = ~s.tag[k];
  tags[2 * kSlots] = s.collides ? 1 : 0;
  tags[2 * kSlots + 1] = static_cast<uint64_t>(t.stages);
  tags[2 * kSlots + 2] = static_cast<uint64_t>(t.inter_steps);
  tags[2 * kSlots + 3] = static_cast<uint64_t>(t.message_steps);
  std::copy(s.inj.begin(), s.inj.end(), inj);
  std::copy(s.rec.begin(), s.rec.end(), inj + kSlots + 1);
  std::copy(s.busy.begin(), s.busy.begin() + kSlots, times);
  times[2 * kSlots] = s.busy[kSlots];
  times[2 * kSlots + 2] = t.copy;
  work = total_work({t});
}

// The prediction from one candidate's reduced vectors (predict_counts' last part).
double from_reduced(const double* part, const uint64_t* tags, const double* times, double nranks,
                    const ModelParams& m) {
  StepReduction red;
  red.fold = tags[2 * kSlots] != 0;
  for (size_t k = 0; k < kSlots; ++k) red.fold = red.fold || (tags[k] != 0 && tags[k] != ~tags[kSlots + k]);
  red.busy.assign(times, times + kSlots);
  red.inj.assign(times + kSlots, times + 2 * kSlots);
  red.busy_all = times[2 * kSlots], red.inj_all = times[2 * kSlots + 1], red.copy = times[2 * kSlots + 2];
  for (size_t k = 0; k <= kSlots; ++k) red.share[k] = part[k] / nranks, red.ishare[k] = part[kSlots + 1 + k] / nranks;
  red.stages = static_cast<int64_t>(tags[2 * kSlots + 1]);
  red.inter = static_cast<int64_t>(tags[2 * kSlots + 2]);
  red.msg = static_cast<int64_t>(tags[2 * kSlots + 3]);
  return red.total(m);
}
}  // namespace

std::vector<double> predict_reduced(const std::vector<OwnCounts>& mine, const Locality& loc, MPI_Comm comm,
                                    const ModelParams& m, std::vector<double>& work) {
  const size_t n = mine.size();
  const double nranks = static_cast<double>(comm_size(comm));
  // The ranks taking part in each step's inter- and intra-region messages, first: the inter
  // share scales the per-message cost of the terms (predict_counts).
  std::vector<double> part(n * kPart, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const RankSlots s = slots_of(rank_terms(mine[i].counts, mine[i].window, mine[i].staged, mine[i].stages, m));
    std::copy(s.part.begin(), s.part.end(), part.begin() + static_cast<std::ptrdiff_t>(i * kPart));
    std::copy(s.ipart.begin(), s.ipart.end(), part.begin() + static_cast<std::ptrdiff_t>(i * kPart + kSlots + 1));
  }
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, part.data(), static_cast<int>(part.size()), MPI_DOUBLE, MPI_SUM, comm));
  std::vector<uint64_t> tags(n * kTags, 0);
  std::vector<double> inj(n * kInj, 0.0), times(n * kTimes + n, 0.0), mywork(n, 0.0), sum(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    put_reduced(shared_terms(mine[i], part.data() + i * kPart, nranks, m), tags.data() + i * kTags,
                inj.data() + i * kInj, times.data() + i * kTimes, mywork[i]);
  allreduce_max_u64(comm, tags.data(), static_cast<int>(tags.size()));  // (0 must lose to every tag)
  // The bytes summed within the region (one region unsplit: the whole communicator).
  const MPI_Comm region = loc.local_comm() != MPI_COMM_NULL ? loc.local_comm() : comm;
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, inj.data(), static_cast<int>(inj.size()), MPI_DOUBLE, MPI_SUM, region));
  // The work, a sum of doubles, reduced to rank 0 and handed on in the maxima (the others
  // put 0, work is never negative): every rank holds rank 0's sum.
  SPC_MPI(MPI_Reduce(mywork.data(), sum.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, 0, comm));
  const double rate = std::max(m.region_rate, 1.0);
  for (size_t i = 0; i < n; ++i) {
    const double* b = inj.data() + i * kInj;
    double* t = times.data() + i * kTimes;
    for (size_t k = 0; k < kSlots; ++k) t[kSlots + k] = std::max(b[k], b[kSlots + 1 + k]) / rate;
    t[2 * kSlots + 1] = std::max(b[kSlots], b[2 * kSlots + 1]) / rate;
    times[n * kTimes + i] = comm_rank(comm) == 0 ? sum[i] : 0.0;
  }
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, times.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX, comm));
  std::vector<double> predicted(n);
  work.assign(times.begin() + static_cast<std::ptrdiff_t>(n * kTimes), times.end());
  for (size_t i = 0; i < n; ++i)
    predicted[i] = from_reduced(part.data() + i * kPart, tags.data() + i * kTags, times.data() + i * kTimes, nranks, m);
  return predicted;
}
}  // namespace detail

double predict_iteration(const Plan& plan, const ModelParams& m, MPI_Comm comm) {
  return predict_counts(plan.iteration_counts(), plan.window_counts(), staged_bytes(plan), plan.stages(),
                        plan.locality(), m, comm);
}

double predict_gather(const GatherPlan& plan, const ModelParams& m, MPI_Comm comm) {
  // Copied: what this rank sends beyond one copy of its own block per message.
  const auto& tot = plan.iteration_counts().total();
  const double own = static_cast<double>(plan.my_count()) * static_cast<double>(plan.value_bytes_per_count()) *
                     static_cast<double>(tot.sent_intra.msgs + tot.sent_inter.msgs);
  const double copied = std::max(0.0, static_cast<double>(tot.sent_intra.bytes + tot.sent_inter.bytes) - own);
  return predict_counts(plan.iteration_counts(), plan.window_counts(), copied, plan.stages(), plan.locality(), m,
                        comm);
}

}  // namespace sparsecomm

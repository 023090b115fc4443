#pragma once
// A locality-aware performance model of one halo exchange, used by the "auto" backend.
// In the spirit of the postal and max-rate models (Gropp, Olson and Samfass, "Modeling
// MPI communication performance on SMP nodes: is it time to retire the ping pong test",
// EuroMPI'16; Bienz, Gropp and Olson, "Improving performance models for irregular
// point-to-point communication", EuroMPI'18): per locality class a latency and a per-byte
// cost, a link-bandwidth limit shared by the ranks of a region (each direction: what they
// inject and what they receive, the max-rate model's injection limit on both ends), a cost per extra
// communication stage (per locality class: a stage whose messages stay inside regions,
// like aggregation's gather and scatter, costs less than one that crosses them), and a
// per-byte cost for packing copies.
//
// The prediction reads only a plan's deterministic counts (messages and bytes per step
// and locality class on every rank, stages), so it is the same at every run.
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {

struct ModelParams {
  // Two views of a message (Gropp, Olson and Samfass, EuroMPI'16: a ping-pong alone does not
  // describe a halo exchange). A ping-pong between two ranks while the others wait gives the
  // latency of one dependent message: alpha/beta, which set the floor of a stage's cost and
  // describe the links (experiments/calibration/run.sh). When every rank communicates at
  // once, messages pipeline (a rank pays its per-message overhead, not the whole latency)
  // and bytes share the memory system and the cores: msg/byte, measured that way, are what
  // the busiest rank pays per message and per byte of an exchange.
  double alpha_intra = 1.0e-6;   ///< s, latency of one intra-region message (ping-pong)
  double beta_intra = 1.0e-10;   ///< s per intra-region byte (ping-pong)
  double alpha_inter = 5.0e-6;   ///< s, latency of one inter-region message (ping-pong)
  double beta_inter = 1.0e-9;    ///< s per inter-region byte (ping-pong)
  double msg_intra = 1.0e-6;     ///< s per intra-region message, every rank communicating
  double byte_intra = 1.0e-10;   ///< s per intra-region byte, every rank communicating
  double msg_inter = 5.0e-6;     ///< s per inter-region message, every rank communicating
  double byte_inter = 1.0e-9;    ///< s per inter-region byte, every rank communicating
  double region_rate = 1.25e9;   ///< bytes/s a region can inject into the network (or receive from it)
  double stage_intra = 3.0e-6;   ///< s per extra stage whose messages all stay inside regions
  double stage_inter = 3.0e-6;   ///< s per extra stage with inter-region messages
  double copy = 2.0e-10;         ///< s per byte copied between stages (aggregation, combining)
  // A transfer through a shared-memory window (the shm backends) is no message: the writer
  // packs into its window (the pack every backend does), the reader copies out after an
  // acquire load of the writer's epoch. Measured with every rank of the node at once.
  double msg_shm = 1.0e-7;       ///< s per segment a rank reads out of a window (the handshake)
  double byte_shm = 1.0e-10;     ///< s per byte a rank copies out of a window
  double stage_shm = 1.0e-6;     ///< s per extra stage whose transfers all go through windows

  /// Documented defaults (above) overridden by `key value` lines of a file written by
  /// `sparsecomm_calibrate`. Path: `path`, else ModelSettings::defaults().source; neither, or "builtin":
  /// the defaults. A file that cannot be read is an InputError naming it, a malformed one an
  /// InputError naming the line. Files of earlier versions: the key
  /// `stage` sets both stage costs, a class's msg/byte default to its alpha/beta, and
  /// stage_shm to stage_intra.
  static ModelParams load(const std::string& path = "");
  /// Collective. The parameters `auto` uses, the same on every rank: `source` is a file
  /// (load(); ranks that read different values: InputError on every rank), "builtin" (the
  /// defaults above), or empty: ModelSettings::defaults().source (a file or "builtin"), else
  /// machine_model() — measured in the first three launches, cached.
  static ModelParams resolve(MPI_Comm comm, const Locality& loc, const std::string& source);
  /// The number of parameters (every member is one double, in declaration order).
  static constexpr int kFields = 15;
  /// Writes every parameter; `first_line`, if given, as a leading "# " comment.
  void save(const std::string& path, const std::string& first_line = "") const;
  std::string describe() const;
};

/// Where auto's model comes from when a call names none, and where machine_model() keeps
/// its measurements. The entry points fill it from the environment
/// (sparsecomm/interop/environment.hpp: SPARSECOMM_MODEL; $XDG_CACHE_HOME/sparsecomm, else
/// ~/.cache/sparsecomm; SPARSECOMM_MODEL_TAG and the transport variables of MPI, UCX and
/// libfabric) and make it defaults(); the library's own is no file, and no cache on disk.
struct ModelSettings {
  /// A parameter file or "builtin" for calls that name no model; "": machine_model().
  std::string source;
  /// The directory of machine_model()'s cache; "": none (every launch measures).
  std::string cache_dir;
  /// What else decides the network a run measures, part of the cache's key: "NAME=value"
  /// words in name order, so that a model measured over one network is not read back over
  /// another.
  std::string network_tag;
  /// auto's tuning cache for tune=measure plans that name none (option tune_cache): a file
  /// of measured decisions, read by rank 0 (comm/plan/tune_cache.cpp); "": none.
  std::string tune_cache;

  /// Local: what calls that are given no settings use (the library's, above, until
  /// set_defaults()).
  static ModelSettings defaults();
  static void set_defaults(const ModelSettings& s);
};

/// What one rank alone knows of ModelParams::resolve()'s answer, without communicating: the
/// kind of source (0 measured, 1 builtin, 2 file) and the parameters where they are known
/// here (the builtin ones, the file read, or the measured ones remembered on the
/// communicator for the layout); else `measure` (machine_model() must run, collectively)
/// or `error` (the file could not be read). A caller that folds resolve()'s agreement into
/// a collective of its own (auto, in its pattern gather) must check that every rank has
/// the same kind, no error and no measure, and the same parameters.
struct LocalModel {
  int kind = 0;
  bool measure = false;
  std::string error;
  std::string source;  ///< the file (kind 2)
  ModelParams params;
};
LocalModel local_model(MPI_Comm comm, const Locality& loc, const std::string& source);
/// Collective: machine_model() measured afresh or read from the file cache, then remembered
/// on `comm` (for a caller whose ranks' local_model() asked for a measurement).
ModelParams machine_model_remembered(MPI_Comm comm, const Locality& loc);
/// Local: machine_model()'s file cache entry for ranks on these nodes (node_labels()'
/// numbering; what rank 0 reads), if there is one. Under SMPI: none.
bool read_machine_model_cache(const std::vector<int>& node, const Locality& loc, ModelParams& m);
/// Local: remembers `m` as machine_model()'s answer on `comm` for `loc` (every rank must
/// remember the same: a caller that broadcast it).
void remember_machine_model(MPI_Comm comm, const Locality& loc, const ModelParams& m);

/// Collective over `comm`. Measures the parameters on `loc` (src/comm/plan/calibrate.cpp says
/// what and how), `reps` repetitions per measurement (median); what cannot be measured here
/// (one region, regions of one rank, no shm backend) keeps its default. `sparsecomm
/// calibrate` writes the result to a file.
ModelParams calibrate_model(MPI_Comm comm, const Locality& loc, int reps);

/// Collective over `comm`. calibrate_model() once in each of the first three launches
/// (processes) per machine and layout: their calibrations are cached in
/// ModelSettings::cache_dir (none: measured in every launch) under a key of the host name, the
/// number of ranks, of nodes and ranks per node, and `loc`'s layout, and the model is their
/// per-parameter median (one launch's calibration depends on where its processes sit on the
/// cores); later launches read it back, and later calls on the same communicator and layout
/// take it from the communicator (an MPI attribute) without any collective. A calibration
/// takes a fraction of a second to a few seconds; a cache that cannot be written only costs
/// that again next time. Under SimGrid's SMPI: the defaults.
ModelParams machine_model(MPI_Comm comm, const Locality& loc);
/// machine_model() without the communicator's memory: reads the file cache or measures.
ModelParams machine_model_uncached(MPI_Comm comm, const Locality& loc);
/// Collective on the first call per communicator (remembered on it, as machine_model()'s
/// result is): the node of every rank (ranks sharing MPI_COMM_TYPE_SHARED memory), labelled
/// as Locality::detect labels its regions.
const std::vector<int>& node_labels(MPI_Comm comm);
/// Local: node labels from the lowest rank of each rank's node, numbered as node_labels()
/// numbers them (by lowest rank).
std::vector<int> node_labels_from_lowest(const std::vector<int>& lowest);

/// The stage term: of `stages` stages the first is free; of the others, those with
/// inter-region messages cost stage_inter, those with other MPI messages stage_intra and
/// those whose transfers all go through shared windows stage_shm. With S stages, I of them
/// with inter-region messages and M with any MPI message (I <= M <= S; M < 0: all S):
/// stage_inter x I + stage_intra x (M - I) + stage_shm x (S - M), less one stage that is
/// free: an inter-region one if I > 0, else one with messages if M > 0, else a window one.
double stage_cost(const ModelParams& m, int64_t stages, int64_t inter_stages, int64_t message_stages = -1);

/// Number of steps of `counts` with inter-region messages (sent or received).
int64_t inter_steps(const Stats& counts);
/// Number of steps of `counts` in which this rank sends or receives an MPI message: any
/// transfer not in `window` (the part of those counts that went through shared windows).
int64_t message_steps(const Stats& counts, const Stats& window);

/// What one rank does in one execution of a plan, as the model reads it: per locality class
/// the messages and bytes summed over the plan's steps (per step the larger of sent and
/// received: a message costs its sender and its receiver), and the bytes copied between
/// stages (bytes sent beyond the rank's own send buffer); the messages and bytes include
/// the window transfers, which window_reads / window_bytes (read) give apart.
struct RankLoad {
  double msgs_intra = 0, msgs_inter = 0, bytes_intra = 0, bytes_inter = 0, copy_bytes = 0;
  double window_reads = 0, window_bytes = 0;
};
RankLoad rank_load(const Plan& plan);

/// Bytes this rank copies in memory per execution of `plan`, estimated from its counts: its
/// pack and unpack (none where it receives in ghost order: wait_in_place()), the copies between stages (RankLoad::copy_bytes), every byte it reads
/// out of a shared-memory window, and for each MPI message between ranks of
/// one node what Open MPI's shared-memory transport (vader) does: the sender copies into
/// the shared segment and the receiver out of it, or, above its 4 KiB eager limit, the
/// receiver reads once from the sender's buffer (single-copy CMA) — per step and class at
/// the step's mean message size. Intra-region messages count as on-node (regions lie
/// within nodes); inter-region ones only with `inter_on_node` (regions emulated on one
/// node); off-node messages cross the network and count no memory copy here.
double copied_bytes(const Plan& plan, bool inter_on_node);
/// The one-copy limit of `plan`'s exchange on this rank: each received value read once,
/// by the rank that needs it.
double one_copy_bytes(const Plan& plan);

/// What one step costs a rank: the larger of its sending and its receiving cost, each
/// msg per message + byte per byte, per locality class.
double step_cost(const ModelParams& m, const CommCounters& step);
/// The transfers of step `step` (its counts `k`) that are MPI messages: `k` less that step's
/// part through shared windows in `window` (Plan::window_counts()).
CommCounters message_part(const CommCounters& k, const Stats& window, const std::string& step);

/// What a rank's reads out of shared windows cost it (one step's part of
/// Plan::window_counts(), or its total): msg_shm per segment read, byte_shm per byte read.
double window_cost(const ModelParams& m, const CommCounters& w);

/// One step of one rank: what it costs the rank (its MPI part's step_cost and its window
/// reads), the bytes it injects into the network and takes from it (inter-region, not
/// through a window), and whether it sends or receives inter-region and intra-region MPI
/// messages in it.
struct StepTerms {
  double busy = 0, injected = 0, received = 0;
  bool inter = false, intra = false;
};
/// One rank's part of a prediction, before the reductions over ranks: the cost of its
/// staged copies, each of its steps, its stages and its steps with inter-region traffic and
/// with MPI messages.
struct RankTerms {
  double copy = 0;
  std::map<std::string, StepTerms> steps;
  int stages = 1;
  int64_t inter_steps = 0, message_steps = 0;
};
/// `share`: per step name, the share of all ranks that send or receive inter-region
/// messages in that step (step_shares; a step not in it: 1). The loaded inter-region
/// costs were measured with every rank taking part at once; a step in which only a share
/// of the ranks does pays that share of msg_inter per message (the emulated cluster's nodes
/// share the machine's cores, and the per-message cost there is their contention).
RankTerms rank_terms(const Stats& counts, const Stats& window, double staged_bytes, int stages, const ModelParams& m,
                     const std::map<std::string, double>& share = {});
/// Whether this rank sends or receives inter-region (`inter`; else intra-region) MPI
/// messages, not window transfers, in each step of `counts`: what step_shares() adds up
/// over the ranks.
std::map<std::string, bool> takes_part(const Stats& counts, const Stats& window, bool inter);
/// Per step name, the share of the ranks (one takes_part() each) that take part in it.
std::map<std::string, double> step_shares(const std::vector<std::map<std::string, bool>>& parts);
/// The model as it applies to a layout: where every region is one whole node (node[r]:
/// rank r's node, MPI_COMM_TYPE_SHARED; empty: unknown), inter-region transfers cross a
/// network link of the region's own, and a rank alone on it moves its bytes at the link's
/// rate: byte_inter (measured with every rank communicating, so a share of the link) becomes
/// at most 1 / region_rate, and the link's sharing between a region's ranks is left to the
/// region term of predict_from_terms. Elsewhere (regions within a node, emulated regions):
/// `m` unchanged.
ModelParams for_layout(const ModelParams& m, const std::vector<int>& region, const std::vector<int>& node);

/// The prediction from every rank's terms (region[r]: rank r's region): the largest copy
/// cost, then per step the busiest rank in that step against the busiest region's link in
/// that step (the bytes its ranks inject or, the other direction of a full-duplex link,
/// receive, whichever is more, at region_rate), summed over the steps (a plan's steps follow one another:
/// the ranks that are busiest in two steps need not be the same), plus stage_cost, plus per
/// step stage_inter times the share of the ranks taking part in its inter-region messages
/// (StepTerms::inter) and stage_intra times the share taking part in its intra-region ones
/// (StepTerms::intra): the latency of a step's messages, which stage_cost leaves out for
/// the first stage, is a full stage where every rank takes part (as calibrated) and less
/// where only a region's leaders do — so that a 2-step exchange, in which every rank sends
/// across the network, is not priced as if it crossed it at the cost of the 3-step's few
/// (experiments/auto/README.md). Steps
/// are told apart by name (step_slot: the same on every rank); where two names share a slot
/// anywhere, every step is taken as one. predict_iteration() is this over the ranks of a
/// real plan; auto also evaluates it on counts computed without building plans
/// (virt::halo_counts).
double predict_from_terms(const std::vector<RankTerms>& ranks, const std::vector<int>& region, const ModelParams& m);

/// The work of an execution summed over the ranks (each rank's copy cost and its steps'
/// costs): what breaks a tie between two predictions, the plan doing less in all leaving
/// more of the shared cores and links to everything else.
double total_work(const std::vector<RankTerms>& ranks);

/// Collective. Predicted seconds per execution of `plan`: predict_from_terms over the
/// ranks' rank_terms (four reductions).
double predict_iteration(const Plan& plan, const ModelParams& m, MPI_Comm comm);

/// Collective. The same prediction for an allgather-shaped plan (GatherPlan): what the
/// PMPI layer's `auto` compares against the direct exchange MPI itself would do.
double predict_gather(const GatherPlan& plan, const ModelParams& m, MPI_Comm comm);

}  // namespace sparsecomm

// The one reader of the library's environment variables (docs/environment.md, "The
// library"; the PMPI layer and the Hypre hook read their own SPARSECOMM_MPI_* and
// SPARSECOMM_HYPRE_* at their entry). Each variable becomes the value its layer takes, with
// the variable's words kept for the error a bad value gives: reading is local and never
// fails, and the collective call that uses a setting raises its error on every rank.
#include "interop/environment.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/parse.hpp"

extern char** environ;

namespace sparsecomm {
namespace detail {
namespace {

// A variable's value; unset and empty alike are "".
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

MemoryLimit memory_limit_of(const std::string& e) {
  MemoryLimit l;
  if (e.empty()) return l;
  int64_t v = 0;
  if (parse_int(e, v) && v >= 0) l.bytes = v;
  else l.error = "SPARSECOMM_MEMORY_LIMIT='" + e + "' is not a number of bytes (a non-negative integer)";
  return l;
}

// What else decides the network a run measures, as "NAME=value" words in name order (empty
// where none is set): the transports and waiting Open MPI is told to use (`mpirun --mca x y`
// reaches every rank as OMPI_MCA_x), MPICH's device choices, UCX's and libfabric's transport
// choices, and SPARSECOMM_MODEL_TAG, which names what the process cannot see
// (scripts/cluster.sh sets it to its emulated links' rate). Without them a model measured
// over one network is read back over another (the emulated cluster without its links' rate
// limit, then with it: auto priced the links far too fast; experiments/petsc/README.md).
std::string network_tag() {
  static const char* const kExact[] = {"SPARSECOMM_MODEL_TAG", "OMPI_MCA_mpi_yield_when_idle", "UCX_TLS",
                                       "UCX_NET_DEVICES", "FI_PROVIDER", "MPIR_CVAR_CH4_NETMOD",
                                       "MPIR_CVAR_CH4_SHM", "MPIR_CVAR_NOLOCAL"};
  static const char* const kPrefix[] = {"OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_mtl"};
  std::vector<std::string> words;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e, name = kv.substr(0, kv.find('='));
    bool take = false;
    for (const char* x : kExact) take = take || name == x;
    for (const char* p : kPrefix) take = take || name.rfind(p, 0) == 0;
    if (!take) continue;
    words.push_back(kv);
    std::replace(words.back().begin(), words.back().end(), '\n', ' ');  // the key is one line of the file
  }
  std::sort(words.begin(), words.end());
  std::string tag;
  for (const std::string& w : words) tag += (tag.empty() ? "" : " ") + w;
  return tag;
}

ModelSettings model_settings() {
  ModelSettings m;
  m.source = env("SPARSECOMM_MODEL");
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) m.cache_dir = x + "/sparsecomm";
  else if (const std::string h = env("HOME"); !h.empty()) m.cache_dir = h + "/.cache/sparsecomm";
  m.network_tag = network_tag();
  m.tune_cache = env("SPARSECOMM_TUNE_CACHE");
  return m;
}

SmpiMessageCost smpi_message_cost() {
  SmpiMessageCost c;
  const std::string e = env("SPARSECOMM_SMPI_MSG_COST");
  if (e.empty()) return c;
  double v = 0;
  if (parse_double(e, v) && v >= 0) c.seconds = v;
  else c.error = std::string("SPARSECOMM_SMPI_MSG_COST must be a number of seconds >= 0, got '") + e + "'";
  return c;
}

#ifndef SPARSECOMM_SMPI
// Not a number reads as 0 (atoi): a performance choice, never an error.
ShmSettings shm_settings_of_environment() {
  ShmSettings s;
  if (const std::string p = env("SPARSECOMM_SHM_PATIENCE"); !p.empty()) s.patience = std::max(0, std::atoi(p.c_str()));
  const auto number = [](const char* name) { return std::atol(env(name).c_str()); };
  s.yield_when_idle = number("OMPI_MCA_mpi_yield_when_idle") > 0;
  s.local_ranks = std::max(0L, std::max(number("OMPI_COMM_WORLD_LOCAL_SIZE"), number("MPI_LOCALNRANKS")));
  return s;
}
#endif

}  // namespace

Environment read_environment() {
  Environment e;
  e.memory = memory_limit_of(env("SPARSECOMM_MEMORY_LIMIT"));
  e.sdde.window = env("SPARSECOMM_SDDE_WINDOW");
  e.sdde.node_exchange = env("SPARSECOMM_SDDE_NODE_EXCHANGE");
  const std::string check = env("SPARSECOMM_CHECK_COLLECTIVE_ARGS");
  e.sdde.check_collective_args = !check.empty() && check != "0";
  e.model = model_settings();
  e.smpi = smpi_message_cost();
#ifndef SPARSECOMM_SMPI
  e.shm = shm_settings_of_environment();
#endif
  return e;
}

void apply(const Environment& env) {
  set_memory_limit(env.memory);
  SddeOptions::set_defaults(env.sdde);
  ModelSettings::set_defaults(env.model);
  set_smpi_message_cost(env.smpi);
#ifndef SPARSECOMM_SMPI
  set_shm_settings(env.shm);
#endif
}

}  // namespace detail

void apply_environment() { detail::apply(detail::read_environment()); }

}  // namespace sparsecomm

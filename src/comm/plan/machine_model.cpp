// The model auto uses when no file names one: this machine's, measured by calibrate_model()
// in each of the first three launches per machine and layout, kept in an on-disk cache
// (their per-parameter median) and on the communicator; and ModelParams::resolve(), which
// chooses between that, the built-in defaults and a parameter file, alike on every rank.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <tuple>
#include <utility>
#include <vector>

#include "sparsecomm/comm/plan/model.hpp"

#ifndef SPARSECOMM_SMPI
#include "comm/shm_channel.hpp"  // detail::node_of: the node labels
#endif
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {

namespace {
static_assert(sizeof(ModelParams) == ModelParams::kFields * sizeof(double), "ModelParams: kFields doubles");

#ifndef SPARSECOMM_SMPI
// ModelParams as its kFields doubles (declaration order: the cache's "# launch" lines and
// broadcasts), and back.
using Fields = std::array<double, ModelParams::kFields>;
Fields fields_of(const ModelParams& m) {
  Fields f;
  std::memcpy(f.data(), &m, sizeof m);
  return f;
}
ModelParams params_of(const double* f) {
  ModelParams m;
  std::memcpy(static_cast<void*>(&m), f, sizeof m);
  return m;
}

// Repetitions of each measurement when auto measures the machine on first use.
constexpr int kFirstUseReps = 30;
// Launches whose calibrations the cache keeps; the model is their per-parameter median. One
// launch's calibration describes the places its processes took on the cores, which hold for
// the whole launch where ranks outnumber cores, so calibrations differ far more between
// launches than within one (experiments/auto/README.md, "Where the model is wrong, and
// why"). So each of the first three launches (processes) that use a layout measures it once
// and adds its calibration; later ones only read. A rare launch is outvoted by the third.
constexpr size_t kCachedLaunches = 3;

// The first line of MPI_Get_library_version: which MPI (and which version of it) the
// measurements were made with. Two MPIs on one machine (Open MPI and MPICH side by side)
// price messages differently; neither may read the other's calibration.
std::string mpi_library() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) return "unknown";
  std::string s(v, static_cast<size_t>(std::max(0, std::min(len, MPI_MAX_LIBRARY_VERSION_STRING))));
  s = s.substr(0, s.find_first_of("\r\n"));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == ',')) s.pop_back();
  return s.empty() ? "unknown" : s;
}

// The cache key: what the parameters depend on, and a version (raised whenever the
// measurements change, so older caches are measured again). The MPI library (mpi_library());
// the host name of rank 0 stands for the machine; ranks per node for oversubscription; the layout for the locality classes; the
// network's selection (ModelSettings::network_tag, appended where not empty). Local: only rank 0 reads
// and writes the cache, so only its key matters (no broadcast of its host name: one
// collective fewer on auto's first use).
std::string cache_key(const std::vector<int>& node, const Locality& loc) {
  // Nodes, most and fewest ranks per node, from the node labels.
  std::map<int, int> per_node;
  for (int x : node) ++per_node[x];
  const size_t nodes = per_node.size();
  int most = 0, least = std::numeric_limits<int>::max();
  for (const auto& [node, n] : per_node) most = std::max(most, n), least = std::min(least, n);
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  host[sizeof host - 1] = 0;
  std::ostringstream k;
  k << "v10 mpi " << mpi_library() << " host " << host << " ranks " << node.size() << " nodes " << nodes << " per_node " << least << "-"
    << most << " regions";
  for (int r = 0; r < loc.num_regions(); ++r) k << " " << loc.region_size(r);
  for (int r = 0; r < loc.size(); ++r) k << (r ? "," : " ") << loc.region_of(r);  // placement
  if (const std::string net = ModelSettings::defaults().network_tag; !net.empty()) k << " net " << net;
  return k.str();
}
// From the node labels kept on the communicator (auto needs them too: one detection serves both).
std::string cache_key(MPI_Comm comm, const Locality& loc) { return cache_key(node_labels(comm), loc); }

std::string cache_dir() { return ModelSettings::defaults().cache_dir; }

// FNV-1a: a file name for the key (the key itself is the file's first line, checked on read).
std::string key_file(const std::string& key) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  char name[64];
  std::snprintf(name, sizeof name, "model-%016llx.txt", static_cast<unsigned long long>(h));
  return name;
}

// A cache file: the model (the median of the launches' calibrations, in ModelParams' file
// format, so that it reads as a parameter file too), then one comment line per launch,
// "# launch" and its kFields values in ModelParams' order.
constexpr char kLaunchLine[] = "# launch ";  // (read_cache and write_cache)
struct CacheEntry {
  ModelParams model;
  std::vector<ModelParams> launches;
};

// Each parameter's median over `all` (of two: their mean).
ModelParams median_of(const std::vector<ModelParams>& all) {
  std::vector<Fields> f;
  for (const ModelParams& m : all) f.push_back(fields_of(m));
  Fields med;
  std::vector<double> v(all.size());
  for (size_t k = 0; k < med.size(); ++k) {
    for (size_t t = 0; t < f.size(); ++t) v[t] = f[t][k];
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    med[k] = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  return params_of(med.data());
}

// Rank 0's read of the cache: false for a missing, foreign or unreadable file.
bool read_cache(const std::string& path, const std::string& key, CacheEntry& e) {
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first) || first != "# key: " + key) return false;
  try {
    e.model = ModelParams::load(path);
  } catch (const InputError&) {
    return false;  // damaged: measured again and rewritten
  }
  e.launches.clear();
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kLaunchLine, 0) != 0) continue;
    std::istringstream ss(line.substr(sizeof kLaunchLine - 1));
    Fields v;
    bool ok = true;
    for (double& x : v) ok = ok && (ss >> x) && x >= 0;
    if (!ok) return false;  // damaged
    e.launches.push_back(params_of(v.data()));
  }
  if (e.launches.empty()) e.launches.push_back(e.model);  // (a file with the model alone: one launch)
  return true;
}

void write_cache(const std::string& dir, const std::string& path, const std::string& key, const CacheEntry& e) {
  const std::string parent = dir.substr(0, dir.rfind('/'));
  ::mkdir(parent.c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  try {
    e.model.save(tmp, "key: " + key);
    std::ofstream out(tmp, std::ios::app);
    out.precision(17);
    for (const ModelParams& l : e.launches) {
      const char* sep = kLaunchLine;
      for (double x : fields_of(l)) {
        out << sep << x;
        sep = " ";
      }
      out << "\n";
    }
    if (!out) {
      std::remove(tmp.c_str());  // a partial file: no cache, measured again next time
      return;
    }
  } catch (const InputError&) {
    return;  // not writable: measured again next time
  }
  std::rename(tmp.c_str(), path.c_str());  // atomic: concurrent first uses write whole files
}

// The cache keys this process has measured (rank 0's: it alone reads and decides).
std::mutex measured_lock;
std::set<std::string> measured_here;

// Whether this launch should measure and add its calibration to the entry read.
bool wants_launch(const CacheEntry& e, const std::string& key) {
  std::lock_guard<std::mutex> g(measured_lock);
  return e.launches.size() < kCachedLaunches && !measured_here.count(key);
}
#endif  // SPARSECOMM_SMPI
}  // namespace

namespace {
// What machine_model() and node_labels() learned about a communicator, kept on it as an
// MPI attribute (freed with it, not copied to duplicates): a program that builds many
// plans on one communicator (every level of an AMG hierarchy) pays the collectives once.
// Every rank stores the same entries, since both calls are collective.
struct CommFacts {
  std::map<std::vector<int>, ModelParams> model_by_layout;  // region of every rank -> model
  std::vector<int> node;                                     // node label of every rank
};

CommFacts& facts(MPI_Comm comm) { return comm_attached<CommFacts>(comm); }

}  // namespace

const std::vector<int>& node_labels(MPI_Comm comm) {
  CommFacts& f = facts(comm);
  if (f.node.empty()) {
#ifdef SPARSECOMM_SMPI
    f.node = Locality::detect(comm).regions();
#else
    // From the node communicator kept on `comm` (the one every window plan on it uses):
    // each rank knows its node's lowest rank locally; one allgather spreads them. Numbered
    // by lowest rank, as Locality::detect numbers its regions.
    const int lowest = detail::node_of(comm)->node_rank_of.begin()->first;
    std::vector<int> low(static_cast<size_t>(comm_size(comm)));
    SPC_MPI(MPI_Allgather(&lowest, 1, MPI_INT, low.data(), 1, MPI_INT, comm));
    f.node = node_labels_from_lowest(low);
#endif
  }
  return f.node;
}

std::vector<int> node_labels_from_lowest(const std::vector<int>& lowest) {
  std::vector<int> sorted(lowest);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<int> label(lowest.size());
  for (size_t r = 0; r < lowest.size(); ++r)
    label[r] = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), lowest[r]) - sorted.begin());
  return label;
}

ModelParams machine_model(MPI_Comm comm, const Locality& loc) {
  CommFacts& f = facts(comm);
  const auto known = f.model_by_layout.find(loc.regions());
  if (known != f.model_by_layout.end()) return known->second;
  const ModelParams m = machine_model_uncached(comm, loc);
  f.model_by_layout[loc.regions()] = m;
  return m;
}

ModelParams machine_model_uncached(MPI_Comm comm, const Locality& loc) {
#ifdef SPARSECOMM_SMPI
  (void)comm, (void)loc;
  return ModelParams{};  // the simulated platform: measuring it would cost simulated minutes
#else
  const std::string key = cache_key(comm, loc), dir = cache_dir();
  const std::string path = dir.empty() ? "" : dir + "/" + key_file(key);
  ModelParams m;
  const bool root = comm_rank(comm) == 0;
  // Rank 0's cache entry and whether it is the model (no measurement in this launch), in
  // one broadcast.
  double cached[ModelParams::kFields + 1] = {0};
  CacheEntry e;
  if (root && !path.empty() && read_cache(path, key, e) && !wants_launch(e, key)) {
    const Fields f = fields_of(e.model);
    std::copy(f.begin(), f.end(), cached);
    cached[ModelParams::kFields] = 1;
  }
  SPC_MPI(MPI_Bcast(cached, ModelParams::kFields + 1, MPI_DOUBLE, 0, comm));
  if (cached[ModelParams::kFields] != 0) return params_of(cached);
  {
    Comm own(comm);  // a duplicate: the measurements' messages stay off the caller's communicator
    // (kFirstUseReps: the stage and per-message fits are medians of differences of ring
    // times, which on oversubscribed cores need more samples than the byte slopes; the
    // spread with 10 and 40: git log -p -- experiments/auto/README.md)
    m = calibrate_model(own.get(), loc, kFirstUseReps);
  }
  // Rank 0's calibration joins the launches on file (read again: another process may have
  // written meanwhile). Before the broadcast the others wait in: whatever fails here leaves
  // this launch's calibration as the model, never an exception on rank 0 alone.
  if (root) try {
      {
        std::lock_guard<std::mutex> g(measured_lock);
        measured_here.insert(key);
      }
      CacheEntry now;
      if (path.empty() || !read_cache(path, key, now)) now.launches.clear();
      if (now.launches.size() < kCachedLaunches) now.launches.push_back(m);
      now.model = median_of(now.launches);
      if (!path.empty()) write_cache(dir, path, key, now);
      m = now.model;
    } catch (...) {
    }
  SPC_MPI(MPI_Bcast(&m, ModelParams::kFields, MPI_DOUBLE, 0, comm));  // rank 0's model, everywhere
  return m;
#endif
}

ModelParams machine_model_remembered(MPI_Comm comm, const Locality& loc) {
  const ModelParams m = machine_model_uncached(comm, loc);
  remember_machine_model(comm, loc, m);
  return m;
}

bool read_machine_model_cache(const std::vector<int>& node, const Locality& loc, ModelParams& m) {
#ifdef SPARSECOMM_SMPI
  (void)node, (void)loc, (void)m;
  return false;
#else
  if (node.size() != static_cast<size_t>(loc.size())) return false;
  const std::string key = cache_key(node, loc), dir = cache_dir();
  if (dir.empty()) return false;
  // What this process read before (every new communicator of the same shape would read the
  // same file again: auto's first plan on it). Only rank 0 reads, and broadcasts what it
  // has, so the ranks agree whatever the file holds later.
  static std::mutex lock;
  static std::map<std::string, ModelParams> seen;
  const std::string path = dir + "/" + key_file(key), memo = path + "\n" + key;  // (the file name is a hash of the key)
  std::lock_guard<std::mutex> g(lock);
  if (const auto it = seen.find(memo); it != seen.end()) {
    m = it->second;
    return true;
  }
  CacheEntry e;
  if (!read_cache(path, key, e) || wants_launch(e, key)) return false;  // (then measured collectively)
  m = e.model;
  seen[memo] = m;
  return true;
#endif
}

void remember_machine_model(MPI_Comm comm, const Locality& loc, const ModelParams& m) {
  facts(comm).model_by_layout[loc.regions()] = m;
}

namespace {
// The source resolve() reads: `source`, else ModelSettings::defaults().source; its kind
// (0 measured, 1 builtin, 2 file).
std::pair<std::string, int> model_source(const std::string& source) {
  const std::string src = source.empty() ? ModelSettings::defaults().source : source;
  return {src, src.empty() ? 0 : src == "builtin" ? 1 : 2};
}
}  // namespace

LocalModel local_model(MPI_Comm comm, const Locality& loc, const std::string& source) {
  LocalModel l;
  std::tie(l.source, l.kind) = model_source(source);
  if (l.kind == 2) {
    try {
      l.params = ModelParams::load(l.source);
    } catch (const std::exception& e) {
      l.error = e.what();
    }
  } else if (l.kind == 0) {
    const CommFacts& f = facts(comm);
    const auto known = f.model_by_layout.find(loc.regions());
    l.measure = known == f.model_by_layout.end();
    if (!l.measure) l.params = known->second;
  }
  return l;
}

ModelParams ModelParams::resolve(MPI_Comm comm, const Locality& loc, const std::string& source) {
  // Every rank reads its own file (paths may be node-local); all must agree on the values.
  std::string src;
  int kind = 0;
  std::tie(src, kind) = model_source(source);
  int k[2] = {kind, -kind}, mx[2];
  SPC_MPI(MPI_Allreduce(k, mx, 2, MPI_INT, MPI_MAX, comm));
  if (mx[0] != -mx[1]) throw InputError("model: ranks disagree on the parameter source (file, builtin or measured)");
  if (kind == 0) return machine_model(comm, loc);
  if (kind == 1) return ModelParams{};
  const ModelParams m = agreed(comm, [&] { return ModelParams::load(src); });
  double lo[kFields], hi[kFields];
  SPC_MPI(MPI_Allreduce(&m, lo, kFields, MPI_DOUBLE, MPI_MIN, comm));
  SPC_MPI(MPI_Allreduce(&m, hi, kFields, MPI_DOUBLE, MPI_MAX, comm));
  for (int i = 0; i < kFields; ++i)
    if (lo[i] != hi[i]) throw InputError("model: ranks loaded different performance model parameters from " + src);
  return m;
}

}  // namespace sparsecomm

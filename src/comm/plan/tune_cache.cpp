// auto's tuning cache (option tune_cache, $SPARSECOMM_TUNE_CACHE). A solver that runs the
// same exchange thousands of times in every launch need not measure its candidates in every
// launch: the winner measured once is kept in a file, and the next tune=measure plan over
// the same exchange builds only that winner (tune.cpp's make_tuned_plan asks here first).
//
// The key says when a decision carries over, and nothing else:
// - the whole pattern: each rank hashes both sides of its pattern (neighbors, counts,
//   positions, global ids) with its rank, in two independent SplitMix64 chains (128 bits),
//   and one reduction (bitwise xor) combines them on rank 0, so no rank ever holds the
//   pattern of another; a change on any rank changes the key;
// - the layout: the number of ranks and the region of every rank (Locality::regions(),
//   known to every rank), i.e. ranks per node or per locality region;
// - the value size: width x value_bytes;
// - the shortlist: every candidate's backend and options, in order (another shortlist, or
//   the same backends with other options, is another question);
// - the machine: the model's network tag (ModelSettings::network_tag, as the model cache
//   keys its calibration) and the MPI library's version string, so that a file in a home
//   directory shared by two clusters, or kept across an MPI upgrade, is not reused.
// The value: the winner and every candidate's median (seconds per exchange, the slowest
// rank's, as tune.cpp decides); a dropped candidate has none.
//
// The file is text, one entry per line after a versioned header:
//   # sparsecomm tune cache v1: ...
//   pattern=<32 hex> ranks=4 regions=2 layout=<16 hex> unit=1x8 shortlist=a,b,p2p options=<16 hex> | winner=b medians=a:1.2e-05,b:9.8e-06,p2p:1.4e-05
// Only rank 0 reads it, and broadcasts what it found, so every rank takes the same
// decision. Anything wrong with the file (missing, unreadable, another format or version,
// a malformed line, an entry that does not fit the shortlist, anything but a regular file
// of at most kMaxBytes, e.g. a pipe that would block rank 0) is a miss with a one-line
// note, never an error: the plan then measures, as without a cache. After a measured
// decision rank 0 rewrites the file through a temporary one (mkstemp: a fresh name beside
// it, never a file someone planted) renamed over it (atomic: a
// reader sees the old or the new file, never a part), keeping the other valid entries and
// replacing its own; a file that is not a tune cache is never overwritten. Two launches
// that write at once keep one of their entries.
#include "comm/plan/tune_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/hash.hpp"
#include "core/parse.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::detail {

namespace {

constexpr const char* kHeader = "# sparsecomm tune cache v1";
constexpr long long kMaxBytes = 1 << 20;  // a cache file larger than this is not read
constexpr const char* kHeaderText = ": auto's tune=measure decisions, one per line (docs/cli.md)";

uint64_t mix(uint64_t h, uint64_t x) { return splitmix64(h ^ x); }
uint64_t mix(uint64_t h, const std::string& s) {
  h = mix(h, s.size());
  for (unsigned char ch : s) h = mix(h, ch);
  return h;
}

uint64_t side_hash(uint64_t h, const PatternSide& s) {
  h = mix(h, s.ranks.size());
  for (size_t i = 0; i < s.ranks.size(); ++i) h = mix(mix(h, static_cast<uint64_t>(s.ranks[i])), s.count(static_cast<int>(i)));
  h = mix(h, s.indices.size());
  for (int32_t x : s.indices) h = mix(h, static_cast<uint32_t>(x));
  h = mix(h, s.global_ids.size());
  for (int64_t g : s.global_ids) h = mix(h, static_cast<uint64_t>(g));
  return h;
}

// This rank's share of the pattern's fingerprint: two chains from different seeds.
void rank_fingerprint(const Pattern& p, int rank, uint64_t out[2]) {
  const uint64_t seeds[2] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull};
  for (int lane = 0; lane < 2; ++lane) {
    uint64_t h = mix(seeds[lane], static_cast<uint64_t>(rank));
    h = side_hash(mix(h, 1), p.send());
    out[lane] = side_hash(mix(h, 2), p.recv());
  }
}

std::string hex(uint64_t x) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(x));
  return b;
}

// The entry's key (rank 0, after the reduction): see the file's comment.
std::string cache_key(const uint64_t fp[2], const std::vector<TuneCandidate>& list, const Locality& l,
                      const PlanOptions& o) {
  uint64_t layout = mix(0x452821e638d01377ull, static_cast<uint64_t>(l.size()));
  for (int r : l.regions()) layout = mix(layout, static_cast<uint64_t>(r));
  uint64_t opts = 0xbe5466cf34e90c6cull;
  std::string names;
  for (const TuneCandidate& t : list) {
    names += (names.empty() ? "" : ",") + t.backend;
    opts = mix(mix(opts, t.backend), t.options.backend.canonical());
    opts = mix(mix(mix(opts, static_cast<uint64_t>(t.options.width)), static_cast<uint64_t>(t.options.value_bytes)),
               static_cast<uint64_t>(t.options.persistent_requests));
    opts = mix(opts, t.options.sdde);
  }
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  SPC_MPI(MPI_Get_library_version(version, &len));
  const uint64_t machine = mix(mix(0x13198a2e03707344ull, ModelSettings::defaults().network_tag),
                               std::string(version, static_cast<size_t>(std::max(len, 0))));
  std::ostringstream k;
  k << "pattern=" << hex(fp[0]) << hex(fp[1]) << " ranks=" << l.size() << " regions=" << l.num_regions()
    << " layout=" << hex(layout) << " unit=" << o.width << "x" << o.value_bytes << " shortlist=" << names
    << " options=" << hex(opts) << " machine=" << hex(machine);
  return k.str();
}

struct Entry {
  std::string key, value, winner;
  std::vector<std::pair<std::string, double>> medians;
};

// "winner=<b> medians=<b>:<s>,...": false, with why, if it is not that.
bool parse_value(const std::string& v, Entry& e, std::string& why) {
  std::istringstream in(v);
  std::string w, m, extra;
  if (!(in >> w >> m) || (in >> extra) || w.rfind("winner=", 0) != 0 || m.rfind("medians=", 0) != 0)
    return why = "not 'winner=<backend> medians=<backend>:<seconds>,...'", false;
  e.winner = w.substr(7), e.medians.clear();
  std::istringstream list(m.substr(8));
  bool has_winner = false;
  for (std::string item; std::getline(list, item, ',');) {
    const size_t colon = item.find(':');
    double s = 0;
    if (colon == std::string::npos || colon == 0 || !parse_double(item.substr(colon + 1), s) || s < 0)
      return why = "median '" + item + "' is not <backend>:<seconds>", false;
    e.medians.emplace_back(item.substr(0, colon), s);
    has_winner = has_winner || e.medians.back().first == e.winner;
  }
  if (e.winner.empty() || !has_winner) return why = "the winner has no median", false;
  e.value = v;
  return true;
}

// "<key> | <value>".
bool parse_entry(const std::string& line, Entry& e, std::string& why) {
  const size_t bar = line.find(" | ");
  if (bar == std::string::npos || bar == 0 || line.find(" | ", bar + 3) != std::string::npos)
    return why = "not '<key> | <value>'", false;
  e.key = line.substr(0, bar);
  return parse_value(line.substr(bar + 3), e, why);
}

// The file as rank 0 finds it.
struct CacheFile {
  enum Kind { absent, unreadable, foreign, ours } kind = absent;
  std::string why;                 ///< absent, unreadable, foreign: in words
  std::vector<std::string> lines;  ///< ours: the lines after the header
};

CacheFile read_cache(const std::string& path) {
  CacheFile f;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    f.kind = err == ENOENT ? CacheFile::absent : CacheFile::unreadable;
    f.why = err == ENOENT ? "no file " + path + " yet" : "cannot read " + path + ": " + std::strerror(err);
    return f;
  }
  if (S_ISDIR(st.st_mode)) return f.kind = CacheFile::unreadable, f.why = path + " is a directory", f;
  if (!S_ISREG(st.st_mode)) return f.kind = CacheFile::unreadable, f.why = path + " is not a regular file", f;
  if (st.st_size > kMaxBytes)
    return f.kind = CacheFile::unreadable, f.why = path + " is larger than " + std::to_string(kMaxBytes) + " bytes", f;
  std::ifstream in(path);
  if (!in) return f.kind = CacheFile::unreadable, f.why = "cannot read " + path + ": " + std::strerror(errno), f;
  std::string first;
  if (!std::getline(in, first)) {
    if (in.bad()) return f.kind = CacheFile::unreadable, f.why = "cannot read " + path, f;
    return f.kind = CacheFile::absent, f.why = path + " is empty", f;
  }
  const std::string h = kHeader;
  if (first.compare(0, h.size(), h) != 0 || (first.size() > h.size() && first[h.size()] != ':')) {
    if (first.size() > 60) first = first.substr(0, 60) + "...";
    return f.kind = CacheFile::foreign, f.why = path + " is not a v1 tune cache (its first line: '" + first + "')", f;
  }
  for (std::string line; std::getline(in, line);) f.lines.push_back(line);
  if (in.bad()) return f.kind = CacheFile::unreadable, f.why = "cannot read " + path, f;
  f.kind = CacheFile::ours;
  return f;
}

// Rank 0: what it broadcasts. 'H' + note + '\n' + value for a hit, 'M' + note for a miss.
std::string look_up(const std::string& path, const std::string& key) {
  const CacheFile f = read_cache(path);
  if (f.kind != CacheFile::ours) return "Mmiss: " + f.why;
  std::string found;
  for (size_t i = 0; i < f.lines.size(); ++i) {
    Entry e;
    std::string why;
    if (f.lines[i].empty()) continue;
    if (!parse_entry(f.lines[i], e, why))
      return "Mmiss: " + path + " line " + std::to_string(i + 2) + " is malformed (" + why + ")";
    if (e.key == key) found = e.value;
  }
  if (found.empty()) return "Mmiss: no entry for this pattern, layout, value size and shortlist in " + path;
  return "Hfrom cache " + path + "\n" + found;
}

// Every rank: the broadcast answer, fitted to the shortlist.
void take(const std::string& msg, const std::vector<TuneCandidate>& list, TuneCacheLookup& r) {
  r.note = msg.substr(1);
  if (msg[0] != 'H') return;
  const size_t nl = r.note.find('\n');
  const std::string value = r.note.substr(nl + 1);
  r.note.resize(nl);
  Entry e;
  std::string why;
  const auto position = [&](const std::string& b) {
    for (size_t j = 0; j < list.size(); ++j)
      if (list[j].backend == b) return j;
    return TuneCacheLookup::kMiss;
  };
  if (!parse_value(value, e, why)) {
    r.note = "miss: the entry is malformed (" + why + ")";
    return;
  }
  r.medians.assign(list.size(), std::numeric_limits<double>::quiet_NaN());
  for (const auto& [b, s] : e.medians) {
    const size_t j = position(b);
    if (j == TuneCacheLookup::kMiss) {
      r.note = "miss: the entry names " + b + ", not a candidate", r.medians.clear();
      return;
    }
    r.medians[j] = s;
  }
  r.winner = position(e.winner);
}

}  // namespace

std::string tune_cache_path(const PlanOptions& o) {
  const std::string p = o.backend.get("tune_cache", ModelSettings::defaults().tune_cache);
  return p == "none" ? "" : p;
}

TuneCacheLookup tune_cache_lookup(const std::string& path, const std::vector<TuneCandidate>& shortlist,
                                  const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) {
  int rank = 0;
  SPC_MPI(MPI_Comm_rank(c, &rank));
  uint64_t mine[2], fp[2] = {0, 0};
  rank_fingerprint(p, rank, mine);
  SPC_MPI(MPI_Reduce(mine, fp, 2, MPI_UINT64_T, MPI_BXOR, 0, c));
  TuneCacheLookup r;
  std::string msg = "O";  // (off: rank 0 names no file)
  if (rank == 0 && !path.empty()) {
    // (rank 0 alone reads: whatever goes wrong is a miss it broadcasts, never an exception
    // that would leave the others in the broadcast)
    try {
      r.key = cache_key(fp, shortlist, l, o), r.path = path;
      msg = look_up(path, r.key);
    } catch (const std::exception& e) {
      msg = std::string("Mmiss: cannot read ") + path + ": " + e.what();
    }
  }
  int64_t n = static_cast<int64_t>(msg.size());
  SPC_MPI(MPI_Bcast(&n, 1, MPI_INT64_T, 0, c));
  msg.resize(static_cast<size_t>(n));
  SPC_MPI(MPI_Bcast(&msg[0], static_cast<int>(n), MPI_CHAR, 0, c));
  r.on = msg[0] != 'O';
  if (r.on) take(msg, shortlist, r);
  return r;
}

namespace {
std::string store(const TuneCacheLookup& at, const std::vector<TuneCandidate>& shortlist, size_t winner,
                  const std::vector<double>& medians) {
  if (!at.on || at.path.empty() || winner >= shortlist.size()) return "";
  const CacheFile f = read_cache(at.path);
  if (f.kind == CacheFile::unreadable || f.kind == CacheFile::foreign) return "not stored: " + f.why;
  std::string text = std::string(kHeader) + kHeaderText + "\n";
  int dropped = 0;
  for (const std::string& line : f.lines) {
    Entry e;
    std::string why;
    if (line.empty()) continue;
    if (!parse_entry(line, e, why)) {
      ++dropped;
      continue;
    }
    if (e.key != at.key) text += line + "\n";
  }
  std::string value = "winner=" + shortlist[winner].backend + " medians=";
  for (size_t j = 0; j < shortlist.size() && j < medians.size(); ++j) {
    if (!std::isfinite(medians[j])) continue;
    char s[32];
    std::snprintf(s, sizeof s, "%.9g", medians[j]);
    value += (value.back() == '=' ? "" : ",") + shortlist[j].backend + ":" + s;
  }
  text += at.key + " | " + value + "\n";
  std::string tmp = at.path + ".XXXXXX";
  const int fd = ::mkstemp(&tmp[0]);  // (a fresh file, mode 0600, never one planted there)
  if (fd < 0) return "not stored: cannot write beside " + at.path + ": " + std::strerror(errno);
  bool written = true;
  for (size_t done = 0; written && done < text.size();) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    written = w > 0;
    if (written) done += static_cast<size_t>(w);
  }
  if (::close(fd) != 0) written = false;
  if (!written) {
    std::remove(tmp.c_str());
    return "not stored: cannot write " + tmp;
  }
  if (std::rename(tmp.c_str(), at.path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return "not stored: cannot replace " + at.path + ": " + std::strerror(err);
  }
  return "stored in " + at.path + (dropped ? " (" + std::to_string(dropped) + " malformed lines dropped)" : "");
}

}  // namespace

std::string tune_cache_store(const TuneCacheLookup& at, const std::vector<TuneCandidate>& shortlist, size_t winner,
                             const std::vector<double>& medians) {
  try {  // (rank 0 alone, inside a wait: a failure to store costs the next launch a measurement, nothing else)
    return store(at, shortlist, winner, medians);
  } catch (const std::exception& e) {
    return std::string("not stored: ") + e.what();
  }
}

}  // namespace sparsecomm::detail

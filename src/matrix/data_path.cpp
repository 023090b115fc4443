#include "matrix/data_path.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string_view>
#include <utility>

#include "comm/error.hpp"
#include "matrix/mtx_reader.hpp"

namespace sparsecomm {
namespace {

namespace fs = std::filesystem;

// Matrix Market extensions, plain first: when both exist the plain file is cheaper to read.
constexpr const char* kExts[] = {".mtx", ".mtx.gz"};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // follows symlinks; false on any error
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// Absolute, with "..", "." and symlinks resolved as far as the path exists, so that
// "data/../data" and a symlink to the same directory count once.
std::string canonical_dir(const std::string& dir) {
  std::error_code ec;
  fs::path abs = fs::absolute(dir, ec);
  if (ec) abs = dir;
  fs::path c = fs::weakly_canonical(abs, ec);
  if (ec) c = abs.lexically_normal();
  std::string s = c.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// The Matrix Market extension of a file name ("" if none).
std::string_view mtx_ext(std::string_view name) {
  if (ends_with(name, ".mtx.gz")) return ".mtx.gz";
  if (ends_with(name, ".mtx")) return ".mtx";
  return "";
}

// Regular files and directories of `dir` (sorted by name, so results never depend on
// directory order); unreadable directories count as empty.
void list_dir(const fs::path& dir, std::vector<std::string>* files, std::vector<std::string>* dirs) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code ec2;
    if (files && it->is_regular_file(ec2)) files->push_back(name);
    else if (dirs && it->is_directory(ec2)) dirs->push_back(name);
  }
  if (files) std::sort(files->begin(), files->end());
  if (dirs) std::sort(dirs->begin(), dirs->end());
}

// Looks for `name_or_path` in one search directory. `base` is the name without its
// extension, `exts` the extensions to try.
std::string find_in(const fs::path& dir, const std::string& base, const std::vector<std::string>& exts) {
  // 1. The name as a relative file: "HB_bcsstk01.mtx", "HB/bcsstk01.mtx", "bcsstk01.mtx".
  for (const auto& e : exts)
    if (is_file(dir / (base + e))) return (dir / (base + e)).string();
  const auto slash = base.find('/');
  if (slash != std::string::npos) {
    if (base.find('/', slash + 1) != std::string::npos) return "";
    // 2. "Group/Name": the flat file name used in shared/data ("HB_bcsstk01.mtx") and
    //    ssget's extracted archive layout (MM/HB/bcsstk01/bcsstk01.mtx).
    const std::string group = base.substr(0, slash), name = base.substr(slash + 1);
    if (group.empty() || name.empty()) return "";
    for (const auto& e : exts) {
      const fs::path flat = dir / (group + "_" + name + e);
      if (is_file(flat)) return flat.string();
      const fs::path ssget = dir / "MM" / group / name / (name + e);
      if (is_file(ssget)) return ssget.string();
    }
    return "";
  }
  // 3. A bare name ("bcsstk01", "dwt_162"): any "<Group>_<name>" file, or ssget's
  //    MM/<Group>/<name>/<name>.mtx. Names are sorted, so the choice is deterministic.
  std::vector<std::string> files, groups;
  list_dir(dir, &files, nullptr);
  for (const auto& e : exts) {
    const std::string suffix = "_" + base + e;
    for (const auto& f : files)
      if (f.size() > suffix.size() && ends_with(f, suffix)) return (dir / f).string();
  }
  if (is_dir(dir / "MM")) {
    list_dir(dir / "MM", nullptr, &groups);
    for (const auto& e : exts)
      for (const auto& g : groups) {
        const fs::path p = dir / "MM" / g / base / (base + e);
        if (is_file(p)) return p.string();
      }
  }
  return "";
}

}  // namespace

std::vector<std::string> data_search_path() {
  std::vector<std::string> raw;
  if (const char* env = std::getenv("SPARSECOMM_DATA")) {
    std::string_view s(env);
    while (!s.empty()) {
      const auto colon = s.find(':');
      const std::string_view entry = s.substr(0, colon);
      if (!entry.empty()) raw.emplace_back(entry);  // "a::b" and a trailing ':' add nothing
      if (colon == std::string_view::npos) break;
      s.remove_prefix(colon + 1);
    }
  }
#ifdef SPARSECOMM_SOURCE_DIR
  raw.emplace_back(SPARSECOMM_SOURCE_DIR "/data");
  raw.emplace_back(SPARSECOMM_SOURCE_DIR "/../shared/data/suitesparse");
#endif
  // Relative to the working directory, for a build or run directory next to the checkout.
  raw.emplace_back("../shared/data/suitesparse");
  raw.emplace_back("shared/data/suitesparse");
  // ssget's cache; it keeps matrices under MM/<Group>/<Name>/.
  const char* archive = std::getenv("SSGET_ARCHIVE");
  if (archive && *archive) raw.emplace_back(archive);
  else if (const char* home = std::getenv("HOME"); home && *home) raw.emplace_back(std::string(home) + "/.config/ssget");

  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& d : raw) {
    std::string c = canonical_dir(d);
    if (seen.insert(c).second) out.push_back(std::move(c));
  }
  return out;
}

std::string find_matrix(const std::string& name_or_path) {
  if (name_or_path.empty()) throw InputError("find_matrix: empty matrix name");
  if (is_file(name_or_path)) return name_or_path;

  const std::string_view ext = mtx_ext(name_or_path);
  const std::string base = name_or_path.substr(0, name_or_path.size() - ext.size());
  std::vector<std::string> exts;
  if (ext.empty()) exts.assign(std::begin(kExts), std::end(kExts));
  else exts.emplace_back(ext);

  const auto dirs = data_search_path();
  // An absolute path that does not exist is not a name to look up.
  if (!fs::path(name_or_path).is_absolute() && !base.empty()) {
    for (const auto& d : dirs) {
      if (!is_dir(d)) continue;
      std::string hit = find_in(d, base, exts);
      if (!hit.empty()) return hit;
    }
  }
  std::string looked;
  for (const auto& d : dirs) looked += (looked.empty() ? "" : ", ") + d;
  throw InputError("matrix '" + name_or_path + "' not found; looked in: " + looked +
                   " (set SPARSECOMM_DATA, or fetch it with ssget where the machine is online)");
}

std::vector<std::string> list_matrices() {
  std::vector<std::string> out;
  std::set<std::string> seen;  // matrix names ("HB_bcsstk01"): the first directory wins
  auto add = [&](const std::string& key, const fs::path& p) {
    if (seen.insert(key).second) out.push_back(p.string());
  };
  for (const auto& d : data_search_path()) {
    if (!is_dir(d)) continue;
    const fs::path dir(d);
    std::vector<std::string> files, subdirs;
    list_dir(dir, &files, &subdirs);
    // Sorted names put "x.mtx" before "x.mtx.gz", so the plain file wins for one name.
    for (const auto& f : files) {
      const auto e = mtx_ext(f);
      if (!e.empty() && f.size() > e.size()) add(f.substr(0, f.size() - e.size()), dir / f);
    }
    for (const auto& sub : subdirs) {
      if (sub == "MM") {
        // ssget layout: MM/<Group>/<Name>/<Name>.mtx
        std::vector<std::string> groups;
        list_dir(dir / "MM", nullptr, &groups);
        for (const auto& g : groups) {
          std::vector<std::string> names;
          list_dir(dir / "MM" / g, nullptr, &names);
          for (const auto& n : names)
            for (const char* e : kExts)
              if (is_file(dir / "MM" / g / n / (n + e))) add(g + "_" + n, dir / "MM" / g / n / (n + e));
        }
        continue;
      }
      // <Group>/<Name>.mtx
      std::vector<std::string> inner;
      list_dir(dir / sub, &inner, nullptr);
      for (const auto& f : inner) {
        const auto e = mtx_ext(f);
        if (!e.empty() && f.size() > e.size()) add(sub + "_" + f.substr(0, f.size() - e.size()), dir / sub / f);
      }
    }
  }
  return out;
}

std::string largest_matrix() {
  std::string best;
  int64_t best_stored = -1;
  for (const auto& p : list_matrices()) {
    try {
      const MtxHeader h = read_mtx_header(p);
      if (h.stored > best_stored) best_stored = h.stored, best = p;
    } catch (const std::exception&) {
      // Not a readable Matrix Market file: not a candidate.
    }
  }
  return best;
}

}  // namespace sparsecomm

#include "sparsecomm/matrix/data_path.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"

namespace sparsecomm {
namespace {

namespace fs = std::filesystem;

// Matrix Market extensions, plain first: when both exist the plain file is cheaper to read.
constexpr const char* kExts[] = {".mtx", ".mtx.gz"};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A colon-separated list ($PATH, $SPARSECOMM_DATA), empty entries kept.
std::vector<std::string> split_colons(const char* list) {
  std::vector<std::string> out;
  if (!list) return out;
  std::string_view s(list);
  while (true) {
    const auto colon = s.find(':');
    out.emplace_back(s.substr(0, colon));
    if (colon == std::string_view::npos) break;
    s.remove_prefix(colon + 1);
  }
  return out;
}

// The directory ssget keeps its downloads in ($SSGET_ARCHIVE, else ~/.config/ssget; "" if
// neither is known).
std::string ssget_archive() {
  if (const char* a = std::getenv("SSGET_ARCHIVE"); a && *a) return a;
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.config/ssget";
  return "";
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
  for (auto& entry : split_colons(std::getenv("SPARSECOMM_DATA")))
    if (!entry.empty()) raw.push_back(std::move(entry));  // "a::b" and a trailing ':' add nothing
#ifdef SPARSECOMM_SOURCE_DIR
  raw.emplace_back(SPARSECOMM_SOURCE_DIR "/data");
  raw.emplace_back(SPARSECOMM_SOURCE_DIR "/../shared/data/suitesparse");
#endif
  // Relative to the working directory, for a build or run directory next to the checkout.
  raw.emplace_back("../shared/data/suitesparse");
  raw.emplace_back("shared/data/suitesparse");
  // ssget's cache; it keeps matrices under MM/<Group>/<Name>/.
  if (std::string archive = ssget_archive(); !archive.empty()) raw.push_back(std::move(archive));

  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& d : raw) {
    std::string c = canonical_dir(d);
    if (seen.insert(c).second) out.push_back(std::move(c));
  }
  return out;
}

namespace {

// ssget (github.com/ginkgo-project/ssget) on PATH, or "".
std::string ssget_program() {
  for (const auto& dir : split_colons(std::getenv("PATH"))) {
    const fs::path exe = fs::path(dir.empty() ? "." : dir) / "ssget";  // an empty entry is "."
    if (is_file(exe) && ::access(exe.c_str(), X_OK) == 0) return exe.string();
  }
  return "";
}

// Runs `argv[0]` with the argument vector `argv` (no shell: a quote or a space in a path
// is just a character), its standard error discarded; returns its standard output and
// whether it exited with 0.
std::pair<std::string, bool> run(const std::vector<std::string>& argv) {
  std::string out;
  int fds[2];
  if (::pipe(fds) != 0) return {out, false};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return {out, false};
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {out, WIFEXITED(status) && WEXITSTATUS(status) == 0};
}

// Fetches "Group/Name" with ssget: its search (-s) gives the collection id, its -e
// downloads and extracts the archive into ssget's directory (MM/<Group>/<Name>/), which
// is on the search path. Ranks of one machine fetching the same matrix take turns on a
// lock file, and whoever comes second finds the file already there. Returns the path, or
// "" with `why` set.
std::string fetch_with_ssget(const std::string& name, std::string& why) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos || name.find('/', slash + 1) != std::string::npos) {
    why = "only Group/Name can be fetched";
    return "";
  }
  const std::string group = name.substr(0, slash), base = name.substr(slash + 1);
  auto plain = [](const std::string& t) {
    return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '+';
    });
  };
  if (!plain(group) || !plain(base)) {
    why = "not a SuiteSparse name";
    return "";
  }
  if (const char* no = std::getenv("SPARSECOMM_NO_FETCH"); no && *no && std::string(no) != "0") {
    why = "SPARSECOMM_NO_FETCH is set";
    return "";
  }
  const std::string prog = ssget_program(), archive = ssget_archive();
  if (prog.empty()) {
    why = "ssget is not on PATH";
    return "";
  }
  if (archive.empty()) {
    why = "no ssget directory ($SSGET_ARCHIVE or $HOME)";
    return "";
  }
  std::error_code ec;
  fs::create_directories(archive, ec);
  const fs::path expected = fs::path(archive) / "MM" / group / base / (base + ".mtx");
  const int lock = ::open((fs::path(archive) / ".sparsecomm_fetch.lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  std::string got;
  if (is_file(expected)) {
    got = expected.string();  // fetched meanwhile by another rank
  } else {
    auto [ids, ok] = run({prog, "--custom-archive", archive, "-s", "[ @group = " + group + " ] && [ @name = " + base + " ]"});
    const long id = ok ? std::strtol(ids.c_str(), nullptr, 10) : 0;
    if (id <= 0) {
      why = ok ? "ssget found no matrix " + name + " in the collection" : "ssget's search failed (offline?)";
    } else {
      auto [path, ok2] = run({prog, "--custom-archive", archive, "-e", "-i", std::to_string(id)});
      while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
      if (const size_t nl = path.rfind('\n'); nl != std::string::npos) path = path.substr(nl + 1);
      if (ok2 && is_file(path)) got = path;
      else why = "ssget could not download matrix " + std::to_string(id) + " (offline?)";
    }
  }
  if (lock >= 0) ::close(lock);  // releases the lock
  return got;
}

}  // namespace

std::string find_matrix(const std::string& name_or_path) {
  if (name_or_path.empty()) throw InputError("find_matrix: empty matrix name");
  if (is_file(name_or_path)) return name_or_path;
  if (is_dir(name_or_path))
    throw InputError("matrix '" + name_or_path + "' is a directory, not a Matrix Market file (give the path of a "
                     ".mtx or .mtx.gz file, or a SuiteSparse name such as HB/bcsstk01)");
  // Something is there that is neither: say what, rather than "not found" after a search.
  {
    std::error_code ec;
    const fs::file_status own = fs::symlink_status(name_or_path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
      throw InputError("matrix '" + name_or_path + "': cannot access it: " + ec.message());
    if (!ec && fs::is_symlink(own)) {
      std::error_code to;
      (void)fs::status(name_or_path, to);  // (is_file() and is_dir() said neither: a link that leads nowhere)
      throw InputError("matrix '" + name_or_path + "' is a symbolic link that cannot be followed: " +
                       (to ? to.message() : std::string("it leads to a special file")));
    }
    if (!ec && fs::exists(own))
      throw InputError("matrix '" + name_or_path +
                       "' is a special file (a FIFO, device or socket), not a Matrix Market file");
  }

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
  // Not on disk: a SuiteSparse name is fetched with ssget where the machine can.
  std::string why;
  if (!fs::path(name_or_path).is_absolute() && ext.empty()) {
    std::string got = fetch_with_ssget(name_or_path, why);
    if (!got.empty()) return got;
  }
  std::string looked;
  for (const auto& d : dirs) looked += (looked.empty() ? "" : ", ") + d;
  throw InputError("matrix '" + name_or_path + "' not found; looked in: " + looked +
                   (why.empty() ? "" : "; not fetched: " + why) +
                   " (set SPARSECOMM_DATA, or install ssget on an online machine: names Group/Name are then "
                   "fetched into $SSGET_ARCHIVE or ~/.config/ssget)");
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

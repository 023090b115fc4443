#pragma once
// JSON records of the programs. Every record starts with where it came from: the library's
// version and git commit, when it was written (UTC, ISO 8601) and on which host, so that
// results collected from several machines and builds stay comparable. Records are built
// with nlohmann::json (Debian's nlohmann-json3-dev) rather than by string concatenation:
// strings are escaped correctly (control characters included) and a non-finite number
// becomes null instead of an unparsable `nan`. ordered_json keeps the fields in the order
// written, which keeps a line readable by eye.
#include <mpi.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "sparsecomm/version.hpp"

namespace sparsecomm::apps {

using Json = nlohmann::ordered_json;

/// A new record of benchmark `bench`: the provenance fields, then "bench".
inline Json json_record(const std::string& bench) {
  char host[256] = "unknown";
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  char when[32] = "";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  Json j;
  j["sparsecomm_version"] = version();
  j["git_commit"] = git_commit();
  j["timestamp"] = when;
  j["host"] = host;
  j["bench"] = bench;
  return j;
}

/// One record per line (JSON Lines). Invalid UTF-8 in a string (a file name, say) is
/// replaced rather than thrown on after a whole benchmark ran.
inline void write_json_line(std::ostream& out, const Json& record) {
  out << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

/// Appends records to the JSON Lines file `path`; a file that cannot be opened is an error
/// (the caller asked for the results to be kept).
class JsonLines {
 public:
  explicit JsonLines(const std::string& path) : out_(path, std::ios::app) {
    if (!out_) throw std::runtime_error("cannot append to JSON file '" + path + "'");
  }
  void write(const Json& record) {
    write_json_line(out_, record);
    if (!out_) throw std::runtime_error("writing a JSON record failed");
  }

 private:
  std::ofstream out_;
};

/// Collective. The JSON Lines file `path` opened for appending on rank 0 of `comm` (nullptr
/// on the other ranks, and everywhere when `path` is empty). If rank 0 cannot open it, every
/// rank throws, so no rank goes on into a collective the others have left.
inline std::unique_ptr<JsonLines> open_json_lines(MPI_Comm comm, const std::string& path) {
  if (path.empty()) return nullptr;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::unique_ptr<JsonLines> out;
  std::string error;
  if (rank == 0) {
    try {
      out = std::make_unique<JsonLines>(path);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  int failed = error.empty() ? 0 : 1;
  MPI_Bcast(&failed, 1, MPI_INT, 0, comm);
  if (failed) throw std::runtime_error(rank == 0 ? error : "cannot append to JSON file '" + path + "' (rank 0)");
  return out;
}

}  // namespace sparsecomm::apps

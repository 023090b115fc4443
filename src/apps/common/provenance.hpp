#pragma once
// What every JSON record says about where it came from: the library's version and git
// commit, when it was written (UTC, ISO 8601) and on which host, so that results collected
// from several machines and builds stay comparable.
#include <unistd.h>

#include <ctime>
#include <string>

#include "common/cli.hpp"
#include "sparsecomm/version.hpp"

namespace sparsecomm::apps {

/// The opening of a JSON record: "{" and the provenance fields, each followed by a comma,
/// so the caller goes on with its own fields: js << json_open() << "\"bench\":\"x\",...}".
inline std::string json_open() {
  char host[256] = "unknown";
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  char when[32] = "";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string("{\"sparsecomm_version\":\"") + version() + "\",\"git_commit\":\"" + json_escape(git_commit()) +
         "\",\"timestamp\":\"" + when + "\",\"host\":\"" + json_escape(host) + "\",";
}

}  // namespace sparsecomm::apps

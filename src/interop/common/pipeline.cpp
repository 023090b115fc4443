// The entry points' shared steps (pipeline.hpp).
#include "interop/common/pipeline.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/core/error.hpp"
#include "core/parse.hpp"

namespace sparsecomm::interop {

// The zero-code layers' users chose no backend at all, so auto picks one; the explicit
// APIs' callers get what they would have written themselves: one message per neighbor, no
// model and no locality needed (plan.hpp, kDefaultBackend).
const char* default_backend(EntryPoint e) {
  switch (e) {
    case EntryPoint::petsc_sf:
    case EntryPoint::hypre_hook:
    case EntryPoint::pmpi: return kInterposedDefaultBackend;
    case EntryPoint::petsc_mat:
    case EntryPoint::capi: break;
  }
  return kDefaultBackend;
}

std::vector<NamedValue> named(const PlanSettings& s, const SettingNames& n) {
  std::vector<NamedValue> v = {{n.backend, s.backend}, {n.regions, s.regions}};
  if (n.sdde) v.push_back({n.sdde, s.sdde});
  v.push_back({n.options, s.options});
  return v;
}

void validate(const PlanSettings& s, const SettingNames& n, int regions_ranks) {
  backend_hooks(s.backend);  // an unknown name: InputError listing the valid ones
  if (n.sdde) Sdde::check_strategy(s.sdde);
  BackendOptions opts;
  opts.set_list(s.options);
  if (const std::string e = validate_backend_options(s.backend, backend_option_specs(s.backend), opts); !e.empty())
    throw InputError(std::string(n.options) + ": " + e);
  if (regions_ranks > 0)
    if (const std::string e = region_spec_error(s.regions, regions_ranks); !e.empty())
      throw InputError(std::string(n.regions) + ": " + e);
}

void agree_checked(MPI_Comm comm, const std::function<void()>& checks, const std::vector<NamedValue>& settings,
                   const std::string& where_set, const std::vector<NamedValue>* compared) {
  std::string error;
  try {
    checks();
  } catch (const std::exception& e) {
    error = e.what();
  }
  agree_settings(comm, error, settings, where_set, compared);
}

void exit_with(const std::string& who, const std::string& error) {
  std::fprintf(stderr, "%s: error: %s\n", who.c_str(), error.c_str());
  std::fflush(stderr);
  std::exit(2);
}

void report_error(MPI_Comm comm, const char* who, const std::string& error) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  std::fprintf(stderr, "%s [rank %d]: error: %s\n", who, rank, error.c_str());
  std::fflush(stderr);
}

void exit_on_every_rank(MPI_Comm comm, const char* who, const std::string& error, bool meet) {
  report_error(comm, who, error);
  if (meet) PMPI_Barrier(comm);
  std::exit(2);
}

std::vector<std::pair<std::string, std::string>> sparsecomm_keys(MPI_Info info, int* code) {
  std::vector<std::pair<std::string, std::string>> out;
  int n = 0, rc = info == MPI_INFO_NULL ? MPI_SUCCESS : PMPI_Info_get_nkeys(info, &n);
  for (int i = 0; i < n && rc == MPI_SUCCESS; ++i) {
    char key[MPI_MAX_INFO_KEY + 1] = {0};
    int len = 0, flag = 0;
    rc = PMPI_Info_get_nthkey(info, i, key);
    if (rc != MPI_SUCCESS || std::strncmp(key, "sparsecomm_", 11) != 0) continue;  // not ours: ignored, as MPI does
    rc = PMPI_Info_get_valuelen(info, key, &len, &flag);
    if (rc != MPI_SUCCESS || !flag) continue;
    std::string value(static_cast<size_t>(len) + 1, '\0');
    rc = PMPI_Info_get(info, key, len, value.data(), &flag);
    value.resize(static_cast<size_t>(len));
    if (rc == MPI_SUCCESS && flag) out.emplace_back(key, value);
  }
  if (code) *code = rc;
  return out;
}

void read_flag(std::string* bad, const std::string& name, const std::string& v, bool* out) {
  if (!parse_bool(v, *out) && bad->empty())
    *bad = name + "='" + v + "' is not a boolean (true/false, 1/0, yes/no, on/off)";
}

void read_int(std::string* bad, const std::string& name, const std::string& v, int* out) {
  int64_t x = 0;
  if (parse_int(v, x) && x >= INT32_MIN && x <= INT32_MAX) *out = static_cast<int>(x);
  else if (bad->empty()) *bad = name + "='" + v + "' is not an integer";
}

void read_bytes(std::string* bad, const std::string& name, const std::string& v, int64_t lo, int64_t hi,
                int64_t* out) {
  int64_t x = 0;
  if (parse_int(v, x) && x >= lo && x <= hi) *out = x;
  else if (bad->empty())
    *bad = name + "='" + v + "' is not a number of bytes from " + std::to_string(lo) + " to " + std::to_string(hi);
}

}  // namespace sparsecomm::interop

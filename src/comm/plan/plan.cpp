#include "sparsecomm/comm/plan/plan.hpp"

#include "core/hash.hpp"
#include "comm/plan/registry.hpp"

#include <algorithm>
#include <cstdio>
#include <climits>
#include <map>

namespace sparsecomm {

Plan::Plan(std::string name, const Pattern& pattern, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
    : name_(std::move(name)),
      pattern_(pattern),
      loc_(loc),
      comm_(comm),
      opt_(opt),
      elem_bytes_(static_cast<int64_t>(opt.width) * opt.value_bytes),
      send_buf_(static_cast<size_t>(pattern.send().size() * elem_bytes_)),
      recv_buf_(static_cast<size_t>(pattern.recv().size() * elem_bytes_)) {
  // Ghosts numbered in the order they arrive (PETSc's and Hypre's ghost layouts: by owner,
  // then by global index): unpacking is one memcpy.
  auto identity = [](const std::vector<int32_t>& v) {
    for (size_t k = 0; k < v.size(); ++k)
      if (v[k] != static_cast<int32_t>(k)) return false;
    return true;
  };
  recv_identity_ = identity(pattern.recv().indices);
  send_identity_ = identity(pattern.send().indices);
}

void Plan::check_type(size_t value_size, const char* call) const {
  if (static_cast<int>(value_size) != opt_.value_bytes)
    throw InputError(detail::value_size_mismatch("Plan(" + name_ + ")::" + call, value_size, opt_.value_bytes));
}

bool Plan::do_test() {
  throw NotImplementedError("Plan(" + name_ + "): test() is not implemented for this backend");
}

void Plan::finish_if_active() noexcept {
  if (!active_) return;
  active_ = false;
  detail::complete_in_destructor("Plan(" + name_ + ")", [this] { do_wait(); });
}

namespace detail {
void complete_in_destructor(const std::string& plan, const std::function<void()>& wait) noexcept {
  try {
    wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparsecomm: %s destroyed during an exchange; completing it failed: %s\n", plan.c_str(),
                 e.what());
  }
}

std::string value_size_mismatch(const std::string& call, size_t got, int want) {
  return call + ": values of " + std::to_string(got) + " bytes, but the plan was set up for " + std::to_string(want);
}
}  // namespace detail

namespace {
auto& registry() { return detail::halo_registry(); }
}  // namespace

std::vector<OptionSpec> backend_option_specs(const std::string& name) {
  const BackendHooks& h = registry().hooks(name);
  std::vector<OptionSpec> specs = h.options;
  if (h.chooses_among_others)  // what the candidates read, handed on to each (first declaration of a key wins)
    for (const auto& other : registry().names()) {
      if (registry().hooks(other).chooses_among_others) continue;
      for (const auto& s : registry().hooks(other).options)
        if (!declares_option(specs, s.key)) specs.push_back(s);
    }
  return specs;
}

std::unique_ptr<Plan> make_plan(const std::string& backend, const Pattern& pattern, const Locality& loc, MPI_Comm comm,
                                const PlanOptions& opt) {
  std::string err;
  const auto* entry = registry().find(backend);
  if (!entry) {
    err = registry().unknown(backend);
  } else if (std::string why = validate_backend_options(backend, backend_option_specs(backend), opt.backend);
             !why.empty()) {
    err = "make_plan: " + why;
  } else if (opt.width < 1 || opt.value_bytes < 1) {
    err = "make_plan: width and value_bytes must be at least 1";
  } else if ((pattern.send().size() + pattern.recv().size()) * opt.width * int64_t{opt.value_bytes} > INT32_MAX) {
    err = "make_plan: more than 2^31 bytes in one exchange on this rank";
  } else if (loc.size() != comm_size(comm)) {
    err = "make_plan: the locality describes " + std::to_string(loc.size()) + " ranks, the communicator has " +
          std::to_string(comm_size(comm));
  }
  // Every rank must ask for the same backend and options (a canonical string's hash), and
  // the pattern must be consistent: what I send to d is what d expects from me (a hash of
  // every edge with its count, summed from both ends).
  const std::string canon = backend + "|" + opt.sdde + "|" + std::to_string(opt.width) + "|" +
                            std::to_string(opt.value_bytes) + "|" + (opt.persistent_requests ? "1" : "0") + "|" +
                            opt.backend.canonical(entry ? backend_option_specs(backend) : std::vector<OptionSpec>{});
  const uint64_t h = std::hash<std::string>{}(canon);
  const int me = comm_rank(comm);
  uint64_t sums[2] = {0, 0}, tot[2];
  for (int i = 0; i < pattern.send().num_neighbors(); ++i) sums[0] += detail::edge_hash(me, pattern.send().ranks[i], pattern.send().count(i));
  for (int i = 0; i < pattern.recv().num_neighbors(); ++i) sums[1] += detail::edge_hash(pattern.recv().ranks[i], me, pattern.recv().count(i));
  uint64_t v[2] = {h, ~h}, mx[2];
  SPC_MPI(MPI_Allreduce(v, mx, 2, MPI_UINT64_T, MPI_MAX, comm));
  SPC_MPI(MPI_Allreduce(sums, tot, 2, MPI_UINT64_T, MPI_SUM, comm));
  if (err.empty() && (mx[0] != h || mx[1] != ~h)) err = "make_plan: ranks asked for different backends or options";
  if (err.empty() && tot[0] != tot[1])
    err = "make_plan: inconsistent pattern (a rank's send count to a neighbor differs from what that neighbor "
          "expects to receive, or one side does not list the other)";
  agree(comm, err);
  const double t0 = MPI_Wtime();
  std::unique_ptr<Plan> plan = agreed(comm, [&] { return entry->factory(pattern, loc, comm, opt); });
  plan->setup_stats_mut().add_time("setup.backend", MPI_Wtime() - t0);
  return plan;
}

}  // namespace sparsecomm

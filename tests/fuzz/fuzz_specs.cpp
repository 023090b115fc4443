// libFuzzer target over every text a user writes besides a matrix file: backend option lists
// ("k=4,aware=true") validated against every registered backend's declarations, region
// layouts ("ppn:4", "list:0,0,1"), topology specs ("er:0.1,7"), generator specs
// ("lap3d:8,8,8") and model files (`key value` lines). The first byte picks the parser and
// the size the spec is read for; the rest is the text.
//
// What each parser promises: it returns a result that respects the spec's own bounds, or it
// raises InputError. Anything else -- a crash, a sanitizer report, another exception type,
// a label or neighbor out of range -- is a finding (std::abort).
//
// One process, MPI_COMM_SELF (the collective parsers run on one rank; the agreement they
// add is tested by the MPI suites). Allocations are bounded by SPARSECOMM_MEMORY_LIMIT
// (64 MB here), so a spec asking for a huge grid is refused as it would be for a user.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/plan/backend_options.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/interop/environment.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/topology.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/generators.hpp"

namespace {

using namespace sparsecomm;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_specs: %s\n", what);
  std::abort();
}

void check_labels(const std::vector<int>& labels, int p) {
  if (labels.empty()) return;  // a spec that needs hosts
  if (static_cast<int>(labels.size()) != p) finding("layout_labels: wrong length");
  for (int l : labels)
    if (l < 0 || l >= p) finding("layout_labels: label out of range");
}

void options(const std::string& text) {
  BackendOptions o;
  o.set_list(text);  // InputError on a malformed list
  for (const auto& name : backend_names()) {
    const auto specs = backend_option_specs(name);
    const std::string why = validate_backend_options(name, specs, o);
    // Accepted values must read back as their declared kind without throwing
    if (!why.empty()) continue;
    for (const auto& s : specs) {
      if (!o.has(s.key)) continue;
      switch (s.kind) {
        case OptionSpec::Kind::integer: {
          const int64_t v = o.get_int(s.key, 0);
          if (v < s.min || v > s.max) finding("validated integer option outside its bounds");
          break;
        }
        case OptionSpec::Kind::boolean: o.get_bool(s.key, false); break;
        case OptionSpec::Kind::real: o.get_real(s.key, 0.0); break;
        default: break;
      }
    }
  }
}

void regions(const std::string& spec, int p) {
  std::string canonical;
  const std::string why = region_spec_error(spec, p);
  try {
    check_labels(layout_labels(spec, p, &canonical), p);
  } catch (const InputError&) {
    if (why.empty()) finding("layout_labels throws on a spec region_spec_error accepts");
  }
  try {
    check_labels(virt::regions_from_spec(p, spec), p);
  } catch (const InputError&) {
  }
  // On one rank Locality::parse must agree with the local check
  try {
    const Locality loc = Locality::parse(MPI_COMM_SELF, spec);
    if (loc.size() != 1 || loc.region() != 0) finding("Locality::parse on one rank: not one region");
    if (!region_spec_error(spec, 1).empty()) finding("Locality::parse accepts what region_spec_error rejects");
  } catch (const InputError&) {
    if (region_spec_error(spec, 1).empty()) finding("Locality::parse rejects what region_spec_error accepts");
  }
}

void topology(const std::string& spec, int p) {
  try {
    for (int r = 0; r < p; r += 1 + p / 7)
      for (int d : spec_destinations(spec, r, p))
        if (d < 0 || d >= p) finding("spec_destinations: neighbor out of range");
  } catch (const InputError&) {
  }
  try {
    const virt::Graph g = virt::Graph::from_spec(p, spec);
    if (g.p != p) finding("Graph::from_spec: wrong size");
  } catch (const InputError&) {
  }
  try {
    Topology::parse(MPI_COMM_SELF, spec);
  } catch (const InputError&) {
  }
}

void generator(const std::string& spec) {
  try {
    const auto a = gen::from_spec(MPI_COMM_SELF, spec);
    if (a.global_nnz() < 0) finding("generator: negative nnz");
  } catch (const InputError&) {
  }
}

void model(const std::string& text) {
  static const std::string path = "/tmp/sparsecomm_fuzz_model." + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) finding("cannot write the model file");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  try {
    const ModelParams m = ModelParams::load(path);
    (void)m.describe();
  } catch (const InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  setenv("SPARSECOMM_MEMORY_LIMIT", "64000000", 1);
  MPI_Init(argc, argv);
  sparsecomm::apply_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int which = data[0] % 5;
  const int p = 1 + data[0] / 5 % 48;  // 1..48 ranks for the local parsers
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (which) {
      case 0: options(text); break;
      case 1: regions(text, p); break;
      case 2: topology(text, p); break;
      case 3: generator(text); break;
      default: model(text); break;
    }
  } catch (const InputError&) {
    // malformed input: the expected answer
  }
  return 0;
}

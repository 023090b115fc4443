// sparsecomm backends: every registered backend of both exchange shapes, with its
// description and the options it declares (BackendHooks::options), from the registries
// themselves, so a backend added in its own file (or a test's) is listed without an edit here.
#include <iostream>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "common/app_main.hpp"
#include "common/options.hpp"

namespace sparsecomm::apps {

int backends_main(int argc, char** argv) {
  Options o({}, "usage: sparsecomm backends\n"
                "lists the halo (alltoallv-shaped) and gather (allgather-shaped) backends and their options");
  if (!parse_or_help(MPI_COMM_WORLD, o, argc, argv)) return 0;
  if (comm_rank(MPI_COMM_WORLD) != 0) return 0;
  std::cout << "halo backends (make_plan; sparsecomm spmv --backend NAME --option key=value):\n";
  for (const auto& b : backend_names()) {
    const auto& h = backend_hooks(b);
    std::cout << "- " << b << ": " << backend_description(b) << (h.counts ? "" : " [no plan statistics]") << "\n"
              << describe_options(h.options);
    if (h.chooses_among_others) std::cout << "  (also takes the options of the backends it chooses among)\n";
  }
  std::cout << "\ngather backends (make_gather_plan):\n";
  for (const auto& b : gather_backend_names())
    std::cout << "- " << b << ": " << gather_backend_description(b) << "\n"
              << describe_options(gather_backend_option_specs(b));
  return 0;
}

}  // namespace sparsecomm::apps

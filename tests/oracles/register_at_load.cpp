// Linked into test copies of the project's own programs and test suites (oracles/
// CMakeLists.txt): registers the broken backend before main() runs, so that the unmodified
// program lists it among the backends and runs it like any other. Static initialization is
// safe here: registration only fills a function-local static table, no MPI.
#include "oracles/broken_backend.hpp"

namespace {
const bool kRegistered = (sparsecomm::test::register_broken_backends(), true);
}  // namespace

// Linked into test copies of the project's unmodified programs and suites
// (open_backend/CMakeLists.txt): registers p2p_sends_first before main() runs.
#include "open_backend/sends_first.hpp"

namespace {
const bool kRegistered = (sparsecomm::test::register_sends_first(), true);
}  // namespace

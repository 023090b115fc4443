// The version and the commit the library was built from (include/sparsecomm/version.hpp,
// generated; build_info.hpp is rewritten at every build by cmake/BuildInfo.cmake).
#include "sparsecomm/version.hpp"

#include "build_info.hpp"

namespace sparsecomm {

const char* version() { return SPARSECOMM_VERSION_STRING; }
const char* git_commit() { return SPARSECOMM_GIT_COMMIT; }

}  // namespace sparsecomm

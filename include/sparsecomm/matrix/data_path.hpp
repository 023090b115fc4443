#pragma once
// Where matrices are looked up by name or path. In order:
//   1. $SPARSECOMM_DATA (a colon-separated list of directories),
//   2. the project's own data/ directory,
//   3. ../shared/data/suitesparse next to the project (and relative to the working directory),
//   4. the ssget cache ($SSGET_ARCHIVE, default ~/.config/ssget), laid out as MM/<Group>/<Name>/.
// SuiteSparse files are never committed into the project; they are read in place.
#include <string>
#include <vector>

namespace sparsecomm {

/// Directories searched, in order (existing or not).
std::vector<std::string> data_search_path();

/// Resolves a matrix given as a path or a SuiteSparse name: "HB/bcsstk01",
/// "HB_bcsstk01", "bcsstk01" (any "<Group>_bcsstk01.mtx" file), with or without
/// ".mtx" / ".mtx.gz". A "Group/Name" found nowhere is fetched with ssget when it is on
/// PATH (into the ssget cache; SPARSECOMM_NO_FETCH=1 turns that off). Throws InputError
/// listing every directory searched and why nothing was fetched.
std::string find_matrix(const std::string& name_or_path);

/// All Matrix Market files (.mtx, .mtx.gz) found on the search path, first directory wins
/// for equal file names.
std::vector<std::string> list_matrices();

/// The matrix with the most stored entries among list_matrices(); "" when none is found.
std::string largest_matrix();

}  // namespace sparsecomm

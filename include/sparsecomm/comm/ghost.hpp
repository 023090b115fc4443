#pragma once
// Deprecated: GhostScatter is built on a Plan, so it lives above comm/plan, in
// <sparsecomm/kernels/ghost.hpp>. This header forwards there so that existing includes keep
// compiling; include the new one (or the umbrella <sparsecomm/sparsecomm.hpp>). It is the one
// file under comm/ that includes a layer above comm (docs/architecture.md, layer rules).
#include "sparsecomm/kernels/ghost.hpp"

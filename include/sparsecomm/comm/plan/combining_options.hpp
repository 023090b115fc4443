#pragma once
// Message combining as backend options: the keys a combining backend declares (k, theta,
// aware, rounds, schedule), their translation to CombiningOptions, and the one question
// every tool that sweeps combining variants asks of a backend name. Kept out of
// comm/combining.hpp, which is below the plan layer and knows nothing of backends.
#include <string>
#include <vector>

#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/plan/backend_options.hpp"

namespace sparsecomm {

/// The backend options of the combining backends (halo and gather "combined", and any
/// other backend that runs CombiningSchedule): k, theta, aware, rounds (text) and schedule
/// (an attached CombiningSchedule, as CombiningOptions::given).
std::vector<OptionSpec> combining_option_specs();
/// CombiningOptions from backend options (the defaults above for unset keys), with the
/// plan's SDDE strategy for its setup exchanges.
CombiningOptions combining_from(const BackendOptions& o, const std::string& sdde);
/// Sets `c`'s k, theta, aware and rounds (and attaches c.given) in `o`.
void set_combining(BackendOptions& o, const CombiningOptions& c);

/// Whether halo backend `name` itself combines messages: it declares the combining keys
/// (k, theta, aware, rounds) among its own options (`auto` takes them too, to hand on to a
/// combining candidate, but does not combine). What tools sweeping k and awareness ask of
/// a backend (spmm, nbrbench, plan-stats). InputError for an unknown name.
bool halo_backend_combines(const std::string& name);
/// The same for gather backend `name`.
bool gather_backend_combines(const std::string& name);

}  // namespace sparsecomm

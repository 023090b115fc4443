// auto: model-based choice of the backend. Builds every other registered backend's plan
// for the pattern, predicts each one's cost per execution from its deterministic counts
// (comm/model.hpp), and returns the plan with the lowest predicted cost — with
// its option iterations = N > 0, the lowest setup + N x execution cost, where
// setup is each backend's own measured setup time (max over ranks). Auto's own setup is
// therefore the sum of the candidates' setups; the returned plan keeps its backend's name,
// and its setup_stats() hold "auto.predict.<backend>" and "auto.setup.<backend>" (seconds)
// for every candidate, which `sparsecomm info` prints.
#include <algorithm>
#include <limits>

#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {

namespace detail {
void register_auto() {
  register_backend(
      "auto", "model-based choice among the other backends (see sparsecomm_calibrate)",
      [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) -> std::unique_ptr<Plan> {
        const ModelParams m = ModelParams::resolve(c, l, o.backend.get("model", ""));
        const int64_t iterations = o.backend.get_int("iterations", 0);
        // Candidates in order of setup complexity (each backend's BackendHooks::setup_rank,
        // then its name): a tie goes to the simpler one, so the choice is deterministic
        // (with iterations > 0 it also weighs measured setup times, which vary
        // from run to run).
        std::vector<std::string> order;
        for (const auto& n : backend_names())
          if (!backend_hooks(n).chooses_among_others) order.push_back(n);
        std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
          return backend_hooks(a).setup_rank < backend_hooks(b).setup_rank;
        });
        std::unique_ptr<Plan> best;
        double best_cost = std::numeric_limits<double>::infinity();
        std::vector<std::pair<std::string, std::pair<double, double>>> seen;
        for (const auto& name : order) {
          PlanOptions co = o;  // each candidate gets the options it declares (k for combined, ...)
          co.backend = o.backend.only(backend_option_specs(name));
          auto plan = make_plan(name, p, l, c, co);
          const double setup = allreduce_max(c, plan->setup_stats().time("setup.backend"));
          const double iter = predict_iteration(*plan, m, c);
          const double cost = iterations > 0 ? setup + static_cast<double>(iterations) * iter : iter;
          seen.push_back({name, {iter, setup}});
          // Strictly cheaper only (combining that found no groups ties with p2p and loses);
          // inputs are reduced over ranks, so every rank decides the same.
          if (cost < best_cost * (1 - 1e-9)) best_cost = cost, best = std::move(plan);
        }
        for (const auto& [name, v] : seen) {
          best->setup_stats_mut().add_time("auto.predict." + name, v.first);
          best->setup_stats_mut().add_time("auto.setup." + name, v.second);
        }
        return best;
      },
      [] {
        BackendHooks h;  // no counts hook: what it runs depends on measured costs
        h.chooses_among_others = true;
        using K = OptionSpec::Kind;
        // The model file's path may be node-local: ranks agree on the parameters read, not the path.
        OptionSpec model{"model", K::text, "", "performance model: a parameter file, builtin, or empty: $SPARSECOMM_MODEL, else measured on first use "
                          "and cached (machine_model)"};
        model.per_rank = true;
        h.options = {model,
                     {"iterations", K::integer, "0",
                      "exchanges the caller expects: > 0 chooses by setup + iterations x execution cost, 0 by "
                      "execution cost alone",
                      0}};
        return h;
      }());
}
}  // namespace detail

}  // namespace sparsecomm

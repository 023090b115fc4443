#pragma once
// A backend defined outside src/ (docs/adding_a_backend.md walks through it): the proof that
// the backend set is open. "p2p_sends_first" is p2p with the sends posted before the
// receives. Registered with its hooks, it is run by the backend test bodies, listed and run
// by the CLI, counted by plan-stats, weighed by auto and selectable through the C API, with
// no edit under src/ (tests/open_backend/CMakeLists.txt runs each of these). It owns one
// option, "tag" (the message tag, default 4711), which the C API (sparsecomm_tag), the CLI
// (--option tag=N) and auto (handing it on) pass through without knowing it.

namespace sparsecomm {
class Plan;
}

namespace sparsecomm::test {

inline constexpr const char* kSendsFirst = "p2p_sends_first";

/// Registers "p2p_sends_first" (idempotent; no MPI).
void register_sends_first();

/// The message tag a p2p_sends_first plan uses (its option "tag"); -1 for another backend's plan.
int sends_first_tag(const Plan& plan);

}  // namespace sparsecomm::test

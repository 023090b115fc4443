#pragma once
// A deliberately broken backend, registered only by tests, that proves every oracle of the
// project rejects a wrong result: "broken_nan" moves the values exactly like "p2p", then
// overwrites ONE received value (the first one on the lowest rank that receives anything)
// with a quiet-NaN bit pattern. For 8-byte values that is a double NaN; for 4-byte ones a
// float NaN; integers (BFS) see a huge out-of-range value. Both exchange shapes are
// registered under the same name (halo Plan and allgather-shaped GatherPlan).

namespace sparsecomm::test {

/// The name the broken backend registers under.
inline constexpr const char* kBrokenBackend = "broken_nan";

/// Registers "broken_nan" as a halo backend and as a gather backend (idempotent; no MPI).
void register_broken_backends();

}  // namespace sparsecomm::test

/// The same for C programs (tests/capi).
extern "C" void spc_test_register_broken_backends(void);

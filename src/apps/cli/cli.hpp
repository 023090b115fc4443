#pragma once
// The `sparsecomm` command's dispatch, as a library function so that a test program can
// register backends of its own first and then run the very same subcommands
// (tests/oracles: a deliberately broken backend that every verification must reject).

namespace sparsecomm::apps {

/// argv[1] is the subcommand; MPI_Init and MPI_Finalize happen inside. Returns the exit code.
int cli_main(int argc, char** argv);

}  // namespace sparsecomm::apps

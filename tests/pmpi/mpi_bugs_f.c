/* mpi_bugs.h's probes for the Fortran test program (fortran_nbr.F90 binds to them). */
#include "mpi_bugs.h"

int spc_mpi_bug_repeated_edges(int fn) { return mpi_bug_repeated_edges(fn); }

/* sparsecomm inside PETSc with no source change: a PetscSF type "sparsecomm".
 *
 * Every VecScatter of PETSc (MatMult, MatMultTranspose, DM global-to-local, ASM/GASM,
 * VecGhost) is a PetscSF; with
 *
 *   mpirun ./any_petsc_program -dll_append /path/libsparsecomm_petsc.so -sf_type sparsecomm
 *
 * PETSc loads this library, calls PetscDLLibraryRegister_sparsecomm_petsc() (which
 * registers the type) and every star forest set from options runs its Bcast and Reduce
 * through a sparsecomm Plan. Codes that link the library call SparsecommPetscInitialize()
 * after PetscInitialize() instead. Options (shown by -help, printed by PetscSFView):
 *   -sf_sparsecomm_backend NAME   halo backend (auto, p2p, neighbor, aggregated, ...); default auto
 *   -sf_sparsecomm_regions SPEC   locality regions (node, ppn:k, ...); default node
 *   -sf_sparsecomm_sdde NAME      SDDE strategy that builds the pattern; default nbx
 * What the type does natively: Bcast and Reduce of host memory for a contiguous unit (a
 * named type, or a contiguous derived type of one) with MPI_REPLACE, and with MPI_SUM,
 * MPI_PROD, MPI_MAX, MPI_MIN (and PETSc's MPIU_ variants) on double, float, int, long and
 * int64 units. Everything else (FetchAndOp, other ops and units, device memory, a second
 * operation on the same plan while one is in flight) goes to an internal PetscSF of type
 * basic with the same graph, unchanged.
 *
 * C linkage: usable from C and (through PETSc's own options) from Fortran codes. */
#ifndef SPARSECOMM_PETSCSF_SPARSECOMM_H
#define SPARSECOMM_PETSCSF_SPARSECOMM_H

#include <petscmat.h>
#include <petscsf.h>

#define PETSCSFSPARSECOMM "sparsecomm"

/* Registers the PetscSF type "sparsecomm" and its log events. Idempotent; after PetscInitialize(). */
PETSC_EXTERN PetscErrorCode SparsecommPetscInitialize(void);
/* What PETSc calls when -dll_append loads libsparsecomm_petsc.so: SparsecommPetscInitialize(). */
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_sparsecomm_petsc(void);

/* Operations a "sparsecomm" star forest ran through its own plans (native) and handed to
 * its internal basic star forest (delegated), since its creation. An SF of another type is
 * an error (PETSC_ERR_ARG_WRONG). Also composed on every such SF as "SparsecommSFGetCounts_C"
 * (PetscObjectQueryFunction), for programs that loaded the library with -dll_append. */
PETSC_EXTERN PetscErrorCode SparsecommSFGetCounts(PetscSF sf, PetscInt *native, PetscInt *delegated);

/* The MatMult adapter (sparsecomm::petsc::attach) from C: MatMult, MatMultAdd and the
 * transposes of a MATMPIAIJ matrix through a sparsecomm plan (options -sparsecomm_backend,
 * ...; see sparsecomm/interop/petsc/petsc_interop.hpp). On one rank and on other matrix
 * types it does nothing (a -info message says so). */
PETSC_EXTERN PetscErrorCode SparsecommMatAttach(Mat A);

#endif

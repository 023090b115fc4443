# Smoke test of the CombBLAS anchor (src/apps/bfs2d/combblas_anchor.cpp): our BFS variants and
# CombBLAS's top-down BFS on a small R-MAT graph; the exit code fails if any BFS (ours or
# CombBLAS's) does not pass our Graph500 validator. Square grids only (1x1, 2x2).
if(TARGET sparsecomm_bfs_combblas)
  sparsecomm_add_mpi_test(bfs_combblas sparsecomm_bfs_combblas RANKS 1 4 TIMEOUT 180
    ARGS --scale 10 --roots 4)
endif()

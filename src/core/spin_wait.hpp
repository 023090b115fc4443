#pragma once
// The one way a rank waits on shared memory (a flag another rank of its node sets) while
// MPI messages may be in flight: the node window's readers and writers (comm/shm_channel.hpp),
// the SDDE's node rounds (comm/sdde/common.hpp) and the PMPI layer's node exchange (whose
// progress function makes the same probe through PMPI_Iprobe).
#include <mpi.h>
#include <sched.h>

#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::detail {

/// The tag of mpi_progress()'s probe on MPI_COMM_SELF, where sparsecomm sends nothing.
inline constexpr int kProgressProbeTag = 32767;  // the largest tag every MPI must allow

/// One call into MPI's progress engine (Open MPI's is global: every message of this process
/// in flight moves), made so that it cannot return early: an MPI_Iprobe for a message that
/// never comes. A probe that finds a match returns without progressing anything (Open MPI's
/// ob1 calls opal_progress only when nothing matches), so probing a plan's own
/// communicator for any message -- where a message of the next exchange may already wait,
/// unexpected -- left this rank's large sends of an earlier step unacknowledged for good
/// while it waited on its node's window, and the emulated 4x2 cluster deadlocked. (The
/// PMPI layer makes the same probe through PMPI_Iprobe.)
inline void mpi_progress() {
  int flag = 0;
  SPC_MPI(MPI_Iprobe(0, kProgressProbeTag, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE));
}

// Waits until ready(). The first `patience` checks (256 where every rank has a core of its
// own, none where the node is oversubscribed: NodeComm::patience) spin on the flag alone,
// calling progress() every 64 checks: a writer that is nearly done is caught without a
// system call. After them every check yields the core (the rank being waited for may need
// this very core) and calls progress() first, one MPI progress call per yield as MPI's own
// blocking waits make. Fewer would starve this rank's messages in flight: Open MPI runs the
// event library that drives its TCP transport only once per many progress calls
// (opal_progress's event tick), so a large send of an earlier step -- which another node may
// need before it can write what this rank waits for -- would move once per thousands of
// yields, minutes on a loaded node (how the emulated 4x2 cluster's window-wait test stalled).
template <class Ready, class Progress>
void spin_wait(int patience, Ready ready, Progress progress) {
  for (int i = 0; !ready(); ++i) {
    if (i < patience) {
      if (i % 64 == 63) progress();
      continue;
    }
    progress();
    sched_yield();
  }
}

}  // namespace sparsecomm::detail

#pragma once
// The completion verbs of a plan (either shape: Plan or GatherPlan, PlanBase's verbs) whose
// execution is one MPI request: the neighbor backends, where it is MPI's neighborhood
// collective on the plan's distributed graph communicator. do_start() (the backend's)
// posts or starts req_; wait and test complete it.
#include <mpi.h>

#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::detail {

template <class Shape>
class SingleRequest : public Shape {
 protected:
  using Shape::Shape;
  void do_wait() override { SPC_MPI(MPI_Wait(&req_, MPI_STATUS_IGNORE)); }
  bool do_test() override {
    int flag = 0;
    SPC_MPI(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE));
    return flag != 0;
  }

  MPI_Request req_ = MPI_REQUEST_NULL;
};

}  // namespace sparsecomm::detail

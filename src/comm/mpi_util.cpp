#include "comm/mpi_util.hpp"

namespace sparsecomm {

int comm_rank(MPI_Comm comm) {
  int r = 0;
  SPC_MPI(MPI_Comm_rank(comm, &r));
  return r;
}

int comm_size(MPI_Comm comm) {
  int s = 0;
  SPC_MPI(MPI_Comm_size(comm, &s));
  return s;
}

void wait_all(int n, MPI_Request* reqs, MPI_Status* st) {
  if (n <= 0) return;
#ifdef SPARSECOMM_SMPI
  for (int i = 0; i < n; ++i)
    SPC_MPI(MPI_Wait(&reqs[i], st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &st[i]));
#else
  SPC_MPI(MPI_Waitall(n, reqs, st));
#endif
}

Comm::Comm(MPI_Comm parent) {
  SPC_MPI(MPI_Comm_dup(parent, &comm_));
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Comm Comm::adopt(MPI_Comm owned) {
  Comm c;
  c.comm_ = owned;
  if (owned != MPI_COMM_NULL) {
    MPI_Comm_set_errhandler(owned, MPI_ERRORS_RETURN);
    MPI_Comm_rank(owned, &c.rank_);
    MPI_Comm_size(owned, &c.size_);
  }
  return c;
}

void Comm::reset() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

Comm::~Comm() { reset(); }

Comm::Comm(Comm&& o) noexcept : comm_(o.comm_), rank_(o.rank_), size_(o.size_) { o.comm_ = MPI_COMM_NULL; }

Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    reset();
    comm_ = o.comm_;
    rank_ = o.rank_;
    size_ = o.size_;
    o.comm_ = MPI_COMM_NULL;
  }
  return *this;
}

double allreduce_max(MPI_Comm comm, double v) {
  double r = 0;
  SPC_MPI(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, comm));
  return r;
}
int64_t allreduce_max(MPI_Comm comm, int64_t v) {
  int64_t r = 0;
  SPC_MPI(MPI_Allreduce(&v, &r, 1, MPI_INT64_T, MPI_MAX, comm));
  return r;
}
int64_t allreduce_sum(MPI_Comm comm, int64_t v) {
  int64_t r = 0;
  SPC_MPI(MPI_Allreduce(&v, &r, 1, MPI_INT64_T, MPI_SUM, comm));
  return r;
}
int64_t allreduce_min(MPI_Comm comm, int64_t v) {
  int64_t r = 0;
  SPC_MPI(MPI_Allreduce(&v, &r, 1, MPI_INT64_T, MPI_MIN, comm));
  return r;
}

}  // namespace sparsecomm

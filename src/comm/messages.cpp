#include "sparsecomm/comm/messages.hpp"

#include <atomic>
#include <limits>
#include <string>
#ifdef SPARSECOMM_SMPI
#include <simgrid/actor.h>
#endif

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "core/process_default.hpp"

namespace sparsecomm {
namespace {

#ifdef SPARSECOMM_SMPI
// The setting as charge() reads it on the hot path (start()): the seconds, or a flag that
// the value given was bad (the error in the setting).
std::atomic<double> charged_seconds{SmpiMessageCost{}.seconds};
std::atomic<bool> charged_bad{false};
#endif

// Simulated CPU time per started message (see messages.hpp); nothing without SMPI.
void charge(size_t n) {
#ifdef SPARSECOMM_SMPI
  // Every rank has the same setting (one process, set from one environment), so a bad value
  // throws on every rank alike.
  if (charged_bad.load(std::memory_order_relaxed)) throw InputError(detail::process_default<SmpiMessageCost>().error);
  const double cost = charged_seconds.load(std::memory_order_relaxed);
  // Simulated time passes for this rank (smpi_execute would scale by smpi/host-speed).
  if (cost > 0 && n > 0) sg_actor_sleep_for(cost * static_cast<double>(n));
#else
  (void)n;
#endif
}

}  // namespace

void set_smpi_message_cost(const SmpiMessageCost& cost) {
  detail::set_process_default(cost);
#ifdef SPARSECOMM_SMPI
  charged_seconds.store(cost.seconds, std::memory_order_relaxed);
  charged_bad.store(!cost.error.empty(), std::memory_order_relaxed);
#endif
}

size_t Messages::add(bool send, const void* buf, int64_t bytes, int peer, int tag) {
  if (bytes < 0 || bytes > std::numeric_limits<int>::max())
    throw Error("Messages: a message of " + std::to_string(bytes) + " bytes does not fit an MPI count");
  msgs_.push_back({send, const_cast<char*>(static_cast<const char*>(buf)), static_cast<int>(bytes), peer, tag});
  return msgs_.size() - 1;
}

void Messages::init(MPI_Comm comm, bool persistent) {
  free();
  comm_ = comm, persistent_ = persistent;
  reqs_.assign(msgs_.size(), MPI_REQUEST_NULL);
  if (!persistent_) return;
  for (size_t i = 0; i < msgs_.size(); ++i) {
    const Msg& m = msgs_[i];
    if (m.send) SPC_MPI(MPI_Send_init(m.buf, m.bytes, MPI_BYTE, m.peer, m.tag, comm_, &reqs_[i]));
    else SPC_MPI(MPI_Recv_init(m.buf, m.bytes, MPI_BYTE, m.peer, m.tag, comm_, &reqs_[i]));
  }
}

void Messages::post(size_t i) {
  const Msg& m = msgs_[i];
  if (m.send) SPC_MPI(MPI_Isend(m.buf, m.bytes, MPI_BYTE, m.peer, m.tag, comm_, &reqs_[i]));
  else SPC_MPI(MPI_Irecv(m.buf, m.bytes, MPI_BYTE, m.peer, m.tag, comm_, &reqs_[i]));
}

void Messages::start() {
  if (msgs_.empty()) return;  // Open MPI rejects MPI_Startall of 0 requests
  if (persistent_) SPC_MPI(MPI_Startall(static_cast<int>(reqs_.size()), reqs_.data()));
  else
    for (size_t i = 0; i < msgs_.size(); ++i) post(i);
  charge(msgs_.size());
}

void Messages::start(size_t i) {
  if (persistent_) SPC_MPI(MPI_Start(&reqs_.at(i)));
  else post(i);
  charge(1);
}

bool Messages::start_relocated(const Relocation& send, const Relocation& recv) {
  if (persistent_) return false;
  const auto moved = [](const Msg& m, const Relocation& r) {
    return r.to && m.buf >= r.from && m.buf < r.from + r.bytes ? const_cast<char*>(r.to) + (m.buf - r.from) : m.buf;
  };
  for (size_t i = 0; i < msgs_.size(); ++i) {
    const Msg& m = msgs_[i];
    if (m.send) SPC_MPI(MPI_Isend(moved(m, send), m.bytes, MPI_BYTE, m.peer, m.tag, comm_, &reqs_[i]));
    else SPC_MPI(MPI_Irecv(moved(m, recv), m.bytes, MPI_BYTE, m.peer, m.tag, comm_, &reqs_[i]));
  }
  charge(msgs_.size());
  return true;
}

void Messages::wait() {
  wait_all(reqs_);
}

bool Messages::test() {
  if (reqs_.empty()) return true;
  int flag = 0;
  SPC_MPI(MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag, MPI_STATUSES_IGNORE));
  return flag != 0;
}

void Messages::free() noexcept {
  if (persistent_ && !mpi_finalized())
    for (auto& r : reqs_)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  reqs_.clear();
}

}  // namespace sparsecomm

#include "sparsecomm/core/stats.hpp"

#include "sparsecomm/core/error.hpp"

namespace sparsecomm {

CommCounters& CommCounters::operator+=(const CommCounters& o) {
  sent_intra += o.sent_intra;
  sent_inter += o.sent_inter;
  recv_intra += o.recv_intra;
  recv_inter += o.recv_inter;
  return *this;
}

void Stats::record_send(const std::string& step, bool intra, int64_t bytes) {
  (intra ? total_.sent_intra : total_.sent_inter).add(bytes);
  auto& s = steps_[step];
  (intra ? s.sent_intra : s.sent_inter).add(bytes);
}

void Stats::record_recv(const std::string& step, bool intra, int64_t bytes) {
  (intra ? total_.recv_intra : total_.recv_inter).add(bytes);
  auto& s = steps_[step];
  (intra ? s.recv_intra : s.recv_inter).add(bytes);
}

void Stats::merge(const Stats& o) {
  total_ += o.total_;
  for (const auto& [k, v] : o.steps_) steps_[k] += v;
  for (const auto& [k, v] : o.timers_) timers_[k] += v;
}

void Stats::clear() {
  total_ = {};
  steps_.clear();
  timers_.clear();
}

double Stats::time(const std::string& phase) const {
  auto it = timers_.find(phase);
  return it == timers_.end() ? 0.0 : it->second;
}

const char* exec_phase_name(ExecPhase p) {
  static constexpr const char* names[kExecPhases] = {"pack", "start", "wait", "unpack", "local", "ghost"};
  return names[static_cast<size_t>(p)];
}

Stats ExecTimers::stats() const {
  Stats s;
  for (size_t i = 0; i < kExecPhases; ++i)
    if (slots_[i].calls > 0) s.add_time(exec_phase_name(static_cast<ExecPhase>(i)), slots_[i].seconds);
  return s;
}

std::vector<Reduced> reduce_all(MPI_Comm comm, const std::vector<double>& local) {
  const size_t n = local.size();
  std::vector<double> mx(n), sm(n), mn(n);
  SPC_MPI(MPI_Allreduce(local.data(), mx.data(), static_cast<int>(n), MPI_DOUBLE, MPI_MAX, comm));
  SPC_MPI(MPI_Allreduce(local.data(), sm.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm));
  SPC_MPI(MPI_Allreduce(local.data(), mn.data(), static_cast<int>(n), MPI_DOUBLE, MPI_MIN, comm));
  std::vector<Reduced> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = {mx[i], sm[i], mn[i]};
  return out;
}

}  // namespace sparsecomm

// The one-copy path of the shm halo backend (shm_one_copy.hpp: what and why).
#ifndef SPARSECOMM_SMPI
#include "comm/shm_one_copy.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include <sys/uio.h>  // iovec (POSIX); process_vm_readv (Linux)

namespace sparsecomm::detail {

namespace {
constexpr int kTag = 300, kTagBack = 301;  // the plan's communicator: writer -> reader, back
// Writer -> reader: its process id, the address and value of a probe word it keeps until
// the agreement, its run count (kMaxRuns + 1: too many), its runs (at, idx, len).
constexpr size_t kHead = 4;
constexpr size_t kWords = kHead + 3 * OneCopy::kMaxRuns;

std::atomic<int> injected_failures{0};  // fail_one_copy_reads()

// Reads `bytes` at `remote` (iovecs) of process `pid` into `local`; the count read, or -1.
int64_t cross_read(int pid, const std::vector<iovec>& local, const std::vector<iovec>& remote) {
#ifdef __linux__
  const ssize_t n = process_vm_readv(pid, local.data(), local.size(), remote.data(), remote.size(), 0);
  return static_cast<int64_t>(n);
#else
  (void)pid, (void)local, (void)remote;
  errno = ENOSYS;
  return -1;
#endif
}
}  // namespace

std::vector<Run> runs_of(const int32_t* idx, int64_t n, size_t limit) {
  std::vector<Run> out;
  for (int64_t k = 0; k < n; ++k) {
    if (!out.empty() && idx[k] == out.back().idx + out.back().len) {
      ++out.back().len;
      continue;
    }
    if (out.size() > limit) break;
    out.push_back({k, idx[k], 1});
  }
  return out;
}

void OneCopy::setup(MPI_Comm comm, MPI_Comm node, bool wanted, int64_t min_bytes, const std::vector<Side>& readers,
                    const std::vector<Side>& writers) {
  if (!wanted) return;  // (the same on every rank: make_plan checked the options)
  const int64_t pid = static_cast<int64_t>(getpid());
  std::vector<int64_t> out(kWords * readers.size()), in(kWords * writers.size()), mine(writers.size()),
      theirs(readers.size());
  int64_t probe = pid ^ 0x5350435f4f4e4543;  // read by my readers before the agreement below
  std::vector<MPI_Request> reqs;
  for (size_t k = 0; k < writers.size(); ++k) {
    reqs.emplace_back();
    SPC_MPI(MPI_Irecv(&in[kWords * k], kWords, MPI_INT64_T, writers[k].peer, kTag, comm, &reqs.back()));
    mine[k] = static_cast<int64_t>(writers[k].runs.size());
    reqs.emplace_back();
    SPC_MPI(MPI_Isend(&mine[k], 1, MPI_INT64_T, writers[k].peer, kTagBack, comm, &reqs.back()));
  }
  for (size_t k = 0; k < readers.size(); ++k) {
    int64_t* m = &out[kWords * k];
    const auto& runs = readers[k].runs;
    m[0] = pid, m[1] = static_cast<int64_t>(reinterpret_cast<intptr_t>(&probe)), m[2] = probe;
    m[3] = static_cast<int64_t>(runs.size());
    for (size_t j = 0; j < runs.size() && j < kMaxRuns; ++j)
      m[kHead + 3 * j] = runs[j].at, m[kHead + 3 * j + 1] = runs[j].idx, m[kHead + 3 * j + 2] = runs[j].len;
    reqs.emplace_back();
    SPC_MPI(MPI_Isend(m, kWords, MPI_INT64_T, readers[k].peer, kTag, comm, &reqs.back()));
    reqs.emplace_back();
    SPC_MPI(MPI_Irecv(&theirs[k], 1, MPI_INT64_T, readers[k].peer, kTagBack, comm, &reqs.back()));
  }
  wait_all(reqs);
  // The probe: each writer's word, read across (the kernel's check is per pair of processes).
  int64_t failed = 0;
  for (size_t k = 0; k < writers.size(); ++k) {
    const int64_t* m = &in[kWords * k];
    int64_t got = 0;
    const std::vector<iovec> local{{&got, sizeof got}};
    const std::vector<iovec> remote{{reinterpret_cast<void*>(static_cast<intptr_t>(m[1])), sizeof got}};
    if (cross_read(static_cast<int>(m[0]), local, remote) != static_cast<int64_t>(sizeof got) || got != m[2]) failed = 1;
  }
  // Agreed over the node, after which my readers are done with `probe`.
  const bool ok = allreduce_max(node, failed) == 0;
  const auto takes = [&](const Side& s, int64_t other_runs) {
    return ok && s.bytes > 0 && s.bytes >= min_bytes && s.runs.size() <= kMaxRuns &&
           other_runs <= static_cast<int64_t>(kMaxRuns);
  };
  for (size_t k = 0; k < readers.size(); ++k) to_.push_back(takes(readers[k], theirs[k]));
  for (size_t k = 0; k < writers.size(); ++k) {
    const int64_t* m = &in[kWords * k];
    from_.push_back(takes(writers[k], m[3]));
    pid_.push_back(static_cast<int>(m[0]));
    std::vector<Run> runs;
    for (int64_t j = 0; from_.back() && j < m[3]; ++j)
      runs.push_back({m[kHead + 3 * j], m[kHead + 3 * j + 1], m[kHead + 3 * j + 2]});
    src_.push_back(std::move(runs));
  }
  any_ = segments() > 0;
}

int64_t OneCopy::segments() const {
  int64_t n = 0;
  for (char c : to_) n += c;
  for (char c : from_) n += c;
  return n;
}

int fail_one_copy_reads(int n) { return injected_failures.exchange(n); }

bool OneCopy::read(size_t k, const void* source, char* local, const std::vector<Run>* local_runs, int64_t unit) const {
  std::vector<iovec> remote, to;
  int64_t total = 0;
  for (const Run& r : src_[k]) {
    remote.push_back({const_cast<char*>(static_cast<const char*>(source)) + r.idx * unit, static_cast<size_t>(r.len * unit)});
    total += r.len * unit;
  }
  if (local_runs)
    for (const Run& r : *local_runs) to.push_back({local + r.idx * unit, static_cast<size_t>(r.len * unit)});
  else
    to.push_back({local, static_cast<size_t>(total)});
  int left = injected_failures.load(std::memory_order_relaxed);
  while (left > 0 && !injected_failures.compare_exchange_weak(left, left - 1)) {
  }
  if (left > 0) return false;
  return cross_read(pid_[k], to, remote) == total;
}

}  // namespace sparsecomm::detail
#endif  // SPARSECOMM_SMPI

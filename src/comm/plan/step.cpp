// One step of a multi-step plan, its transfers through the node's shared-memory window or
// as messages (step.hpp).
#include "comm/plan/step.hpp"

#include <cstring>
#include <map>
#include <stdexcept>

#include "sparsecomm/core/error.hpp"
#include "core/spin_wait.hpp"

#ifndef SPARSECOMM_SMPI
#include "comm/shm_channel.hpp"
#endif

namespace sparsecomm::detail {

#ifdef SPARSECOMM_SMPI
class ShmWindow {};  // SimGrid's SMPI has no shared-memory windows: never made
#endif

StepWindow::StepWindow() = default;
StepWindow::~StepWindow() = default;

bool StepWindow::connect(MPI_Comm comm, MPI_Comm parent, const BackendOptions& opts, bool persistent,
                         std::initializer_list<std::pair<Step*, const char*>> steps, const Count& count) {
  bool ok = false;
#ifndef SPARSECOMM_SMPI
  if (window_wanted(opts)) {
    win_ = std::make_unique<ShmWindow>(comm, parent);
    for (const auto& [s, name] : steps) s->plan(win_.get());
    ok = win_->try_connect();
    if (!ok) win_.reset();
  }
#else
  (void)parent, (void)opts;
#endif
  for (const auto& [s, name] : steps) {
    s->init(comm, persistent, ok);
    s->each([&, n = name](bool send, int peer, int64_t bytes, bool w) { count(n, send, peer, bytes, w); });
  }
  return ok;
}

int64_t Step::add(std::vector<Transfer>& to, int peer, const Pieces& pieces) {
  for (const Transfer& t : to)
    if (t.peer == peer) throw std::logic_error("plan step: two transfers with one peer in one direction");
  Transfer t;
  t.peer = peer;
  for (const auto& [p, bytes] : pieces) {
    if (bytes == 0) continue;
    if (!t.runs.empty() && t.runs.back().at + t.runs.back().bytes == p) t.runs.back().bytes += bytes;
    else t.runs.push_back({p, bytes});
    t.bytes += bytes;
  }
  to.push_back(std::move(t));
  return to.back().bytes;
}

namespace {
Step::Pieces elements(const std::vector<char*>& at, int64_t eb) {
  Step::Pieces p(at.size());
  for (size_t k = 0; k < at.size(); ++k) p[k] = {at[k], eb};
  return p;
}
}  // namespace

int64_t Step::add_send(int peer, const std::vector<const char*>& src) {
  Pieces p(src.size());
  for (size_t k = 0; k < src.size(); ++k) p[k] = {const_cast<char*>(src[k]), eb_};  // only read
  return add(sends_, peer, p);
}
int64_t Step::add_send(int peer, const char* block, int64_t n) {
  return add(sends_, peer, {{const_cast<char*>(block), n * eb_}});  // only read
}
int64_t Step::add_recv(int peer, const std::vector<char*>& dst) { return add(recvs_, peer, elements(dst, eb_)); }
int64_t Step::add_recv(int peer, char* block, int64_t n) { return add(recvs_, peer, {{block, n * eb_}}); }

void Step::plan(ShmWindow* win) {
#ifndef SPARSECOMM_SMPI
  if (!win) return;
  std::vector<int> readers, writers;
  std::vector<int64_t> offsets;
  int64_t area = 0;
  // Window sends of the same pieces (a block several readers need) share one segment: the
  // writer gathers it once, each reader copies it out.
  std::map<std::vector<std::pair<char*, int64_t>>, int64_t> segment;
  for (Transfer& t : sends_)
    if (win->node_rank(t.peer) >= 0) {
      t.window = true;
      std::vector<std::pair<char*, int64_t>> key;
      for (const Run& r : t.runs) key.emplace_back(r.at, r.bytes);
      auto [it, fresh] = segment.emplace(std::move(key), area);
      t.offset = it->second;
      t.shared = !fresh;
      readers.push_back(t.peer);
      offsets.push_back(t.offset);
      if (fresh) area += t.bytes;
    }
  for (Transfer& t : recvs_)
    if (win->node_rank(t.peer) >= 0) {
      t.window = true;
      writers.push_back(t.peer);
    }
  lane_ = &win->add_lane();
  lane_->declare(readers, offsets, area, writers);
#else
  (void)win;
#endif
}

void Step::init(MPI_Comm comm, bool persistent, bool windows) {
  if (!windows) {
    lane_ = nullptr;
    for (Transfer& t : sends_) t.window = false;
    for (Transfer& t : recvs_) t.window = false;
  }
  for (size_t i = 0; i < sends_.size(); ++i) {
    Transfer& t = sends_[i];
    if (t.window) {
      win_sends_.push_back(i);
      continue;
    }
    msg_sends_.push_back(i);
    const char* buf = t.runs.empty() ? nullptr : t.runs[0].at;
    if (t.runs.size() > 1) {
      t.staging.assign(static_cast<size_t>(t.bytes), 0);
      buf = t.staging.data();
    }
    msg_send_.add(true, buf, t.bytes, t.peer, tag_);
  }
  for (size_t i = 0; i < recvs_.size(); ++i) {
    Transfer& t = recvs_[i];
    if (t.window) {
      win_recvs_.push_back(i);
      continue;
    }
    char* buf = t.runs.empty() ? nullptr : t.runs[0].at;
    if (t.runs.size() > 1) {
      t.staging.assign(static_cast<size_t>(t.bytes), 0);
      buf = t.staging.data();
      staged_recvs_.push_back(i);
    }
    msg_recv_.add(false, buf, t.bytes, t.peer, tag_);
  }
  msg_send_.init(comm, persistent);
  msg_recv_.init(comm, persistent);
}

void Step::progress() {
  msg_recv_.test();
  msg_send_.test();
  mpi_progress();  // every pending request, also the other steps' (core/spin_wait.hpp)
}

void Step::begin() {
  ++epoch_;
  msg_recv_.start();
  read_.assign(win_recvs_.size(), 0);
  scattered_ = false;
}

namespace {
// Copies a transfer's runs into `out` one after the other.
template <class Runs>
void gather(const Runs& runs, char* out) {
  for (const auto& r : runs) {
    if (r.bytes > 0) std::memcpy(out, r.at, static_cast<size_t>(r.bytes));  // (an empty run's buffer may be null)
    out += r.bytes;
  }
}
template <class Runs>
void scatter(const Runs& runs, const char* in) {
  for (const auto& r : runs) {
    if (r.bytes > 0) std::memcpy(r.at, in, static_cast<size_t>(r.bytes));
    in += r.bytes;
  }
}
}  // namespace

void Step::send() {
#ifndef SPARSECOMM_SMPI
  if (!win_sends_.empty()) {
    char* area = lane_->begin_write(epoch_, [&] { progress(); });
    for (size_t i : win_sends_)
      if (!sends_[i].shared) gather(sends_[i].runs, area + sends_[i].offset);
    lane_->publish(epoch_);
  }
#endif
  for (size_t m = 0; m < msg_sends_.size(); ++m) {
    Transfer& t = sends_[msg_sends_[m]];
    if (!t.staging.empty()) gather(t.runs, t.staging.data());
    msg_send_.start(m);
  }
}

void Step::wait_recv() {
#ifndef SPARSECOMM_SMPI
  for (size_t k = 0; k < win_recvs_.size(); ++k)  // writer k of the lane
    if (!read_[k]) {
      lane_->wait_ready(k, epoch_, [&] { progress(); });
      read(k);
    }
#endif
  msg_recv_.wait();
  unstage();
}

bool Step::test_recv() {
  bool all = true;
#ifndef SPARSECOMM_SMPI
  for (size_t k = 0; k < win_recvs_.size(); ++k)
    if (!read_[k]) {
      if (lane_->ready(k, epoch_)) read(k);
      else all = false;
    }
#endif
  if (!msg_recv_.test()) return false;
  unstage();
  return all;
}

void Step::read(size_t k) {
#ifndef SPARSECOMM_SMPI
  scatter(recvs_[win_recvs_[k]].runs, lane_->data(k, epoch_));
  lane_->done(k, epoch_);
  read_[k] = 1;
#else
  (void)k;
#endif
}

void Step::unstage() {
  if (scattered_) return;
  for (size_t i : staged_recvs_) scatter(recvs_[i].runs, recvs_[i].staging.data());
  scattered_ = true;
}

}  // namespace sparsecomm::detail

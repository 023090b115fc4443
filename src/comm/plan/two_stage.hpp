#pragma once
// A two-stage schedule (message combining: stage-1 blocks gathered by a group member, then
// forwarded in stage 2) run as phases, so that a non-blocking test() can return between
// them and resume: phase 0 waits for the stage-1 receives, then runs `between` (copies,
// start of stage 2); phase 1 waits for the final receives, then runs `after` (scatter);
// then the sends complete. wait() is the same with block = true.
#include <initializer_list>

#include "sparsecomm/comm/messages.hpp"

namespace sparsecomm::detail {

class TwoStagePhases {
 public:
  void reset() { phase_ = 0; }
  template <class Between, class After>
  bool advance(bool block, Messages& first, Between between, Messages& second, After after,
               std::initializer_list<Messages*> sends) {
    const auto done = [block](Messages& m) {
      if (block) m.wait();
      return block || m.test();
    };
    if (phase_ == 0) {
      if (!done(first)) return false;
      between();
      phase_ = 1;
    }
    if (phase_ == 1) {
      if (!done(second)) return false;
      after();
      phase_ = 2;
    }
    for (Messages* m : sends)
      if (!done(*m)) return false;
    return true;
  }

 private:
  int phase_ = 0;
};

}  // namespace sparsecomm::detail

#pragma once
// A setting's process-wide default (internal): what a call uses where its caller gave no
// value of its own. The library's constant (T's default value) until an entry point sets
// another, the one it read from the environment (src/interop/environment.cpp: the only
// reader of the library's variables, so that core/ and comm/ take every setting as a
// value). One per settings type; read and set under a lock, by copy: creating calls on
// different communicators may run on different threads.
#include <mutex>
#include <utility>

namespace sparsecomm::detail {

template <class T>
class ProcessDefault {
 public:
  static ProcessDefault& instance() {
    static ProcessDefault d;
    return d;
  }
  T get() const {
    std::lock_guard<std::mutex> g(lock_);
    return value_;
  }
  void set(T v) {
    std::lock_guard<std::mutex> g(lock_);
    value_ = std::move(v);
  }

 private:
  ProcessDefault() = default;
  mutable std::mutex lock_;
  T value_{};
};

template <class T>
T process_default() {
  return ProcessDefault<T>::instance().get();
}
template <class T>
void set_process_default(T v) {
  ProcessDefault<T>::instance().set(std::move(v));
}

}  // namespace sparsecomm::detail

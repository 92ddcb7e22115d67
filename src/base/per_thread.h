// SPDX-License-Identifier: Apache-2.0
// One object of type T per thread, reached through an initial-exec TLS pointer.
//
// A thread_local object with a constructor or destructor, in a shared library, costs a call to
// __tls_get_addr and a guard check on every access; the small-message paths touch several such
// objects per call (an 8 B exchange made ~20 of those calls, ~15% of its instructions). Here
// the hot path is one load from the thread pointer; the object itself is made on first use and
// freed at thread exit. The static TLS this takes is one pointer per T (initial-exec TLS of a
// library that Python may dlopen must stay small: glibc keeps a few hundred bytes for it).
#pragma once

#include <memory>

namespace loom {

template <class T>
class PerThread {
 public:
  static T& get() {
    if (T* object = cached_; object != nullptr) [[likely]] {
      return *object;
    }
    return create();
  }

 private:
  struct Owner {
    std::unique_ptr<T> object;
    ~Owner() { cached_ = nullptr; }
  };

  [[gnu::noinline]] static T& create() {
    thread_local Owner owner;
    if (!owner.object) owner.object = std::make_unique<T>();
    cached_ = owner.object.get();
    return *cached_;
  }

  [[gnu::tls_model("initial-exec")]] static thread_local T* cached_;
};

template <class T>
[[gnu::tls_model("initial-exec")]] thread_local T* PerThread<T>::cached_ = nullptr;

}  // namespace loom

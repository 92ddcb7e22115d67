// SPDX-License-Identifier: Apache-2.0
#include "base/fork_guard.h"

#include <pthread.h>

#include <vector>

#include "base/error.h"

namespace loom {
namespace {

struct GuardedMutexes {
  std::mutex listMutex;  // held from before fork to after it too: no guard is added meanwhile
  std::vector<std::mutex*> mutexes;
};

// Never destroyed: a fork may come during exit, after static destruction.
GuardedMutexes& guarded() {
  static auto* const list = new GuardedMutexes();
  return *list;
}

void lockBeforeFork() {
  GuardedMutexes& list = guarded();
  list.listMutex.lock();
  for (std::mutex* mutex : list.mutexes) mutex->lock();
}

// In the parent and in the child alike: the child's only thread is the one that locked them.
void unlockAfterFork() {
  GuardedMutexes& list = guarded();
  for (auto it = list.mutexes.rbegin(); it != list.mutexes.rend(); ++it) (*it)->unlock();
  list.listMutex.unlock();
}

}  // namespace

void guardAcrossFork(std::mutex& mutex) {
  static const int registered = pthread_atfork(&lockBeforeFork, &unlockAfterFork, &unlockAfterFork);
  if (registered != 0) throwSystem("pthread_atfork for the process-wide tables", registered);
  std::lock_guard lock(guarded().listMutex);
  guarded().mutexes.push_back(&mutex);
}

}  // namespace loom

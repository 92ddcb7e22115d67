// SPDX-License-Identifier: Apache-2.0
// Process-wide locks that a fork must not leave held in the child. fork copies only the thread
// that calls it: a lock another thread holds at that instant stays held in the child for good,
// and the child's next use of what it guards hangs. A guarded mutex is taken by the forking
// thread just before fork and released on both sides just after (pthread_atfork), so the child
// also finds what it guards whole, never half-updated.
#pragma once

#include <mutex>

namespace loom {

// Guards `mutex` across every later fork. It must live until the process ends (the tables that
// use this are never destroyed), and no code may hold it while it takes another guarded mutex
// or forks: the guarded mutexes are taken one after another, in the order of these calls.
void guardAcrossFork(std::mutex& mutex);

}  // namespace loom

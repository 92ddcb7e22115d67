// SPDX-License-Identifier: Apache-2.0
#include "transport/shm/doorbell.h"

#include <pthread.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

namespace loom::transport {

namespace doorbell_detail {
std::atomic<bool> ringsWithoutFence{false};
std::atomic<bool> sleepersBarrier{false};

void sleeperBarrier() {
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0) return;
  // Refused although the kernel offered it (a seccomp filter?): fall back to fencing both sides.
  // Rings already in flight without a fence may be missed once; the sleep's timeout bounds that.
  ringsWithoutFence.store(false);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
}  // namespace doorbell_detail

namespace {
// The process that registered: a forked child must register anew. Two threads that both
// register do no harm (registration is idempotent), so no lock a fork could inherit held.
std::atomic<pid_t> registeredPid{0};

// A forked child starts with its parent's flags but not necessarily its registration: it
// fences until its own shm transport registers it.
void afterForkInChild() {
  doorbell_detail::ringsWithoutFence.store(false);
  registeredPid.store(0);
}
}  // namespace

void enableAsymmetricDoorbells() {
  if (registeredPid.load() == getpid()) return;
  static const bool atforkInstalled = pthread_atfork(nullptr, nullptr, afterForkInChild) == 0;
  (void)atforkInstalled;
  {
    const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (commands < 0 || (commands & MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0) {
      LOOM_INFO(SHM, "shm doorbells: no membarrier(GLOBAL_EXPEDITED) here, rings fence");
      return;
    }
    // Sleepers barrier whenever the kernel offers it: a ringer in another process may skip its
    // fence even if this one cannot register.
    doorbell_detail::sleepersBarrier.store(true);
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) != 0) {
      LOOM_INFO(SHM, "shm doorbells: membarrier registration refused, rings fence");
      return;
    }
    doorbell_detail::ringsWithoutFence.store(true);
  }
  registeredPid.store(getpid());
}

namespace {
// Shared (not FUTEX_PRIVATE) because the word lives in memory mapped by several processes.
long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}
}  // namespace

void Doorbell::wake() {
  word_->sequence.fetch_add(1, std::memory_order_seq_cst);
  futex(&word_->sequence, FUTEX_WAKE, INT32_MAX, nullptr);
}

void Doorbell::wait(uint32_t seen, int timeoutUs) {
  timespec timeout{timeoutUs / 1000000, (timeoutUs % 1000000) * 1000L};
  futex(&word_->sequence, FUTEX_WAIT, seen, &timeout);  // EAGAIN/ETIMEDOUT/EINTR all fine
}

}  // namespace loom::transport
